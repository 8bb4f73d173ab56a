"""A compact, factual summary of a segment's state log: what the judges (LLM and rules) look at.

A 300-step log is ~400 KB of JSON; a judge needs a few hundred tokens of facts: the rooms visited in order,
health/rupee/key/item changes with their steps, text boxes, menu presses, stuck steps and, for the puzzle
judge, every puzzle/door/treasure flag transition. Everything here is computed from the records as written;
nothing is estimated.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from zelda_rlaif.replay.milestones import milestone_marks, reached_in
from zelda_rlaif.segments import GameState, StepRecord

if TYPE_CHECKING:
    from zelda_rlaif.game.profiles.base import Milestone
    from zelda_rlaif.game.profiles.walkthrough import Walkthrough

# Action ids of the environment (0 NOP, 1 up, 2 down, 3 left, 4 right, 5 A, 6 B, 7 START).
MOVE_ACTIONS = frozenset({1, 2, 3, 4})
START_ACTION = 7
TILE_PIXELS = 16

COUNTERS: tuple[str, ...] = ("health", "max_health", "rupees", "keys", "sword_level", "essences", "deaths")
FLAGS: tuple[str, ...] = ("puzzle_flags", "door_flags", "treasure_flags")


@dataclass(frozen=True)
class RoomEntry:
    step: int
    group: int
    room: int

    @property
    def label(self) -> str:
        return f"{self.group}:{self.room:02x}"


@dataclass(frozen=True)
class Change:
    """A counter (health, rupees, ...) changed between two consecutive steps."""

    step: int
    what: str
    before: int
    after: int


@dataclass(frozen=True)
class FlagChange:
    step: int
    flag: str
    before: int
    after: int

    @property
    def bits_set(self) -> int:
        return _popcount(self.after & ~self.before)

    @property
    def bits_cleared(self) -> int:
        return _popcount(self.before & ~self.after)


@dataclass(frozen=True)
class ObjectiveProgress:
    """The walkthrough's next objective at the segment's first step, and how far the segment got towards it."""

    milestone: str
    location: str  # group:room, as in the room path
    distance_first: float  # rooms between the player and the objective at the first step (walkthrough.distance)
    distance_last: float  # the same at the last step
    reached: bool  # the segment reached the objective's milestone

    @property
    def rooms_closer(self) -> float:
        return self.distance_first - self.distance_last


@dataclass(frozen=True)
class SegmentSummary:
    steps: int
    step_start: int
    step_end: int
    room_path: tuple[RoomEntry, ...]
    distinct_rooms: int
    episode_new_rooms: int | None  # rooms new to the episode, from the game's own count; None if not reported
    tiles_visited: int
    first: GameState
    last: GameState
    health_min: int
    damage_taken: int
    health_healed: int
    changes: tuple[Change, ...]
    flag_changes: tuple[FlagChange, ...]
    text_boxes: tuple[int, ...]
    text_steps: int
    start_presses: int
    menu_steps: int
    moving_steps: int
    stuck_steps: int
    longest_stuck: int
    enemies_max: int
    actions: dict[str, int]
    # The game profile's quest milestones that the segment reached (not yet held at its first step), in quest order.
    milestones_reached: tuple[str, ...] = ()
    # Only for games with a walkthrough, and only while the walkthrough leads somewhere from the first room.
    objective: ObjectiveProgress | None = None
    # How far along the walkthrough the segment's last state stands (Walkthrough.stage, 0-1): where it got to;
    # only for games with a walkthrough.
    quest_stage: float | None = None

    @property
    def new_rooms(self) -> int:
        """Rooms the segment added: the game's own count when reported, else distinct rooms beyond the first."""
        if self.episode_new_rooms is not None:
            return self.episode_new_rooms
        return max(0, self.distinct_rooms - 1)

    def gained(self, counter: str) -> int:
        return max(0, int(getattr(self.last, counter)) - int(getattr(self.first, counter)))

    def bits_set(self, flag: str) -> int:
        return _popcount(int(getattr(self.last, flag)) & ~int(getattr(self.first, flag)))


def _popcount(value: int) -> int:
    return bin(value & ((1 << 256) - 1)).count("1")


