"""What the judges store about a segment besides its combined score: each kind's verdict with its votes, and why a
segment went unjudged.

- ``VerdictRecord`` at ``keys.verdict(run, epoch, segment, kind)``: stored by a judge before it publishes the
  ``SegmentJudged`` (``zelda_judge.ledger``). Replays (``zelda_rlaif.replay``) read it to show each vote's
  scores and rationale, which the published median alone cannot: the bus event stays small, the record keeps
  the rest.
- ``UnjudgedRecord`` at ``keys.unjudged_segment(run, epoch, segment)``: the kinds that gave up on the segment.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from zelda_rlaif.events import RATIONALE_MAX_CHARS, Epoch, RunId, SegmentId, SegmentJudged, UnitScore


class Vote(BaseModel):
    """One of the M votes of a judge kind: a score per dimension and the reason given for them."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    scores: dict[str, UnitScore]
    rationale: str = Field(max_length=RATIONALE_MAX_CHARS)
    seed: int | None = Field(None, description="the LLM sampling seed of the vote; None for the rules backend")


class VerdictRecord(BaseModel):
    """What ``keys.verdict`` holds: the verdict as published and the votes it is the median of."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal[1] = 1
    verdict: SegmentJudged
    votes: list[Vote] = Field(min_length=1, description="every vote, in the order they were asked for")

    @model_validator(mode="after")
    def _votes_match_the_verdict(self) -> VerdictRecord:
        if len(self.votes) != self.verdict.votes:
            raise ValueError(f"the verdict counts {self.verdict.votes} votes but {len(self.votes)} are recorded")
        dimensions = set(self.verdict.scores)
        for vote in self.votes:
            if set(vote.scores) != dimensions:
                raise ValueError(f"a vote scores {sorted(vote.scores)}, the verdict {sorted(dimensions)}")
        return self


class UnjudgedReason(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    reason: str = Field(max_length=RATIONALE_MAX_CHARS, description="the last error before it was dead-lettered")
    deliveries: int = Field(ge=0)


class UnjudgedRecord(BaseModel):
    """A dead-lettered segment: which judge kinds gave up on it and why. The epoch counts it as unjudged."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal[1] = 1
    run_id: RunId
    epoch: Epoch
    segment_id: SegmentId
    reasons: dict[str, UnjudgedReason] = Field(description="judge kind -> why it gave up")
