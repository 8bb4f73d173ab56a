"""What ``zelda-rlaif up`` shows and summarises: counts and a timeline read off the bus.

It only listens, so it never takes work from the services: pipeline events through an ephemeral ordered
JetStream consumer (so a fact published twice and de-duplicated by JetStream is counted once, as the services
see it), live metrics on core NATS.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js import api
from pydantic import ValidationError

from zelda_rlaif.bus import Bus
from zelda_rlaif.events import (
    DeadLetter,
    EpochExported,
    LiveMetrics,
    RewardModelUpdated,
    ScoresReady,
    SegmentExported,
    SegmentJudged,
    SegmentScored,
)
from zelda_rlaif.subjects import (
    DEAD_LETTER,
    EPOCH_EXPORTED,
    LIVE_METRICS,
    REWARD_MODEL_UPDATED,
    SCORES_READY,
    SEGMENT_EXPORTED,
    SEGMENT_JUDGED,
    SEGMENT_SCORED,
)

log = logging.getLogger(__name__)


def _tolerant(handler: Callable[[Msg], Awaitable[None]]) -> Callable[[Msg], Awaitable[None]]:
    """A message this display cannot read is reported and skipped; it must not stop the supervisor."""

    async def handle(msg: Msg) -> None:
        try:
            await handler(msg)
        except ValidationError as exc:
            log.warning("ignored an unreadable message on %s: %s", msg.subject, exc.errors(include_url=False))

    return handle


@dataclass
class PipelineWatch:
    run_id: str
    started: float = field(default_factory=time.time)
    exported: Counter[int] = field(default_factory=Counter)
    judged: Counter[tuple[int, str]] = field(default_factory=Counter)
    scored: Counter[int] = field(default_factory=Counter)
    dead_letters: int = 0
    epochs_exported: dict[int, EpochExported] = field(default_factory=dict)
    scores_ready: dict[int, list[ScoresReady]] = field(default_factory=dict)
    reward_models: dict[int, RewardModelUpdated] = field(default_factory=dict)
    metrics: LiveMetrics | None = None
    models_loaded: dict[int, float] = field(default_factory=dict)  # model epoch -> when envs shaped with it
    timeline: list[tuple[float, str]] = field(default_factory=list)
    _subs: list[Subscription] = field(default_factory=list)

    def _mark(self, what: str) -> None:
        self.timeline.append((time.time(), what))

    async def start(self, bus: Bus) -> None:
        handlers = {
            SEGMENT_EXPORTED.subject: self._on_exported,
            SEGMENT_JUDGED.subject: self._on_judged,
            SEGMENT_SCORED.subject: self._on_scored,
            EPOCH_EXPORTED.subject: self._on_epoch,
            SCORES_READY.subject: self._on_scores_ready,
            REWARD_MODEL_UPDATED.subject: self._on_reward_model,
            LIVE_METRICS.subject: self._on_metrics,
            DEAD_LETTER.subject: self._on_dead_letter,
        }
        for subject, raw_handler in handlers.items():
            handler = _tolerant(raw_handler)
            if subject == LIVE_METRICS.subject:
                self._subs.append(await bus.subscribe_live(subject, handler))
            else:
                self._subs.append(await bus.js.subscribe(subject, cb=handler, ordered_consumer=True,
                                                         deliver_policy=api.DeliverPolicy.NEW))

    async def stop(self) -> None:
        for sub in self._subs:
            await sub.unsubscribe()
        self._subs.clear()

    async def _on_exported(self, msg: Msg) -> None:
        event = SegmentExported.model_validate_json(msg.data)
        if event.run_id == self.run_id:
            self.exported[event.epoch] += 1

    async def _on_judged(self, msg: Msg) -> None:
        event = SegmentJudged.model_validate_json(msg.data)
        if event.run_id == self.run_id:
            self.judged[(event.epoch, event.kind.value)] += 1

    async def _on_scored(self, msg: Msg) -> None:
        event = SegmentScored.model_validate_json(msg.data)
        if event.run_id == self.run_id:
            self.scored[event.epoch] += 1

    async def _on_epoch(self, msg: Msg) -> None:
        event = EpochExported.model_validate_json(msg.data)
        if event.run_id == self.run_id:
            self.epochs_exported[event.epoch] = event
            self._mark(f"epoch {event.epoch} ended: {event.segments_exported} segments exported")

    async def _on_scores_ready(self, msg: Msg) -> None:
        event = ScoresReady.model_validate_json(msg.data)
        if event.run_id == self.run_id:
            self.scores_ready.setdefault(event.epoch, []).append(event)
            self._mark(f"epoch {event.epoch} scores ready: {event.segments_scored} scored, "
                       f"{event.segments_unjudged} unjudged")

    async def _on_reward_model(self, msg: Msg) -> None:
        event = RewardModelUpdated.model_validate_json(msg.data)
        if event.run_id == self.run_id:
            self.reward_models[event.epoch] = event
            accuracy = "-" if event.validation_accuracy is None else f"{event.validation_accuracy:.2f}"
            self._mark(f"epoch {event.epoch} reward model {'accepted' if event.accepted else 'kept previous'}: "
                       f"{event.pairs} pairs, validation accuracy {accuracy}")

    async def _on_metrics(self, msg: Msg) -> None:
        event = LiveMetrics.model_validate_json(msg.data)
        if event.run_id != self.run_id:
            return
        self.metrics = event
        model_epoch = event.reward_model_epoch
        if model_epoch is not None and model_epoch not in self.models_loaded:
            self.models_loaded[model_epoch] = time.time()
            self._mark(f"reward model of epoch {model_epoch} loaded by the trainer (shaping epoch {event.epoch})")

    async def _on_dead_letter(self, msg: Msg) -> None:
        letter = DeadLetter.model_validate_json(msg.data)
        if letter.run_id == self.run_id:
            self.dead_letters += 1

    def loop_closed(self, epochs: list[int]) -> bool:
        """Every epoch has its scores and a reward-model answer."""
        return all(e in self.scores_ready and e in self.reward_models for e in epochs)
