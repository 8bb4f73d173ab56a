"""The rules backend: deterministic scores from the state log, with no LLM. Every verdict says so (its model is
``rule_scores.RULES_MODEL``, the formulas' version).

Each kind is scored by the rules scorer of its entry in ``zelda_judge.kinds.KINDS`` (the formulas are in
``zelda_judge.rule_scores``).
"""

from __future__ import annotations

from typing import Literal

from zelda_judge.backends.base import Judgement
from zelda_judge.kinds import KINDS
from zelda_judge.rule_scores import RULES_MODEL
from zelda_judge.segment_io import Segment
from zelda_rlaif.events import JudgeKind
from zelda_rlaif.verdicts import RATIONALE_MAX_CHARS, Vote

MODEL = RULES_MODEL


class RulesJudge:
    name: Literal["rules"] = "rules"
    model = MODEL

    def __init__(self, kind: JudgeKind) -> None:
        self.kind = kind

    @property
    def key_frames(self) -> int:
        return 0

    @property
    def requests_per_segment(self) -> int:
        return 0

    async def judge(self, segment: Segment) -> Judgement:
        spec = KINDS[self.kind]
        verdict = spec.rules(segment.summary)
        scores = {d: verdict.scores[d] for d in spec.dimension_names}
        rationale = f"{MODEL}: {verdict.rationale}"[:RATIONALE_MAX_CHARS]
        # One deterministic vote: the median of it is itself, so agreement is complete.
        return Judgement(scores=scores, agreement=1.0, rationale=rationale,
                         votes=(Vote(scores=scores, rationale=rationale),))

    async def probe(self) -> None:
        return None

    async def aclose(self) -> None:
        return None
