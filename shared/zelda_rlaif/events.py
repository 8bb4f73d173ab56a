"""Event contracts: one versioned pydantic model per subject, imported by producer and consumer alike.

Rules every model follows:
- ``schema_version`` is a ``Literal``: a consumer rejects (and dead-letters) a version it does not know
  instead of guessing.
- ``dedup_id()`` is the JetStream ``Nats-Msg-Id``: publishing the same fact twice (a retry, a redelivered
  input, two replicas racing) is stored once. It names the run and the epoch wherever the event has them, so a
  fact of one epoch never hides the same-looking fact of another.
- Unknown fields are rejected, so a typo on the producer side fails loudly at the edge.
- A change of shape bumps ``schema_version``. A model whose older versions are stored (and read again: the HUD
  and ``up`` read past runs) upgrades them in a ``model_validator(mode="before")`` instead of rejecting them.
"""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer, PlainValidator, model_validator

from zelda_rlaif.episodes import EpisodeStats, training_figures, upgrade_reward_model_names

RunId = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")]
SegmentId = Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")]
Epoch = Annotated[int, Field(ge=0)]
UnitScore = Annotated[float, Field(ge=0.0, le=1.0)]
RATIONALE_MAX_CHARS = 2000  # of a verdict's rationale, and of each stored vote's


def _decode_b64(value: object) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return base64.b64decode(value, validate=True)
    raise ValueError("expected base64 text or bytes")


Base64Bytes = Annotated[
    bytes,
    PlainValidator(_decode_b64),
    PlainSerializer(lambda b: base64.b64encode(b).decode("ascii"), return_type=str, when_used="json"),
]


def utc_now() -> datetime:
    return datetime.now(UTC)


class JudgeKind(StrEnum):
    """The one list of judge kinds. What each kind judges is its entry in ``zelda_judge.kinds.KINDS``."""

    STATE = "state"
    PUZZLE = "puzzle"
    VISION = "vision"


class Event(BaseModel):
    """Base of every payload on the bus."""

    # NaN/inf cannot travel in JSON (they would arrive as null): refuse them where the event is made.
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    emitted_at: datetime = Field(default_factory=utc_now)

    def dedup_id(self) -> str | None:
        """The ``Nats-Msg-Id`` for JetStream de-duplication; ``None`` for lossy live events."""
        return None


class SegmentRef(Event):
    """Identifies one exported segment; every segment-level event carries it."""

    run_id: RunId
    epoch: Epoch
    segment_id: SegmentId


class SegmentExported(SegmentRef):
    """A segment's state log and frames are stored and immutable. The same model is the segment's
    ``manifest.json``, written last by the exporter: a stored manifest means a complete segment, and the
    announcement carries everything the manifest says."""

    schema_version: Literal[2] = 2
    episode_id: str
    profile: str = Field(description="game profile name, e.g. testworld or oracle-of-seasons")
    step_start: int = Field(ge=0)
    step_end: int = Field(ge=0, description="exclusive")
    num_steps: int = Field(ge=0)
    frame_every: int = Field(ge=1, description="a PNG frame every k-th step")
    frame_steps: list[int] = Field(description="steps that have a frame, in order")
    total_reward: float
    reward_components: dict[str, float]
    rooms_visited: list[tuple[int, int]] = Field(description="distinct (group, room) pairs seen in the segment")
    reward_model_epoch: int | None = Field(description="epoch of the reward model used for shaping, if any")

    def dedup_id(self) -> str:
        return f"segment.exported:{self.run_id}:{self.epoch}:{self.segment_id}"


class SegmentJudged(SegmentRef):
    """One judge kind's verdict (median of M votes) on a segment."""

    schema_version: Literal[1] = 1
    kind: JudgeKind
    backend: Literal["openai", "rules"]
    model: str
    scores: dict[str, UnitScore]
    agreement: UnitScore = Field(description="1 - spread of the votes (max - min, averaged over dimensions)")
    votes: int = Field(ge=1)
    rationale: str = Field(max_length=RATIONALE_MAX_CHARS)

    def dedup_id(self) -> str:
        return f"segment.judged:{self.kind}:{self.run_id}:{self.epoch}:{self.segment_id}"


class SegmentScored(SegmentRef):
    """All judge kinds have judged the segment; its combined score uses the rubric weights."""

    schema_version: Literal[1] = 1
    combined: float
    dimensions: dict[str, UnitScore]
    weights: dict[str, float]

    def dedup_id(self) -> str:
        return f"segment.scored:{self.run_id}:{self.epoch}:{self.segment_id}"


