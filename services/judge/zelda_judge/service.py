"""The judge service: settings -> clients (lifespan) -> handlers -> entry point.

One process judges one kind (``zelda_judge.kinds``). It runs three durable consumers, shared with the
other replicas of its kind:

- ``judge-<kind>`` on ``segment.exported``: judge the segment (many in flight), store and publish the
  verdict, combine the segment if this was its last verdict, close the epoch if this was its last segment;
- ``judge-<kind>-epochs`` on ``epoch.exported``: store the epoch manifest and close the epoch if complete;
- ``judge-<kind>-deadletters`` on the dead letters of ``segment.exported``: record segments this kind gave
  up on as unjudged, so the epoch still closes. Only a dead letter whose payload is a valid ``segment.exported``
  counts: an invalid event changes no ledger state (its dead letter stays for people to read).

All coordination is in ``zelda_judge.ledger`` (see its docstring for the exactly-once argument).
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from typing import Any

from pydantic import ValidationError

from zelda_judge.backends import JudgeBackend
from zelda_judge.backends.rules import RulesJudge
from zelda_judge.http import build_app, health_server
from zelda_judge.ledger import ScoreLedger
from zelda_judge.metrics import JudgeMetrics
from zelda_judge.segment_io import AsyncStore, SegmentReader
from zelda_judge.settings import JudgeSettings
from zelda_rlaif.bus import Bus, Delivery, run_consumer
from zelda_rlaif.errors import ObjectNotFound, ZeldaRlaifError
from zelda_rlaif.events import DeadLetter, EpochExported, SegmentExported, SegmentJudged
from zelda_rlaif.http_server import serve_until_stopped
from zelda_rlaif.logs import log_context
from zelda_rlaif.storage import open_store
from zelda_rlaif.subjects import judge_consumer, judge_dead_letter_consumer, judge_epoch_consumer
from zelda_rlaif.verdicts import RATIONALE_MAX_CHARS, VerdictRecord

log = logging.getLogger(__name__)


def make_backend(settings: JudgeSettings, metrics: JudgeMetrics) -> JudgeBackend:
    if settings.backend == "openai":
        from zelda_judge.backends.openai import OpenAIJudge  # httpx only where it is used

        return OpenAIJudge(settings.judge_kind, settings, metrics)
    return RulesJudge(settings.judge_kind)


def segment_concurrency(settings: JudgeSettings, backend: JudgeBackend) -> int:
    """Segments in flight so that MAX_IN_FLIGHT LLM requests stay in flight.

    Each segment makes VOTES requests (one with ``n``); half as many segments again are admitted so that
    while some segments load their state log or store their verdict, others already wait for a request
    slot: the LLM semaphore, not the segment count, is what caps the load on the server.
    """
    max_in_flight = settings.endpoint().max_in_flight
    per_segment = backend.requests_per_segment
    if per_segment == 0:  # judged locally: in-flight segments only overlap store I/O
        return max_in_flight
    return max(1, math.ceil(1.5 * max_in_flight / per_segment))


async def segment_of(letter: DeadLetter, store: AsyncStore) -> SegmentExported | None:
    """The segment a dead letter is about, if its payload (embedded or stored) is a valid ``segment.exported``.

    The ids the bus salvaged from an invalid payload are never used: they may name another run's epoch (or a
    segment that does not exist), and counting them there would close that epoch early.
    """
    payload = letter.payload
    if letter.payload_key is not None:
        try:
            payload = await store.get_bytes(letter.payload_key)
        except ObjectNotFound:
            log.error("dead letter %s names payload %s, which is gone; nothing to count", letter.dedup_id(),
                      letter.payload_key)
            return None
    try:
        return SegmentExported.model_validate_json(payload)
    except ValidationError:
        return None


class JudgeService:
    """Handlers of one judge kind; every piece of state lives in the store, JetStream or the KV bucket."""

    def __init__(self, settings: JudgeSettings, bus: Bus, store: AsyncStore, ledger: ScoreLedger,
                 backend: JudgeBackend, metrics: JudgeMetrics) -> None:
        self.settings = settings
        self.kind = settings.judge_kind
        self.bus = bus
        self.ledger = ledger
        self.store = store
        self.reader = SegmentReader(store)
        self.backend = backend
        self.metrics = metrics
        self.segments_spec = settings.consumer(judge_consumer(self.kind))
        self.epochs_spec = settings.consumer(judge_epoch_consumer(self.kind))
        self.dead_letters_spec = settings.consumer(judge_dead_letter_consumer(self.kind))

    async def on_segment(self, event: SegmentExported, delivery: Delivery) -> None:
        started = time.perf_counter()
        self.metrics.in_flight.inc()
        try:
            with log_context(kind=self.kind.value, delivery=delivery.deliveries):
                outcome = await self._judge(event)
                if await self.ledger.try_score(event) is not None:
                    await self.close_epoch(event.run_id, event.epoch)
        except Exception:
            self.metrics.segment("failed")
            raise
        finally:
            self.metrics.in_flight.dec()
        self.metrics.segment(outcome, time.perf_counter() - started)

    async def _judge(self, event: SegmentExported) -> str:
        stored = await self.ledger.stored_verdict(event, self.kind)
        if stored is not None:  # a redelivery: the verdict survived, the ack did not
            await self.ledger.publish_verdict(stored.verdict)
            return "reused"
        segment = await self.reader.load(event, key_frames=self.backend.key_frames)
        # JudgeBackendError propagates: the bus redelivers later, then dead-letters; no score is made up.
        judgement = await self.backend.judge(segment)
        verdict = SegmentJudged(
            run_id=event.run_id,
            epoch=event.epoch,
            segment_id=event.segment_id,
            kind=self.kind,
            backend=self.backend.name,
            model=self.backend.model,
            scores=judgement.scores,
            agreement=judgement.agreement,
            votes=len(judgement.votes),
            rationale=judgement.rationale[:RATIONALE_MAX_CHARS],
        )
        await self.ledger.record_verdict(VerdictRecord(verdict=verdict, votes=list(judgement.votes)))
        return "judged"

    async def on_epoch(self, event: EpochExported, delivery: Delivery) -> None:
        with log_context(kind=self.kind.value, run_id=event.run_id, epoch=event.epoch):
            await self.ledger.record_epoch(event)
            await self.close_epoch(event.run_id, event.epoch)

    async def on_dead_letter(self, letter: DeadLetter, delivery: Delivery) -> None:
        """Durable path: every dead letter of this kind's segment consumer becomes an unjudged record."""
        if letter.consumer != self.segments_spec.durable:
            return  # another kind's (or service's) give-up: that consumer records its own
        ref = await segment_of(letter, self.store)
        if ref is None:
            log.error("dead letter %s is not a valid segment.exported (salvaged run %s, epoch %s, segment %s); "
                      "it is counted in no epoch", letter.dedup_id(), letter.run_id, letter.epoch, letter.segment_id)
            self.metrics.segment("invalid")
            return
        await self.ledger.record_unjudged(ref, self.kind.value, letter.reason, letter.deliveries)
        self.metrics.segment("dead_lettered")
        await self.close_epoch(ref.run_id, ref.epoch)

    async def dead_letter_hook(self, letter: DeadLetter) -> None:
        """Fast path from ``run_consumer``; the durable consumer above repeats it if this one fails."""
        try:
            ref = await segment_of(letter, self.store)
            if ref is None:
                return
            await self.ledger.record_unjudged(ref, self.kind.value, letter.reason, letter.deliveries)
            await self.close_epoch(ref.run_id, ref.epoch)
        except Exception as exc:  # the durable dead-letter consumer records it instead
            log.warning("could not record dead letter %s now (%s); the dead-letter consumer will",
                        letter.dedup_id(), exc)

    async def close_epoch(self, run_id: str, epoch: int) -> None:
        if await self.ledger.try_close_epoch(run_id, epoch) is not None:
            self.metrics.epoch_closed()

    def health(self) -> dict[str, Any]:
        return {
            "ok": self.bus.nc.is_connected,
            "kind": self.kind.value,
            "backend": self.backend.name,
            "model": self.backend.model,
            "nats_connected": self.bus.nc.is_connected,
        }


