"""What ``zelda-rlaif up`` shows and summarises: counts and a timeline read off the bus, and each ended epoch's
``EpochReport`` read from the store.

It only listens, so it never takes work from the services: pipeline events through an ephemeral ordered
JetStream consumer (so a fact published twice and de-duplicated by JetStream is counted once, as the services
see it), live metrics on core NATS.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from dataclasses import dataclass, field

from nats.aio.subscription import Subscription

from zelda_rlaif.bus import Bus, InvalidMessage, Router
from zelda_rlaif.episodes import EpochReport
from zelda_rlaif.errors import ObjectNotFound
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
from zelda_rlaif.storage import ObjectStore, keys
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
    metrics: LiveMetrics | None = None  # the latest: the running epoch so far
    reports: dict[int, EpochReport] = field(default_factory=dict)  # ended epochs
    models_loaded: dict[int, float] = field(default_factory=dict)  # model epoch -> when envs shaped with it
    timeline: list[tuple[float, str]] = field(default_factory=list)
    _subs: list[Subscription] = field(default_factory=list)

    def _mark(self, what: str) -> None:
        self.timeline.append((time.time(), what))

    async def start(self, bus: Bus) -> None:
        router: Router[[], None] = Router(self._skip)
        router.route(SEGMENT_EXPORTED, self._on_exported)
        router.route(SEGMENT_JUDGED, self._on_judged)
        router.route(SEGMENT_SCORED, self._on_scored)
        router.route(EPOCH_EXPORTED, self._on_epoch)
        router.route(SCORES_READY, self._on_scores_ready)
        router.route(REWARD_MODEL_UPDATED, self._on_reward_model)
        router.route(LIVE_METRICS, self._on_metrics)
        router.route(DEAD_LETTER, self._on_dead_letter)
        self._subs = await router.subscribe(bus)

    def _skip(self, invalid: InvalidMessage) -> None:
        """A message this display cannot read is reported and skipped; it must not stop the supervisor."""
        log.warning("ignored an unreadable message on %s: %s", invalid.subject, invalid.reason)

    async def stop(self) -> None:
        for sub in self._subs:
            await sub.unsubscribe()
        self._subs.clear()

    def _on_exported(self, event: SegmentExported) -> None:
        if event.run_id == self.run_id:
            self.exported[event.epoch] += 1

    def _on_judged(self, event: SegmentJudged) -> None:
        if event.run_id == self.run_id:
            self.judged[(event.epoch, event.kind.value)] += 1

    def _on_scored(self, event: SegmentScored) -> None:
        if event.run_id == self.run_id:
            self.scored[event.epoch] += 1

    def _on_epoch(self, event: EpochExported) -> None:
        if event.run_id == self.run_id:
            self.epochs_exported[event.epoch] = event
            self._mark(f"epoch {event.epoch} ended: {event.segments_exported} segments exported")

    def _on_scores_ready(self, event: ScoresReady) -> None:
        if event.run_id == self.run_id:
            self.scores_ready.setdefault(event.epoch, []).append(event)
            self._mark(f"epoch {event.epoch} scores ready: {event.segments_scored} scored, "
                       f"{event.segments_unjudged} unjudged")

    def _on_reward_model(self, event: RewardModelUpdated) -> None:
        if event.run_id == self.run_id:
            self.reward_models[event.epoch] = event
            accuracy = "-" if event.validation_accuracy is None else f"{event.validation_accuracy:.2f}"
            self._mark(f"epoch {event.epoch} reward model {'accepted' if event.accepted else 'kept previous'}: "
                       f"{event.pairs} pairs, validation accuracy {accuracy}")

    def _on_metrics(self, event: LiveMetrics) -> None:
        if event.run_id != self.run_id:
            return
        self.metrics = event
        model_epoch = event.reward_model_epoch
        if model_epoch is not None and model_epoch not in self.models_loaded:
            self.models_loaded[model_epoch] = time.time()
            self._mark(f"reward model of epoch {model_epoch} loaded by the trainer (shaping epoch {event.epoch})")

    async def read_reports(self, store: ObjectStore) -> None:
        """Read the report of every ended epoch not read yet (the trainer stores it before ``epoch.exported``)."""
        for epoch in sorted(set(self.epochs_exported) - set(self.reports)):
            try:
                data = await asyncio.to_thread(store.get_json, keys.epoch_report(self.run_id, epoch))
            except ObjectNotFound:  # a trainer that died between the two; the summary says the report is missing
                continue
            self.reports[epoch] = EpochReport.model_validate(data)

    def _on_dead_letter(self, letter: DeadLetter) -> None:
        if letter.run_id == self.run_id:
            self.dead_letters += 1

    def loop_closed(self, epochs: list[int]) -> bool:
        """Every epoch has its scores and a reward-model answer."""
        return all(e in self.scores_ready and e in self.reward_models for e in epochs)
