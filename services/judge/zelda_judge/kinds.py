"""What each judge kind judges: the one table a kind is declared in.

Every member of ``zelda_rlaif.events.JudgeKind`` has exactly one entry in ``KINDS``: the dimensions it scores
(each a score in [0, 1], higher is better), the description of each that the LLM is given, each dimension's
default weight in the combined score, whether the kind sees frames, what its prompt adds to the facts every
kind gets, and its ``rules-v5`` scorer. The vote schemas, the rules backend, the rubric weights (and their
``ZELDA_JUDGE_RUBRIC__<DIMENSION>`` variables), the ``--kind`` choices and the ledger's "every kind has judged
the segment" all follow from this table or from ``JudgeKind``.

Adding a kind: a ``JudgeKind`` member, an entry here (with its focus in ``prompt_focus`` and its scorer in
``rule_scores``), a ``judge-<kind>`` service in docker-compose.yml (plus its name in the local LLM's
``--served-model-name`` list) and an entry under ``judges.kinds`` in the Helm values.

The combined score is the weighted mean ``sum(w_d * s_d) / sum(w_d)`` over all dimensions, in [0, 1] whatever
the weights (``zelda_judge.rubric``). By default progress carries it (1.0) and every other dimension only breaks
ties (0.01 each). The combined score ranks the segments the reward model fits its potential to and the segments
self-imitation copies, so it must follow the quest: with the design's weights (progress 0.4, dialog 0.2, puzzle
0.2, novelty 0.1, efficiency 0.1) the best-ranked segments of a run were those that pressed the test world's switch
out of the walkthrough's order or talked to the old man (puzzle and dialog at full marks), the potential pointed
there, and three seeds of five committed to that side branch (docs/results.md, section 13).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from zelda_judge import prompt_focus, rule_scores
from zelda_judge.rule_scores import RuleVerdict
from zelda_judge.summary import SegmentSummary
from zelda_rlaif.events import JudgeKind

# (summary, list items allowed at this level of detail, steps of the attached frames) -> extra prompt lines
Focus = Callable[[SegmentSummary, int, Sequence[int]], list[str]]
RuleScorer = Callable[[SegmentSummary], RuleVerdict]


@dataclass(frozen=True)
class Dimension:
    name: str
    description: str  # what the LLM is asked to score, in the system prompt and the vote schema
    weight: float  # default weight in the combined score; ZELDA_JUDGE_RUBRIC__<NAME> overrides it


@dataclass(frozen=True)
class KindSpec:
    dimensions: tuple[Dimension, ...]
    focus: Focus
    rules: RuleScorer
    sees_frames: bool = False  # key frames (ZELDA_JUDGE_KEY_FRAMES) are attached to its LLM prompts

    @property
    def dimension_names(self) -> tuple[str, ...]:
        return tuple(d.name for d in self.dimensions)


KINDS: dict[JudgeKind, KindSpec] = {
    JudgeKind.STATE: KindSpec(
        dimensions=(
            Dimension("progress", "how far along the quest the player stands during the segment: the quest "
                      "objectives done in the walkthrough's order and how close the player is to the next one (the "
                      "quest stage); without a walkthrough, new rooms, rupees, keys, items or essences gained; no "
                      "deaths", 1.0),
            Dimension("dialog", "did the player read text boxes, talk to characters or signs (1 = meaningful "
                      "dialog engagement)", 0.01),
            Dimension("efficiency", "were steps used well: moving with purpose, not stuck against walls, no menu "
                      "surfing", 0.01),
        ),
        focus=prompt_focus.nothing_more,
        rules=rule_scores.state,
    ),
    JudgeKind.PUZZLE: KindSpec(
        dimensions=(
            Dimension("puzzle", "were puzzles or locked doors solved: switches, blocks, keys used, door/puzzle "
                      "flags newly set", 0.01),
        ),
        focus=prompt_focus.flag_transitions,
        rules=rule_scores.puzzle,
    ),
    JudgeKind.VISION: KindSpec(
        dimensions=(
            Dimension("novelty", "were new areas and views explored rather than the same rooms revisited", 0.01),
        ),
        focus=prompt_focus.attached_frames,
        rules=rule_scores.vision,
        sees_frames=True,
    ),
}


def _check(table: dict[JudgeKind, KindSpec]) -> None:
    """Refuse at import a table that does not cover JudgeKind, or that gives one dimension to two kinds."""
    missing = [kind.value for kind in JudgeKind if kind not in table]
    if missing:
        raise RuntimeError(f"judge kind(s) {', '.join(missing)} have no entry in zelda_judge.kinds.KINDS: add "
                           "their dimensions, prompt focus and rules scorer there")
    names = [d.name for spec in table.values() for d in spec.dimensions]
    shared = sorted({name for name in names if names.count(name) > 1})
    if shared:
        raise RuntimeError(f"dimension(s) {', '.join(shared)} appear under more than one kind in "
                           "zelda_judge.kinds.KINDS; each dimension belongs to exactly one kind")


_check(KINDS)

ALL_DIMENSIONS: tuple[str, ...] = tuple(d.name for spec in KINDS.values() for d in spec.dimensions)