async def serve(settings: JudgeSettings, stop: asyncio.Event) -> None:
    """Run one replica until ``stop`` is set; in-flight segments finish (or are handed back) before returning."""
    kind = settings.judge_kind
    metrics = JudgeMetrics(kind.value)
    raw_store = await asyncio.to_thread(open_store, settings.store)
    bus = await Bus.connect(settings.nats, name=f"judge-{kind.value}")
    store = AsyncStore(raw_store)
    backend = make_backend(settings, metrics)
    try:
        await bus.provision()
        ledger = ScoreLedger(store, bus, await bus.coordination(), settings.rubric)
        service = JudgeService(settings, bus, store, ledger, backend, metrics)
        concurrency = segment_concurrency(settings, backend)
        await backend.probe()
        log.info("judge %s ready: backend %s, model %s, %d segments in flight, store %s", kind.value,
                 backend.name, backend.model, concurrency, raw_store.url)
        try:
            async with asyncio.TaskGroup() as group:
                group.create_task(run_consumer(bus, service.segments_spec, service.on_segment, stop, store=raw_store,
                                               concurrency=concurrency, on_dead_letter=service.dead_letter_hook))
                group.create_task(run_consumer(bus, service.epochs_spec, service.on_epoch, stop, store=raw_store))
                group.create_task(run_consumer(bus, service.dead_letters_spec, service.on_dead_letter, stop,
                                               store=raw_store))
                if settings.http_port:
                    app = build_app(metrics, service.health)
                    server = health_server(app, settings.http_host, settings.http_port)
                    group.create_task(serve_until_stopped(server, stop))
        except ExceptionGroup as failures:
            # Surface the first error we raised on purpose (it carries advice), not the task group around it.
            ours = [e for e in failures.exceptions if isinstance(e, ZeldaRlaifError)]
            if ours:
                raise ours[0] from failures
            raise
    finally:
        await backend.aclose()
        store.close()
        await bus.close()
