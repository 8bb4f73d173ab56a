"""A durable consumer against payloads that break decoding, and against a store that fails while dead-lettering.

Each test has a NATS server of its own, so the consumer sees only the messages the test publishes.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
from datetime import timedelta
from pathlib import Path

from pydantic import field_validator

from tests.support.streams import catch_live
from tests.support.waiting import wait_until
from zelda_rlaif.bus import Bus, Delivery, InvalidMessage, Router, run_consumer
from zelda_rlaif.bus.consumer import dead_letter_payload, embeddable
from zelda_rlaif.events import EpochExported, Event
from zelda_rlaif.storage import ObjectStore, keys
from zelda_rlaif.storage.file import FileStore
from zelda_rlaif.subjects import DEAD_LETTER, EPOCH_EXPORTED, PIPELINE_STREAM, ConsumerSpec, Topic


def spec(name: str, *, max_deliver: int = 3, backoff_s: float = 0.05) -> ConsumerSpec[EpochExported]:
    return ConsumerSpec(name, PIPELINE_STREAM, EPOCH_EXPORTED, EPOCH_EXPORTED.subject, max_deliver=max_deliver,
                        ack_wait=timedelta(seconds=30), backoff=(timedelta(seconds=backoff_s),))


def epoch_event(run_id: str, epoch: int) -> EpochExported:
    return EpochExported(run_id=run_id, epoch=epoch, segments_exported=1, env_steps=600, episodes=1)


class Handled:
    """The epochs a consumer handled, to see it still consumes after the bad messages."""

    def __init__(self) -> None:
        self.epochs: list[int] = []

    async def __call__(self, event: EpochExported, delivery: Delivery) -> None:
        self.epochs.append(event.epoch)


async def test_nested_and_oversized_payloads_are_dead_lettered_and_consuming_goes_on(
        private_bus: Bus, tmp_path: Path, run_id: str) -> None:
    store = FileStore(tmp_path / "store")
    # json.loads raises RecursionError on this (it is not a ValueError); pydantic refuses it as too deep.
    nested = b'{"run_id": "' + run_id.encode() + b'", "epoch": 1, "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    # Valid JSON with salvageable ids, invalid as an EpochExported, and too large to travel base64 in a letter.
    oversized = json.dumps({"run_id": run_id, "epoch": 2, "segments_exported": 1, "env_steps": 1, "episodes": 1,
                            "padding": "x" * 900_000}).encode()
    assert embeddable(nested, private_bus.nc.max_payload) and not embeddable(oversized, private_bus.nc.max_payload)

    dead = await catch_live(private_bus, DEAD_LETTER)
    handled = Handled()
    stop = asyncio.Event()
    task = asyncio.create_task(run_consumer(private_bus, spec("faults"), handled, stop, store=store))
    try:
        await private_bus.js.publish(EPOCH_EXPORTED.subject, nested)
        await private_bus.js.publish(EPOCH_EXPORTED.subject, oversized)
        await private_bus.publish(EPOCH_EXPORTED, epoch_event(run_id, 3))
        await wait_until(lambda: len(dead.events) == 2 and handled.epochs == [3], what="2 dead letters, then epoch 3")
    finally:
        stop.set()
        await task
        await dead.close()

    deep, large = sorted(dead.events, key=lambda letter: letter.stream_sequence or 0)
    assert deep.payload == nested and deep.payload_key is None
    assert "invalid EpochExported payload" in deep.reason and deep.deliveries == 1
    assert deep.run_id is None  # nothing could be salvaged from it, and that did not stop anything

    assert large.payload == b"" and large.payload_key is not None
    assert large.payload_key.startswith("deadletters/")
    assert store.get_bytes(large.payload_key) == oversized
    assert await dead_letter_payload(large, store) == oversized
    assert (large.run_id, large.epoch) == (run_id, 2) and "padding" in large.reason
    assert len(large.reason) <= 4000 and len(large.model_dump_json()) < private_bus.nc.max_payload


class Fragile(Event):
    """A payload model whose validator raises TypeError, which pydantic passes through (it is no ValidationError)."""

    x: int

    @field_validator("x")
    @classmethod
    def _thirteen(cls, value: int) -> int:
        if value == 13:
            raise TypeError("13 breaks this validator")
        return value


def test_router_routes_any_decoding_failure_to_on_invalid() -> None:
    invalid: list[InvalidMessage] = []
    router: Router[[], int | None] = Router(lambda message: invalid.append(message))
    router.route(Topic("test.fragile", Fragile), lambda event: event.x)
    assert router.dispatch("test.fragile", b'{"x": 1}') == 1
    router.dispatch("test.fragile", b'{"x": 13}')
    (message,) = invalid
    assert isinstance(message.error, TypeError) and "TypeError: 13 breaks this validator" in message.reason
    assert message.errors(limit=1)[0]["type"] == "undecodable"


async def test_a_validator_raising_anything_is_dead_lettered(private_bus: Bus, tmp_path: Path) -> None:
    fragile = Topic(EPOCH_EXPORTED.subject, Fragile)
    consumer: ConsumerSpec[Fragile] = ConsumerSpec("fragile", PIPELINE_STREAM, fragile, fragile.subject,
                                                   max_deliver=3, backoff=(timedelta(milliseconds=50),))
    handled: list[int] = []

    async def handler(event: Fragile, delivery: Delivery) -> None:
        handled.append(event.x)

    dead = await catch_live(private_bus, DEAD_LETTER)
    stop = asyncio.Event()
    task = asyncio.create_task(run_consumer(private_bus, consumer, handler, stop, store=FileStore(tmp_path / "store")))
    try:
        await private_bus.js.publish(fragile.subject, b'{"x": 13}')
        await private_bus.js.publish(fragile.subject, b'{"x": 14}')
        await wait_until(lambda: len(dead.events) == 1 and handled == [14], what="a dead letter, then x=14")
    finally:
        stop.set()
        await task
        await dead.close()
    (letter,) = dead.events
    assert "TypeError: 13 breaks this validator" in letter.reason and letter.payload == b'{"x": 13}'


async def test_a_failing_store_leaves_the_message_to_be_redelivered(private_bus: Bus, tmp_path: Path,
                                                                   run_id: str) -> None:
    """Nothing is lost: a payload that cannot be stored is not terminated, and a later delivery dead-letters it."""
    root = tmp_path / "store"
    store: ObjectStore = FileStore(root)
    (root / "deadletters").write_bytes(b"a file where the dead-letter directory must go")  # every put fails
    oversized = json.dumps({"run_id": run_id, "epoch": 6, "padding": base64.b64encode(b"\0" * 700_000).decode()})

    dead = await catch_live(private_bus, DEAD_LETTER, run_id)
    handled = Handled()
    stop = asyncio.Event()
    # Deliveries far enough apart, and enough of them, that the store recovers before the last one.
    consumer = spec("failing-store", max_deliver=20, backoff_s=0.5)
    task = asyncio.create_task(run_consumer(private_bus, consumer, handled, stop, store=store))
    try:
        await private_bus.js.publish(EPOCH_EXPORTED.subject, oversized.encode())

        async def redelivered() -> bool:
            info = await private_bus.js.consumer_info(PIPELINE_STREAM, consumer.durable)
            return info.num_redelivered >= 1

        await wait_until(redelivered, what="a redelivery after the store failed")
        assert dead.events == []
        (root / "deadletters").unlink()  # the store recovers
        await wait_until(lambda: len(dead.events) == 1, what="the dead letter once the store works")
        await private_bus.publish(EPOCH_EXPORTED, epoch_event(run_id, 7))
        await wait_until(lambda: handled.epochs == [7], what="epoch 7 consumed after")
    finally:
        stop.set()
        await task
        await dead.close()

    (letter,) = dead.events
    assert letter.deliveries >= 2 and letter.payload_key is not None
    assert store.get_bytes(letter.payload_key) == oversized.encode()
    digest = hashlib.sha256(oversized.encode()).hexdigest()
    assert letter.payload_key == keys.dead_letter_payload(PIPELINE_STREAM, consumer.durable, letter.stream_sequence,
                                                          digest)
