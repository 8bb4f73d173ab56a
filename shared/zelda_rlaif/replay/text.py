"""The words of a replay: the panel beside each frame and the verdict cards at its end.

Kept apart from the drawing so that what a replay says can be read (and tested) as plain text;
``zelda-rlaif replay --text`` prints the cards.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from zelda_rlaif.events import JudgeKind
from zelda_rlaif.replay.milestones import reached_by
from zelda_rlaif.replay.model import KindVerdict, Replay

FACING = ("up", "right", "down", "left")


@dataclass(frozen=True)
class Card:
    """One still page at the end of the animation."""

    title: str
    lines: list[str]
    kind: JudgeKind | None = None  # the judge kind the card is about; None for the overview


def _scores(scores: Mapping[str, float]) -> str:
    return " · ".join(f"{name} {value:.2f}" for name, value in scores.items())


def running_totals(replay: Replay) -> dict[int, dict[str, float]]:
    """Reward by component summed from the segment's first step up to each step."""
    totals: dict[str, float] = {}
    by_step = {}
    for step in replay.steps:
        for name, value in step.components.items():
            totals[name] = totals.get(name, 0.0) + value
        by_step[step.step] = dict(totals)
    return by_step


def panel_lines(replay: Replay, index: int, totals: Mapping[int, Mapping[str, float]] | None = None) -> list[str]:
    """The panel of animation frame ``index``; ``totals`` from ``running_totals`` (computed once per replay)."""
    manifest = replay.manifest
    step_number = replay.timeline[index]
    lines = [
        manifest.segment_id,
        f"run {manifest.run_id} · epoch {manifest.epoch} · {manifest.profile}",
        f"step {step_number} · frame {index + 1}/{len(replay.timeline)} · steps {manifest.step_start}"
        f"-{manifest.step_end - 1}",
    ]
    step = replay.step_at(step_number)
    if step is None:
        return [*lines, "no state logged for this step"]
    so_far = (totals if totals is not None else running_totals(replay)).get(step_number, {})
    state = step.state
    lines += [
        f"action {step.action_name.upper()} · reward {step.reward:+.2f}",
        f"reward so far {sum(so_far.values()):+.2f}",
        "  " + (", ".join(f"{name} {value:+.2f}" for name, value in sorted(so_far.items()) if value) or "none yet"),
        f"room {state.group}:{state.room:#04x} ({'overworld' if state.group == 0 else f'group {state.group}'})"
        f" · x {state.x} y {state.y} · facing {FACING[state.direction % 4]}",
        f"health {state.health / 4:g}/{state.max_health / 4:g} hearts · keys {state.keys} · rupees {state.rupees}"
        f" · sword {state.sword_level}",
        f"enemies {state.enemies} · deaths {state.deaths} · essences {state.essences} · rooms seen "
        f"{state.rooms_visited}",
        f"flags puzzle {state.puzzle_flags:#04x} · door {state.door_flags:#04x} · treasure {state.treasure_flags:#04x}",
    ]
    showing = [label for label, on in (("text box open", state.text_active), ("menu open", state.menu_open)) if on]
    if showing:
        lines.append(" · ".join(showing))
    if replay.milestones:
        marks = {m.name: m for m in replay.milestones}
        reached = [f"{name} ({'from start' if marks[name].from_start else f'@{marks[name].first_step}'})"
                   for name in reached_by(replay.milestones, step_number)]
        lines.append(f"milestones {len(reached)}/{len(replay.milestones)}: " + (", ".join(reached) or "none yet"))
    return lines


def _kind_summary(verdict: KindVerdict) -> str:
    if verdict.record is None:
        return f"{verdict.kind.value}: {verdict.missing}"
    judged = verdict.record.verdict
    return (f"{verdict.kind.value}: {_scores(judged.scores)} · agreement {judged.agreement:.2f} · "
            f"{judged.votes} vote{'s' if judged.votes != 1 else ''} · {judged.backend} {judged.model}")


def _overview(replay: Replay) -> Card:
    manifest = replay.manifest
    if replay.scored is not None:
        weights = ", ".join(f"{name} {weight:g}" for name, weight in replay.scored.weights.items())
        outcome = f"combined score {replay.scored.combined:.3f} (weights {weights})"
    elif replay.unjudged is not None:
        outcome = "unjudged: " + "; ".join(
            f"the {kind} judge gave up after {r.deliveries} deliveries: {r.reason}"
            for kind, r in replay.unjudged.reasons.items())
    elif waiting := [v.kind.value for v in replay.verdicts if v.record is None]:
        outcome = "not scored yet: waiting for the " + ", ".join(waiting) + " judge" + ("s" if len(waiting) > 1 else "")
    else:
        outcome = "not scored yet: every kind has judged, the combined score is not stored yet"
    lines = [
        outcome,
        *(_kind_summary(v) for v in replay.verdicts),
        f"segment: {manifest.num_steps} steps · reward {manifest.total_reward:+.2f} · "
        f"{len(manifest.rooms_visited)} room{'s' if len(manifest.rooms_visited) != 1 else ''} · episode "
        f"{manifest.episode_id}",
        *(f"note: {note}" for note in replay.notes),
    ]
    return Card(title=f"verdicts on {manifest.segment_id}", lines=lines)


def _kind_card(verdict: KindVerdict) -> Card:
    kind = verdict.kind.value
    if verdict.record is None:
        return Card(title=f"{kind} judge", lines=[verdict.missing or "no verdict"], kind=verdict.kind)
    judged, votes = verdict.record.verdict, verdict.record.votes
    lines = [f"median of {judged.votes} vote{'s' if judged.votes != 1 else ''}: {_scores(judged.scores)} · "
             f"agreement {judged.agreement:.2f}"]
    published = next((i for i, vote in enumerate(votes) if vote.rationale == judged.rationale), None)
    for i, vote in enumerate(votes):
        seed = f" (seed {vote.seed})" if vote.seed is not None else ""
        mark = " · its rationale is the verdict's" if i == published and len(votes) > 1 else ""
        lines += [f"vote {i + 1}{seed}: {_scores(vote.scores)}{mark}", f"  {vote.rationale}"]
    return Card(title=f"{kind} judge · {judged.backend} · {judged.model}", lines=lines, kind=verdict.kind)


def cards(replay: Replay) -> list[Card]:
    """The overview of every verdict and the combined score, then one card per judge kind with each vote."""
    return [_overview(replay), *(_kind_card(v) for v in replay.verdicts)]


def replay_text(replay: Replay) -> str:
    """The cards as plain text."""
    return "\n\n".join("\n".join([card.title, *card.lines]) for card in cards(replay)) + "\n"