def summarize(records: Sequence[StepRecord], milestones: Sequence[Milestone] = (),
              walkthrough: Walkthrough | None = None) -> SegmentSummary:
    """``milestones``: the segment's game profile's quest milestones (none: ``milestones_reached`` stays empty);
    ``walkthrough``: its way to them (none: no ``objective``)."""
    if not records:
        raise ValueError("a segment without steps cannot be summarised")
    first, last = records[0].state, records[-1].state
    path: list[RoomEntry] = [RoomEntry(records[0].step, first.group, first.room)]
    tiles: set[tuple[int, int, int, int]] = set()
    changes: list[Change] = []
    flag_changes: list[FlagChange] = []
    text_boxes: list[int] = []
    damage = healed = text_steps = start_presses = menu_steps = moving = stuck = longest = run = 0
    health_min = first.health
    enemies_max = 0
    previous: GameState | None = None
    for record in records:
        state = record.state
        tiles.add((state.group, state.room, state.x // TILE_PIXELS, state.y // TILE_PIXELS))
        health_min = min(health_min, state.health)
        enemies_max = max(enemies_max, state.enemies)
        text_steps += state.text_active
        menu_steps += state.menu_open
        start_presses += record.action == START_ACTION
        if previous is not None:
            if state.location != previous.location:
                path.append(RoomEntry(record.step, state.group, state.room))
            for counter in COUNTERS:
                before, after = int(getattr(previous, counter)), int(getattr(state, counter))
                if before != after:
                    changes.append(Change(record.step, counter, before, after))
            for flag in FLAGS:
                before, after = int(getattr(previous, flag)), int(getattr(state, flag))
                if before != after:
                    flag_changes.append(FlagChange(record.step, flag, before, after))
            damage += max(0, previous.health - state.health)
            healed += max(0, state.health - previous.health)
            if state.text_active and not previous.text_active:
                text_boxes.append(record.step)
        elif state.text_active:
            text_boxes.append(record.step)
        if record.action in MOVE_ACTIONS and not state.text_active and not state.menu_open:
            still = previous is not None and (state.location, state.x, state.y) == (
                previous.location, previous.x, previous.y)
            if still:
                stuck += 1
                run += 1
                longest = max(longest, run)
            else:
                moving += 1
                run = 0
        else:
            run = 0
        previous = state
    reported = first.rooms_visited or last.rooms_visited
    reached = tuple(reached_in(milestone_marks(milestones, records)))
    return SegmentSummary(
        steps=len(records),
        step_start=records[0].step,
        step_end=records[-1].step + 1,
        room_path=tuple(path),
        distinct_rooms=len({(e.group, e.room) for e in path}),
        episode_new_rooms=max(0, last.rooms_visited - first.rooms_visited) if reported else None,
        tiles_visited=len(tiles),
        first=first,
        last=last,
        health_min=health_min,
        damage_taken=damage,
        health_healed=healed,
        changes=tuple(changes),
        flag_changes=tuple(flag_changes),
        text_boxes=tuple(text_boxes),
        text_steps=text_steps,
        start_presses=start_presses,
        menu_steps=menu_steps,
        moving_steps=moving,
        stuck_steps=stuck,
        longest_stuck=longest,
        enemies_max=enemies_max,
        actions=dict(Counter(r.action_name for r in records)),
        milestones_reached=reached,
        objective=objective_progress(walkthrough, milestones, first, last, reached),
        quest_stage=quest_stage(walkthrough, milestones, records),
    )


def quest_stage(walkthrough: Walkthrough | None, milestones: Sequence[Milestone],
                records: Sequence[StepRecord]) -> float | None:
    """``walkthrough.stage`` of the last state of ``records`` that has one: where the segment got to (a mean
    over its states ranked 300 steps in a dead end after a milestone above the segment that reached the milestone
    and walked on towards the next; docs/results.md, section 22). None without a walkthrough, or when no state has
    a way to its next objective."""
    if walkthrough is None:
        return None
    tests = {m.name: m.reached for m in milestones}
    for record in reversed(records):
        try:
            stage = walkthrough.stage(record.state.model_dump(), tests)
        except KeyError:  # a milestone that reads a RAM field the state log leaves out
            return None
        if stage is not None:
            return round(stage, 4)
    return None


def objective_progress(walkthrough: Walkthrough | None, milestones: Sequence[Milestone], first: GameState,
                       last: GameState, reached: Sequence[str]) -> ObjectiveProgress | None:
    """The walkthrough's next objective at ``first`` and how far a segment from ``first`` to ``last`` got towards it
    (``reached``: the milestones the segment reached); None without a walkthrough or a way there."""
    if walkthrough is None:
        return None
    first_state, last_state = first.model_dump(), last.model_dump()
    try:
        objective = walkthrough.next_objective(first_state, {m.name: m.reached for m in milestones})
    except KeyError:  # a milestone that reads a RAM field the state log leaves out: no way to tell what is next
        return None
    if objective is None:
        return None
    distance_first = walkthrough.distance(first_state, objective)
    distance_last = walkthrough.distance(last_state, objective)
    if distance_first is None or distance_last is None:
        return None
    return ObjectiveProgress(milestone=objective.milestone, location=f"{objective.group}:{objective.room:02x}",
                             distance_first=round(distance_first, 3), distance_last=round(distance_last, 3),
                             reached=objective.milestone in reached)
