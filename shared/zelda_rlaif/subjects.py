"""Every subject, stream, key-value bucket and durable consumer of the system, declared once.

Durable pipeline events live in the ``ZELDA_PIPELINE`` stream with *limits* retention, because several
consumer groups (each judge kind, the HUD, the reward model) read the same subjects independently; a
work-queue stream would allow only one. Live HUD traffic (frames, metrics) is plain core NATS: it is lossy
by design so that a slow browser or a missing HUD can never apply back-pressure to training.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Generic, TypeVar

from zelda_rlaif.events import (
    DeadLetter,
    EpochExported,
    Event,
    GuidanceSuggestion,
    JudgeKind,
    LiveFrame,
    LiveMetrics,
    RewardModelUpdated,
    ScoresReady,
    SegmentExported,
    SegmentJudged,
    SegmentScored,
)

E = TypeVar("E", bound=Event)
E_co = TypeVar("E_co", bound=Event, covariant=True)

PREFIX = "zelda"
PIPELINE_STREAM = "ZELDA_PIPELINE"
DEADLETTER_STREAM = "ZELDA_DEADLETTER"
# Re-publishing the same fact inside this window is stored once (Nats-Msg-Id). Long enough to cover every
# retry and redelivery of one epoch; the key-value bucket below guards what must hold beyond it.
DUPLICATE_WINDOW = timedelta(hours=2)
COORDINATION_BUCKET = "zelda_coordination"


@dataclass(frozen=True)
class Topic(Generic[E_co]):
    """A subject (or subject pattern) and the one payload model that travels on it."""

    subject: str
    model: type[E_co]
    durable: bool = True

    def for_kind(self, kind: JudgeKind) -> str:
        """Concrete subject of a per-kind topic (``...judged.*``)."""
        return self.subject.replace("*", kind.value)


SEGMENT_EXPORTED = Topic(f"{PREFIX}.segment.exported", SegmentExported)
SEGMENT_JUDGED = Topic(f"{PREFIX}.segment.judged.*", SegmentJudged)
SEGMENT_SCORED = Topic(f"{PREFIX}.segment.scored", SegmentScored)
EPOCH_EXPORTED = Topic(f"{PREFIX}.epoch.exported", EpochExported)
SCORES_READY = Topic(f"{PREFIX}.scores.ready", ScoresReady)
REWARD_MODEL_UPDATED = Topic(f"{PREFIX}.reward_model.updated", RewardModelUpdated)
DEAD_LETTER = Topic(f"{PREFIX}.deadletter.>", DeadLetter)

LIVE_FRAMES = Topic(f"{PREFIX}.hud.frames.*", LiveFrame, durable=False)
LIVE_METRICS = Topic(f"{PREFIX}.hud.metrics", LiveMetrics, durable=False)
LIVE_GUIDANCE = Topic(f"{PREFIX}.hud.guidance", GuidanceSuggestion, durable=False)

PIPELINE_TOPICS: tuple[Topic[Event], ...] = (
    SEGMENT_EXPORTED,
    SEGMENT_JUDGED,
    SEGMENT_SCORED,
    EPOCH_EXPORTED,
    SCORES_READY,
    REWARD_MODEL_UPDATED,
)
ALL_TOPICS: tuple[Topic[Event], ...] = (*PIPELINE_TOPICS, DEAD_LETTER, LIVE_FRAMES, LIVE_METRICS, LIVE_GUIDANCE)


def dead_letter_subject(original_subject: str) -> str:
    return f"{PREFIX}.deadletter.{original_subject.removeprefix(PREFIX + '.')}"


def live_frame_subject(env_id: str) -> str:
    return LIVE_FRAMES.subject.replace("*", env_id)


@dataclass(frozen=True)
class StreamSpec:
    name: str
    subjects: tuple[str, ...]
    max_age: timedelta
    duplicate_window: timedelta = DUPLICATE_WINDOW


STREAMS: tuple[StreamSpec, ...] = (
    StreamSpec(PIPELINE_STREAM, tuple(t.subject for t in PIPELINE_TOPICS), max_age=timedelta(days=14)),
    StreamSpec(DEADLETTER_STREAM, (DEAD_LETTER.subject,), max_age=timedelta(days=30)),
)


@dataclass(frozen=True)
class ConsumerSpec(Generic[E]):
    """A durable pull consumer: replicas of one service share it, so they share its work."""

    durable: str
    stream: str
    topic: Topic[E]
    filter_subject: str
    max_deliver: int = 5
    ack_wait: timedelta = timedelta(seconds=60)
    # Delays between redeliveries when a handler fails (nak with delay); the last one repeats.
    backoff: tuple[timedelta, ...] = field(
        default=(timedelta(seconds=1), timedelta(seconds=5), timedelta(seconds=15), timedelta(seconds=30))
    )
    max_ack_pending: int = 256

    def redelivery_delay(self, deliveries: int) -> timedelta:
        """Back-off before delivery number ``deliveries + 1``."""
        return self.backoff[min(max(deliveries, 1), len(self.backoff)) - 1]


def judge_consumer(kind: JudgeKind) -> ConsumerSpec[SegmentExported]:
    return ConsumerSpec(f"judge-{kind.value}", PIPELINE_STREAM, SEGMENT_EXPORTED, SEGMENT_EXPORTED.subject)


def judge_epoch_consumer(kind: JudgeKind) -> ConsumerSpec[EpochExported]:
    """Each judge kind also sees ``epoch.exported`` so whichever finishes last can close the epoch."""
    return ConsumerSpec(f"judge-{kind.value}-epochs", PIPELINE_STREAM, EPOCH_EXPORTED, EPOCH_EXPORTED.subject)


def judge_dead_letter_consumer(kind: JudgeKind) -> ConsumerSpec[DeadLetter]:
    """Dead letters of ``segment.exported``: each judge kind durably records the segments it gave up on, so
    the epoch can still close even if the replica that dead-lettered one died right after."""
    return ConsumerSpec(f"judge-{kind.value}-deadletters", DEADLETTER_STREAM, DEAD_LETTER,
                        dead_letter_subject(SEGMENT_EXPORTED.subject))


REWARD_MODEL_CONSUMER = ConsumerSpec("reward-model", PIPELINE_STREAM, SCORES_READY, SCORES_READY.subject,
                                     ack_wait=timedelta(minutes=10))


def trainer_model_consumer(run_id: str) -> ConsumerSpec[RewardModelUpdated]:
    """One durable per run: a trainer follows its own run's reward models and nobody else's."""
    return ConsumerSpec(f"trainer-{run_id}", PIPELINE_STREAM, REWARD_MODEL_UPDATED, REWARD_MODEL_UPDATED.subject)
