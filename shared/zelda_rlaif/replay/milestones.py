"""Where in a segment each quest milestone of its game profile holds, read from the state log.

The profiles live in ``zelda_rlaif.game`` and are plain data: they import in the slim HUD image too, which has
no Gymnasium or emulator. Should a profile still not import, the replay says so instead of showing milestones.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from zelda_rlaif.replay.model import MilestoneMark, ReplayStep
from zelda_rlaif.segments import StepRecord

if TYPE_CHECKING:
    from zelda_rlaif.game.profiles.base import GameProfile, Milestone


def load_profile(profile: str) -> GameProfile | str:
    """The named game profile, or a sentence saying why its milestones cannot be shown."""
    try:
        from zelda_rlaif.game.profiles import get_profile
    except ImportError as exc:  # the HUD image leaves the game layer's dependencies out
        return f"milestones are not shown: the game profiles need {exc.name or 'the game layer'}, not installed here"
    try:
        return get_profile(profile)
    except ValueError as exc:
        return f"milestones are not shown: {exc}"


def profile_milestones(profile: str) -> tuple[Milestone, ...] | str:
    """The profile's milestones in quest order, or a sentence saying why they cannot be shown."""
    found = load_profile(profile)
    return found if isinstance(found, str) else found.milestones


def milestone_marks(milestones: Sequence[Milestone], steps: Sequence[ReplayStep | StepRecord]) -> list[MilestoneMark]:
    """Each milestone's first step in the segment (replay steps or the state log's records). A milestone that
    reads a RAM field the state log leaves out (a profile-only field) is marked unreadable rather than not
    reached."""
    marks = []
    states = [(s.step, s.state.model_dump()) for s in steps]
    for milestone in milestones:
        first: int | None = None
        readable = True
        for step, state in states:
            try:
                held = milestone.reached(state)
            except KeyError:
                readable = False
                break
            if held:
                first = step
                break
        marks.append(MilestoneMark(
            name=milestone.name, description=milestone.description, first_step=first,
            from_start=first is not None and first == states[0][0], readable=readable))
    return marks


def reached_in(marks: Sequence[MilestoneMark]) -> list[str]:
    """Milestones the segment itself reached (first held after its first step), in quest order: what the segment's
    play achieved, not what an earlier segment of the episode had already done."""
    return [m.name for m in marks if m.first_step is not None and not m.from_start]


def reached_by(marks: Sequence[MilestoneMark], step: int) -> list[str]:
    """Milestones that held at some step up to ``step`` of the segment, in quest order."""
    return [m.name for m in marks if m.first_step is not None and m.first_step <= step]
