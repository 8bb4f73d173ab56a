"""``rules-v5`` formulas: each judge kind's scores computed from the state log alone, with no LLM.

All scores are clipped to [0, 1]; ``min(1, x / k)`` reads "full marks at k". With ``S`` the segment summary:

    state   progress   = quest_stage - 0.25 * deaths - 0.10 * min(1, damage_taken / max_health)
                         for a game with a walkthrough; for one without (Oracle until its walkthrough is written):
                       = 0.15 * min(1, new_rooms / 4)
                       + 0.05 * min(1, rupees_gained / 20)
                       + 0.10 * min(1, keys_gained + sword_levels_gained)
                       + 0.35 * min(1, essences_gained + treasure_bits_set + milestones_reached)
                       + 0.35 * towards_objective
                       - 0.25 * deaths - 0.10 * min(1, damage_taken / max_health)
            dialog     = min(1, text_boxes_opened / 3)
            efficiency = 1 - stuck_steps / steps - menu_steps / steps - 0.02 * start_presses
    puzzle  puzzle     = min(1, (puzzle_bits_set + door_bits_set) / 3)
    vision  novelty    = 0.6 * min(1, new_rooms / 3) + 0.4 * min(1, tiles_visited / 30)

``milestones_reached`` counts the game profile's quest milestones that the segment reached (``GameProfile.
milestones``: the test world's old man, key, gate, sword, switch and treasure room), as an LLM judge that knows
the game's quest would. rules-v1 counted only items and essences, so opening the gate, pressing the switch and
reaching the treasure room were worth one new room at most: bench/diagnose_loop.py ranked the segments that
reached the treasure room at the 30th percentile of their epoch (docs/results.md, section 4).

``towards_objective`` is 1 when the segment reached the walkthrough's next objective (the first milestone of the
profile's ``walkthrough`` not held at the segment's first step), else ``min(1, rooms_closer / 2)``: full marks for
ending two rooms closer to it, nothing for ending no closer (``SegmentSummary.objective``); 0 for a game without
a walkthrough. An LLM judge that knows the game's quest knows where to go next; rules-v2 did not, and rewarded
any new room alike, so a run whose episodes found one branch of the test world's quest had no score pointing it
to the other (docs/results.md, sections 8-10). rules-v3 moves weight from rooms, rupees and items to it.

``quest_stage`` is where the segment stands on the walkthrough at its last state: the objectives done in the
walkthrough's order plus the closeness to the next one, over the number of objectives (``Walkthrough.stage``,
``SegmentSummary.quest_stage``). rules-v3 scored what a segment *gained* (milestones
reached, rooms walked towards the next objective). The reward model fits a per-state reward whose mean over a
segment's states ranks the segments, and the trainer shapes with it as a potential, so a score for gains puts
the potential's peak where gains happen: the states around the key scored high and the states after it, in
segments that walk on without reaching the gate, low (bench/diagnose_loop.py: segments that begin holding the
key ranked at the 31st percentile; docs/results.md, section 12), and leaving the key room looked like a loss.
A score for where the segment stands gives a potential that rises along the walkthrough and never falls at a
milestone: the difference between "did something happen here" and "how far along are we". rules-v4 took the
mean over the segment's states, and that ranked a segment that had opened the gate before it began and spent its
300 steps in the dead end south of it above one that opened the gate and walked towards the sword, whose first
half still stood before the gate: segments that sat in the dead end ranked at the 87th percentile of their epochs,
among those self-imitation keeps and the reward model ranks highest, and the agent learned to go there
(docs/results.md, section 22). Where the segment got to ranks them the other way.

``new_rooms`` is the game's own count of rooms new to the episode when the state reports it, else the
distinct rooms of the segment beyond the first; a "stuck step" is a movement action that left the player
exactly where it was (outside text boxes and menus). The rules judge is useful for development and as a
baseline; it cannot see frames, so its novelty is a state-log proxy. Each scorer is named by its kind's
entry in ``zelda_judge.kinds.KINDS``.
"""

from __future__ import annotations

from dataclasses import dataclass

from zelda_judge.summary import SegmentSummary

# What every rules verdict records as its model: the formulas' version.
RULES_MODEL = "rules-v5"


@dataclass(frozen=True)
class RuleVerdict:
    """One kind's scores (exactly its dimensions) and the facts they rest on."""

    scores: dict[str, float]
    rationale: str


def _clip(value: float) -> float:
    return round(min(1.0, max(0.0, value)), 6)


def _full_at(value: float, full: float) -> float:
    return min(1.0, value / full)


def towards_objective(s: SegmentSummary) -> float:
    if s.objective is None:
        return 0.0
    if s.objective.reached:
        return 1.0
    return max(0.0, _full_at(s.objective.rooms_closer, 2))


def gains(s: SegmentSummary) -> float:
    """Progress as what the segment gained, for a game without a walkthrough."""
    return (
        0.15 * _full_at(s.new_rooms, 4)
        + 0.05 * _full_at(s.gained("rupees"), 20)
        + 0.10 * _full_at(s.gained("keys") + s.gained("sword_level"), 1)
        + 0.35 * _full_at(s.gained("essences") + s.bits_set("treasure_flags") + len(s.milestones_reached), 1)
        + 0.35 * towards_objective(s)
    )


def state(s: SegmentSummary) -> RuleVerdict:
    max_health = max(1, s.last.max_health, s.first.max_health)
    standing = s.quest_stage if s.quest_stage is not None else gains(s)
    progress = standing - 0.25 * s.gained("deaths") - 0.10 * _full_at(s.damage_taken, max_health)
    scores = {
        "progress": _clip(progress),
        "dialog": _clip(_full_at(len(s.text_boxes), 3)),
        "efficiency": _clip(1.0 - s.stuck_steps / s.steps - s.menu_steps / s.steps - 0.02 * s.start_presses),
    }
    milestones = ", ".join(s.milestones_reached) or "none"
    stage = f"quest stage {s.quest_stage:.3f}, " if s.quest_stage is not None else ""
    objective = (f"next objective {s.objective.milestone} {s.objective.distance_first:g} -> "
                 f"{s.objective.distance_last:g} rooms away, " if s.objective else "")
    return RuleVerdict(scores, f"{stage}{objective}{s.new_rooms} new rooms, rupees +{s.gained('rupees')}, "
                               f"keys +{s.gained('keys')}, milestones {milestones}, deaths {s.gained('deaths')}, "
                               f"{len(s.text_boxes)} text boxes, "
                               f"{s.stuck_steps}/{s.steps} stuck steps, {s.start_presses} START presses")


def puzzle(s: SegmentSummary) -> RuleVerdict:
    scores = {"puzzle": _clip(_full_at(s.bits_set("puzzle_flags") + s.bits_set("door_flags"), 3))}
    return RuleVerdict(scores, f"puzzle bits +{s.bits_set('puzzle_flags')}, door bits +{s.bits_set('door_flags')}, "
                               f"keys {s.first.keys}->{s.last.keys}")


def vision(s: SegmentSummary) -> RuleVerdict:
    scores = {"novelty": _clip(0.6 * _full_at(s.new_rooms, 3) + 0.4 * _full_at(s.tiles_visited, 30))}
    return RuleVerdict(scores, f"{s.new_rooms} new rooms, {s.distinct_rooms} rooms and {s.tiles_visited} tiles "
                               "seen (state-log proxy)")
