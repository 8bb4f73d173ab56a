"""The JetStream bus against a real nats-server: de-duplication, redelivery, dead letters, bad payloads, routing."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from pathlib import Path

import pytest
from nats.js.api import AckPolicy

from tests.support.streams import catch_live
from tests.support.waiting import wait_until
from zelda_rlaif.bus import Bus, Delivery, InvalidMessage, PermanentFailure, Router, run_consumer
from zelda_rlaif.bus.router import subject_matches
from zelda_rlaif.episodes import EpisodeStats
from zelda_rlaif.events import EpochExported, JudgeKind, LiveMetrics, SegmentJudged
from zelda_rlaif.settings import NatsSettings, StoreSettings
from zelda_rlaif.storage import ObjectStore, open_store
from zelda_rlaif.subjects import (
    DEAD_LETTER,
    DEADLETTER_STREAM,
    EPOCH_EXPORTED,
    LIVE_METRICS,
    PIPELINE_STREAM,
    SEGMENT_JUDGED,
    STREAMS,
    ConsumerSpec,
    dead_letter_subject,
)


@pytest.fixture
def store(tmp_path: Path) -> ObjectStore:
    """Where the consumers keep the payloads of dead letters too large to embed."""
    return open_store(StoreSettings(url=f"file://{tmp_path}"))


def epoch_event(run_id: str, epoch: int = 0) -> EpochExported:
    return EpochExported(run_id=run_id, epoch=epoch, segments_exported=2, env_steps=600, episodes=1)


def spec(name: str, *, max_deliver: int = 3, ack_wait_s: float = 30) -> ConsumerSpec[EpochExported]:
    # Each test has its own durable consumer filtered on the shared subject; tests isolate by run id.
    return ConsumerSpec(name, PIPELINE_STREAM, EPOCH_EXPORTED, EPOCH_EXPORTED.subject, max_deliver=max_deliver,
                        ack_wait=timedelta(seconds=ack_wait_s),
                        backoff=(timedelta(milliseconds=50), timedelta(milliseconds=100)))


async def test_provision_is_idempotent(bus: Bus) -> None:
    await bus.provision()
    await bus.provision()
    info = await bus.js.stream_info(PIPELINE_STREAM)
    assert EPOCH_EXPORTED.subject in (info.config.subjects or [])


async def test_republished_event_is_stored_once(bus: Bus, run_id: str) -> None:
    before = (await bus.js.stream_info(PIPELINE_STREAM)).state.messages
    assert await bus.publish(EPOCH_EXPORTED, epoch_event(run_id)) is True
    assert await bus.publish(EPOCH_EXPORTED, epoch_event(run_id)) is False
    after = (await bus.js.stream_info(PIPELINE_STREAM)).state.messages
    assert after == before + 1


async def test_handler_success_acks_once(store: ObjectStore, bus: Bus, run_id: str) -> None:
    seen: list[tuple[str, int]] = []
    stop = asyncio.Event()

    async def handler(event: EpochExported, delivery: Delivery) -> None:
        if event.run_id == run_id:
            seen.append((event.run_id, delivery.deliveries))

    task = asyncio.create_task(run_consumer(bus, spec(f"ok-{run_id}"), handler, stop, store=store))
    await bus.publish(EPOCH_EXPORTED, epoch_event(run_id, 1))
    await wait_until(lambda: len(seen) == 1)
    await asyncio.sleep(0.3)
    stop.set()
    await task
    assert seen == [(run_id, 1)]


async def test_redelivery_after_consumer_dies_without_ack(store: ObjectStore, bus: Bus, nats_settings: NatsSettings,
                                                           run_id: str) -> None:
    consumer = spec(f"crash-{run_id}", ack_wait_s=1.0)
    await bus.ensure_consumer(consumer)
    await bus.publish(EPOCH_EXPORTED, epoch_event(run_id, 2))

    # A first replica takes the message and dies (connection closed, no ack).
    doomed = await Bus.connect(nats_settings, name="doomed")
    sub = await doomed.js.pull_subscribe_bind(durable=consumer.durable, stream=consumer.stream)
    taken = [m for m in await sub.fetch(batch=10, timeout=5) if json.loads(m.data)["run_id"] == run_id]
    assert len(taken) == 1
    await doomed.nc.close()

    # A second replica receives it after ack_wait, marked as the second delivery.
    seen: list[int] = []
    stop = asyncio.Event()

    async def handler(event: EpochExported, delivery: Delivery) -> None:
        if event.run_id == run_id:
            seen.append(delivery.deliveries)

    task = asyncio.create_task(run_consumer(bus, consumer, handler, stop, store=store))
    await wait_until(lambda: seen == [2])
    stop.set()
    await task


async def test_failing_handler_is_retried_then_dead_lettered(store: ObjectStore, bus: Bus, run_id: str) -> None:
    dead = await catch_live(bus, DEAD_LETTER, run_id)
    letters = dead.events
    attempts: list[int] = []
    stop = asyncio.Event()

    async def handler(event: EpochExported, delivery: Delivery) -> None:
        if event.run_id == run_id:
            attempts.append(delivery.deliveries)
            raise RuntimeError("judge backend unavailable")

    task = asyncio.create_task(run_consumer(bus, spec(f"fail-{run_id}", max_deliver=3), handler, stop, store=store))
    await bus.publish(EPOCH_EXPORTED, epoch_event(run_id, 3))
    await wait_until(lambda: len(letters) == 1)
    await asyncio.sleep(0.3)  # nothing more may arrive: the message was terminated
    stop.set()
    await task
    await dead.close()

    assert attempts == [1, 2, 3]
    letter = letters[0]
    assert letter.deliveries == 3 and "judge backend unavailable" in letter.reason
    assert letter.original_subject == EPOCH_EXPORTED.subject and letter.epoch == 3
    assert EpochExported.model_validate_json(letter.payload).run_id == run_id


async def test_permanent_failure_dead_letters_at_once(store: ObjectStore, bus: Bus, run_id: str) -> None:
    dead = await catch_live(bus, DEAD_LETTER, run_id)
    letters = dead.events
    attempts: list[int] = []
    stop = asyncio.Event()

    async def handler(event: EpochExported, delivery: Delivery) -> None:
        if event.run_id == run_id:
            attempts.append(delivery.deliveries)
            raise PermanentFailure("segment objects are missing")

    task = asyncio.create_task(run_consumer(bus, spec(f"perm-{run_id}"), handler, stop, store=store))
    await bus.publish(EPOCH_EXPORTED, epoch_event(run_id, 4))
    await wait_until(lambda: len(letters) == 1)
    stop.set()
    await task
    await dead.close()
    assert attempts == [1]


async def test_invalid_payload_is_terminated_and_consumer_goes_on(store: ObjectStore, bus: Bus, run_id: str) -> None:
    dead = await catch_live(bus, DEAD_LETTER, run_id)
    letters = dead.events
    handled: list[int] = []
    stop = asyncio.Event()

    async def handler(event: EpochExported, delivery: Delivery) -> None:
        if event.run_id == run_id:
            handled.append(event.epoch)

    task = asyncio.create_task(run_consumer(bus, spec(f"bad-{run_id}"), handler, stop, store=store))
    bad = json.dumps({"run_id": run_id, "epoch": 5, "segments_exported": -1}).encode()
    await bus.js.publish(EPOCH_EXPORTED.subject, bad)
    await bus.publish(EPOCH_EXPORTED, epoch_event(run_id, 6))
    await wait_until(lambda: len(letters) == 1 and handled == [6])
    stop.set()
    await task
    await dead.close()
    assert "invalid EpochExported payload" in letters[0].reason
    assert "segments_exported" in letters[0].reason
    assert letters[0].deliveries == 1


async def test_last_delivery_lost_to_a_crash_is_dead_lettered(store: ObjectStore, bus: Bus, nats_settings: NatsSettings,
                                                              run_id: str) -> None:
    """A replica that dies holding the message on its final delivery still leaves a dead letter."""
    consumer = spec(f"lost-{run_id}", max_deliver=1, ack_wait_s=0.5)
    dead = await catch_live(bus, DEAD_LETTER, run_id)
    letters = dead.events
    stop = asyncio.Event()

    async def never_called(event: EpochExported, delivery: Delivery) -> None:
        raise AssertionError("the message must not be delivered again")

    # A live replica watches the advisories while another one takes the message and dies.
    task = asyncio.create_task(run_consumer(bus, consumer, never_called, stop, store=store, fetch_timeout_s=0.2))
    await asyncio.sleep(0.2)
    stop.set()
    await task  # the consumer exists now; restart only its advisory watcher below
    stop = asyncio.Event()
    from zelda_rlaif.bus.consumer import watch_max_deliveries

    watcher = asyncio.create_task(watch_max_deliveries(bus, store, consumer, stop, None))
    await asyncio.sleep(0.1)
    await bus.publish(EPOCH_EXPORTED, epoch_event(run_id, 7))
    doomed = await Bus.connect(nats_settings, name="doomed-last")
    sub = await doomed.js.pull_subscribe_bind(durable=consumer.durable, stream=consumer.stream)
    assert len(await sub.fetch(batch=1, timeout=5)) == 1
    await doomed.nc.close()

    await wait_until(lambda: len(letters) == 1, timeout_s=15)
    stop.set()
    await watcher
    await dead.close()
    assert "without being acknowledged" in letters[0].reason
    assert EpochExported.model_validate_json(letters[0].payload).epoch == 7


async def test_coordination_bucket_grants_a_key_once(bus: Bus, run_id: str) -> None:
    kv = await bus.coordination()
    await kv.create(f"{run_id}.once", b"a")
    try:
        await kv.create(f"{run_id}.once", b"b")
    except Exception as exc:
        assert "wrong last sequence" in str(exc).lower() or "exists" in str(exc).lower()
    else:
        raise AssertionError("a second create of the same key must fail")


@pytest.mark.parametrize(("pattern", "subject", "matches"), [
    ("zelda.scores.ready", "zelda.scores.ready", True),
    ("zelda.scores.ready", "zelda.scores", False),
    ("zelda.segment.judged.*", "zelda.segment.judged.state", True),
    ("zelda.segment.judged.*", "zelda.segment.judged", False),
    ("zelda.segment.judged.*", "zelda.segment.judged.state.extra", False),
    ("zelda.deadletter.>", "zelda.deadletter.segment.exported", True),
    ("zelda.deadletter.>", "zelda.deadletter", False),
    ("zelda.*.frames.>", "zelda.hud.frames.env-0", True),
])
def test_subject_matching_follows_nats_wildcards(pattern: str, subject: str, matches: bool) -> None:
    assert subject_matches(pattern, subject) is matches


def verdict(run_id: str) -> SegmentJudged:
    return SegmentJudged(run_id=run_id, epoch=1, segment_id="s-1", kind=JudgeKind.STATE, backend="rules",
                         model="rules-v1", scores={"progress": 0.5}, agreement=1.0, votes=1, rationale="")


def test_router_validates_and_dispatches_by_topic() -> None:
    invalid: list[tuple[InvalidMessage, int]] = []
    routed: list[tuple[SegmentJudged, int]] = []

    def on_invalid(message: InvalidMessage, n: int) -> str:
        invalid.append((message, n))
        return "invalid"

    def on_judged(event: SegmentJudged, n: int) -> str:
        routed.append((event, n))
        return "judged"

    router: Router[[int], str] = Router(on_invalid)
    router.route(SEGMENT_JUDGED, on_judged)
    router.route(DEAD_LETTER, lambda letter, n: "dead letter")

    event = verdict("r")
    assert router.dispatch(SEGMENT_JUDGED.for_kind(JudgeKind.STATE), event.model_dump_json().encode(), 1) == "judged"
    assert routed == [(event, 1)]
    assert router.topic_of(dead_letter_subject(SEGMENT_JUDGED.for_kind(JudgeKind.STATE))) == DEAD_LETTER

    assert router.dispatch(SEGMENT_JUDGED.for_kind(JudgeKind.STATE), b'{"run_id": "r"}', 2) == "invalid"
    assert router.dispatch(EPOCH_EXPORTED.subject, epoch_event("r").model_dump_json().encode(), 3) == "invalid"
    (bad, n), (unmatched, m) = invalid
    assert (bad.topic, n) == (SEGMENT_JUDGED, 2) and "invalid SegmentJudged payload" in bad.reason
    assert bad.errors(limit=1)[0]["type"] == "missing" and len(bad.errors()) > 1
    assert (unmatched.topic, m) == (None, 3) and unmatched.errors() == []
    assert unmatched.reason == f"no routed topic matches subject {EPOCH_EXPORTED.subject}"

    with pytest.raises(ValueError, match="routed twice"):
        router.route(DEAD_LETTER, lambda letter, n: "again")


async def test_router_subscribes_live_and_follows_streams_without_taking_work(bus: Bus, run_id: str) -> None:
    metrics: list[LiveMetrics] = []
    epochs: list[EpochExported] = []
    invalid: list[InvalidMessage] = []
    router: Router[[], None] = Router(invalid.append)
    router.route(LIVE_METRICS, lambda event: metrics.append(event) if event.run_id == run_id else None)
    router.route(EPOCH_EXPORTED, lambda event: epochs.append(event) if event.run_id == run_id else None)
    assert router.streams() == [s for s in STREAMS if s.name == PIPELINE_STREAM]

    await bus.publish(EPOCH_EXPORTED, epoch_event(run_id, 0))  # before subscribing: not read
    subscriptions = await router.subscribe(bus)
    try:
        await bus.publish_live(LIVE_METRICS.subject, LiveMetrics(
            run_id=run_id, epoch=1, env_steps=1, env_steps_per_s=1.0, episodes=EpisodeStats.of([], [])))
        for _ in range(2):  # stored once: read once
            await bus.publish(EPOCH_EXPORTED, epoch_event(run_id, 1))
        await bus.js.publish(EPOCH_EXPORTED.subject, json.dumps({"run_id": run_id, "epoch": "one"}).encode())
        await bus.publish(EPOCH_EXPORTED, epoch_event(run_id, 2))
        await wait_until(lambda: len(metrics) == 1 and [e.epoch for e in epochs] == [1, 2])
        assert len(invalid) == 1 and invalid[0].topic == EPOCH_EXPORTED

        readers = [c for c in await bus.js.consumers_info(PIPELINE_STREAM) if c.config.deliver_subject]
        assert readers and all(c.config.durable_name is None and c.config.ack_policy == AckPolicy.NONE
                               for c in readers)
        assert not [c for c in await bus.js.consumers_info(DEADLETTER_STREAM) if c.config.deliver_subject
                    and EPOCH_EXPORTED.subject in (c.config.filter_subjects or [])]
    finally:
        for subscription in subscriptions:
            await subscription.unsubscribe()
