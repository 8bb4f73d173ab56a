"""What a replay shows, as data: the segment, its state timeline, its milestones and every judge's verdict.

``Replay`` is also what ``replay_json`` returns (the HUD draws its own view from it); the PNG frames stay in the
store under ``keys.segment_frame``, one per step listed in ``stored_frames``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from zelda_rlaif.events import JudgeKind, SegmentExported, SegmentScored
from zelda_rlaif.segments import GameState
from zelda_rlaif.verdicts import UnjudgedRecord, VerdictRecord


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ReplayStep(_Frozen):
    """One line of the state log, without its observation vector (the panel shows the decoded state)."""

    step: int
    action_name: str
    reward: float
    components: dict[str, float]
    state: GameState


class MilestoneMark(_Frozen):
    """One quest milestone of the segment's game profile, as the segment's state log shows it."""

    name: str
    description: str
    first_step: int | None = Field(description="first step of the segment where it holds; None: never in the segment")
    from_start: bool = Field(description="it already held at the segment's first step (reached earlier)")
    readable: bool = Field(description="False: it reads a RAM field the state log does not keep")


class KindVerdict(_Frozen):
    """One judge kind's verdict on the segment, or why there is none."""

    kind: JudgeKind
    record: VerdictRecord | None
    missing: str | None = Field(None, description="why there is no record, in a sentence")


class Replay(_Frozen):
    schema_version: Literal[1] = 1
    manifest: SegmentExported
    steps: list[ReplayStep] = Field(description="the state log, in step order (empty when it is missing)")
    stored_frames: list[int] = Field(description="steps whose PNG frame is in the store")
    timeline: list[int] = Field(description="the step each animation frame shows, in order")
    milestones: list[MilestoneMark] = Field(description="the profile's milestones in quest order")
    verdicts: list[KindVerdict] = Field(description="every judge kind, in JudgeKind order")
    scored: SegmentScored | None = Field(description="the combined score, once every kind has judged")
    unjudged: UnjudgedRecord | None = Field(description="the kinds that gave up on the segment")
    notes: list[str] = Field(description="what is missing or could not be read, one sentence each")

    @property
    def segment_id(self) -> str:
        return self.manifest.segment_id

    def step_at(self, step: int) -> ReplayStep | None:
        """The state-log line of ``step``, if the log has it."""
        index = step - self.steps[0].step if self.steps else -1
        if 0 <= index < len(self.steps) and self.steps[index].step == step:
            return self.steps[index]
        return next((s for s in self.steps if s.step == step), None)
