"""``metadata.json``: what one epoch's reward-model training did, written beside ``rm.pt``.

It is written for rejected attempts too (then without ``rm.pt``), and it is written last: its presence means
the epoch is finished, so a redelivered ``scores.ready`` republishes ``event`` instead of training again.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from zelda_rlaif.events import RewardModelUpdated
from zelda_rlaif.reward_model.normalization import Normalization


class PairCounts(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    train_decisive: int = Field(ge=0, description="training pairs whose scores differ by at least the margin")
    train_ties: int = Field(ge=0, description="training pairs within the near-tie band (label 0.5)")
    validation_decisive: int = Field(ge=0)
    validation_ties: int = Field(ge=0)

    @property
    def total(self) -> int:
        return self.train_decisive + self.train_ties + self.validation_decisive + self.validation_ties


class PassRecord(BaseModel):
    """Metrics after one pass over the training pairs, with every segment's full mean reward."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    index: int = Field(ge=0)
    train_loss: float
    train_accuracy: float | None
    validation_loss: float | None
    validation_accuracy: float | None


class RewardModelMetadata(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    # Version 2 renamed ``normalisation`` to ``normalization``; registry.read_metadata refuses older files
    # with advice.
    schema_version: Literal[2] = 2
    run_id: str
    epoch: int = Field(ge=0)
    accepted: bool
    reason: str = ""
    model_epoch: int | None = Field(description="epoch whose model is current after this one")
    trained_on_epochs: list[int]
    scores_version: str | None = Field(None, description="the re-judged scores version trained on; None: live scores")
    segments: int = Field(ge=0, description="segments with scores and states that took part")
    validation_segments: list[str] = Field(default_factory=list)
    skipped_segments: dict[str, str] = Field(default_factory=dict, description="segment id -> why it was left out")
    pairs: PairCounts
    settings: dict[str, float | int | str] = Field(default_factory=dict, description="training settings used")
    loss_curve: list[PassRecord] = Field(default_factory=list)
    validation_accuracy: float | None = None
    normalization: Normalization | None = Field(None, description="absent when no model was trained")
    segment_rewards: dict[str, float] = Field(
        default_factory=dict, description="segment id -> mean Phi of its states, computed by the shared Potential"
    )
    seen_places: int = Field(0, ge=0, description="places of the window's states (0: no optimism for unseen ones)")
    unseen_place_phi: float | None = Field(None, description="Phi of a state in any other place; None: no optimism")
    training_seconds: float = 0.0
    event: RewardModelUpdated