class EpochExported(Event):
    """The trainer finished exporting an epoch: downstream knows how many segments to expect."""

    schema_version: Literal[1] = 1
    run_id: RunId
    epoch: Epoch
    segments_exported: int = Field(ge=0)
    env_steps: int = Field(ge=0)
    episodes: int = Field(ge=0)

    def dedup_id(self) -> str:
        return f"epoch.exported:{self.run_id}:{self.epoch}"


class ScoresReady(Event):
    """Every segment announced for the epoch is scored or dead-lettered; sent exactly once per epoch."""

    schema_version: Literal[1] = 1
    run_id: RunId
    epoch: Epoch
    segments_scored: int = Field(ge=0)
    segments_unjudged: int = Field(ge=0)

    def dedup_id(self) -> str:
        return f"scores.ready:{self.run_id}:{self.epoch}"


class RewardModelUpdated(Event):
    """A reward model was trained on an epoch's scores (or the previous one kept, with the reason)."""

    schema_version: Literal[1] = 1
    run_id: RunId
    epoch: Epoch
    accepted: bool = Field(description="False when validation accuracy was too low and the previous model stays")
    model_epoch: Epoch | None = Field(description="epoch whose model is now current; None if there is none yet")
    pairs: int = Field(ge=0)
    validation_accuracy: float | None = Field(ge=0.0, le=1.0)
    trained_on_epochs: list[int]
    reason: str = ""

    def dedup_id(self) -> str:
        return f"reward_model.updated:{self.run_id}:{self.epoch}"


class DeadLetter(Event):
    """A message that could not be processed after its last delivery, kept with the reason.

    The payload travels inside the letter (base64) when it fits; a payload too large for that is stored first
    and ``payload_key`` names it, with ``payload`` left empty. ``run_id``, ``epoch`` and ``segment_id`` are
    salvaged from the payload for people and logs, even when it does not validate: never trust them for state.
    """

    schema_version: Literal[2] = 2
    original_subject: str
    stream: str
    consumer: str
    stream_sequence: int | None
    deliveries: int
    reason: str
    payload: Base64Bytes
    payload_key: str | None = Field(None, description="object-store key of a payload too large to embed")
    run_id: str | None = None
    epoch: int | None = None
    segment_id: str | None = None

    @model_validator(mode="after")
    def _payload_in_one_place(self) -> DeadLetter:
        if self.payload_key is not None and self.payload:
            raise ValueError("a dead letter embeds its payload or names its payload_key, not both")
        return self

    def dedup_id(self) -> str:
        # The stream sequence names the message; the salvaged run and epoch keep letters without one apart.
        return f"deadletter:{self.stream}:{self.consumer}:{self.stream_sequence}:{self.run_id}:{self.epoch}"


class LiveFrame(Event):
    """A sampled game screen for the HUD (core NATS: lossy on purpose, never slows the trainer)."""

    schema_version: Literal[1] = 1
    run_id: RunId
    env_id: str
    step: int = Field(ge=0)
    png: Base64Bytes
    state: dict[str, float | int | bool | str] = Field(default_factory=dict)


class LiveMetrics(Event):
    """Training progress after every PPO iteration, for the HUD and ``zelda-rlaif up``; the latest is also stored
    as ``progress.json``. The epoch's final figures are its ``EpochReport`` (``zelda_rlaif.episodes``)."""

    schema_version: Literal[3] = 3
    run_id: RunId
    epoch: Epoch
    env_steps: int = Field(ge=0, description="env steps of the run so far")
    env_steps_per_s: float = Field(ge=0.0, description="env steps per second of the last iteration")
    episodes: EpisodeStats = Field(description="the episodes finished so far in this epoch")
    reward_components: dict[str, float] = Field(default_factory=dict)
    rooms_visited: list[tuple[int, int]] = Field(default_factory=list, description="(group, room) pairs")
    reward_model_epoch: int | None = Field(None, description="epoch of the reward model the envs shape with")
    segments_exported: int = Field(0, ge=0, description="segments announced so far in this run")

    @model_validator(mode="before")
    @classmethod
    def _upgrade(cls, data: Any) -> Any:
        # Version 2 is stored as a run's progress.json; version 3 renamed the reward model's return.
        return upgrade_reward_model_names(data, 2, stats=("episodes",))

    def flat(self) -> dict[str, float]:
        """The epoch so far under the metric names its ``EpochReport.flat()`` will have at the epoch's end."""
        return training_figures(self.env_steps_per_s, self.episodes)


class GuidanceSuggestion(Event):
    """An online LLM guidance suggestion shown on the HUD."""

    schema_version: Literal[1] = 1
    run_id: RunId
    env_id: str
    step: int = Field(ge=0)
    source: Literal["text", "vision"]
    backend: Literal["openai", "rules"]
    action: str
    reason: str = Field(max_length=500)
