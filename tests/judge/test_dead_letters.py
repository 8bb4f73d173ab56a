"""Dead letters and the ledger: only a valid ``segment.exported`` counts in an epoch; an invalid event, whatever
ids can be salvaged from it, changes no ledger state and stays visible as a dead letter."""

from __future__ import annotations

import asyncio
import json

from nats.js.errors import KeyNotFoundError

from tests.judge.conftest import SettingsFactory, one_per_kind, running
from tests.support.segments import write_epoch
from tests.support.streams import stored_events
from tests.support.waiting import wait_until
from zelda_judge.ledger import scores_ready_marker
from zelda_judge.segment_io import AsyncStore
from zelda_judge.service import segment_of
from zelda_rlaif.bus import Bus
from zelda_rlaif.events import DeadLetter, JudgeKind
from zelda_rlaif.storage import ObjectStore, keys
from zelda_rlaif.subjects import (
    DEAD_LETTER,
    DEADLETTER_STREAM,
    EPOCH_EXPORTED,
    PIPELINE_STREAM,
    SCORES_READY,
    SEGMENT_EXPORTED,
    judge_dead_letter_consumer,
)


async def dead_letters_settled(bus: Bus, at_least: int) -> bool:
    """Every kind's dead-letter consumer has taken and settled ``at_least`` letters."""
    for kind in JudgeKind:
        info = await bus.js.consumer_info(DEADLETTER_STREAM, judge_dead_letter_consumer(kind).durable)
        if info.num_pending or info.num_ack_pending or info.delivered.consumer_seq < at_least:
            return False
    return True


async def test_an_invalid_segment_event_never_counts_in_an_epoch(
        private_bus: Bus, store: ObjectStore, run_id: str, judge_settings: SettingsFactory) -> None:
    events, announced = write_epoch(store, run_id=run_id, epoch=1, segments=2)
    first, second = events
    # Both name this run's epoch 1: one a segment that does not exist, one the real second segment in a schema
    # version nobody speaks. Counting either (from the ids the bus salvages) would close the epoch early.
    forged = {"run_id": run_id, "epoch": 1, "segment_id": "forged"}
    wrong_version = {**second.model_dump(mode="json"), "schema_version": 1}
    async with running(*one_per_kind(judge_settings)):
        await private_bus.publish(EPOCH_EXPORTED, announced)
        await private_bus.publish(SEGMENT_EXPORTED, first)
        for payload in (forged, wrong_version):
            await private_bus.js.publish(SEGMENT_EXPORTED.subject, json.dumps(payload).encode())
        await wait_until(lambda: store.exists(keys.scored_segment(run_id, 1, first.segment_id)), what="first scored")
        await wait_until(lambda: dead_letters_settled(private_bus, at_least=2 * len(JudgeKind)),
                         what="every kind's dead letters recorded")
        await asyncio.sleep(0.3)  # a close, if one were coming, is published by now

        assert list(store.list(keys.unjudged_segments(run_id, 1))) == []
        assert not store.exists(keys.epoch_scores(run_id, 1))
        assert not await _closed(private_bus, run_id, 1)
        assert [e for e in await stored_events(private_bus, SCORES_READY) if e.run_id == run_id] == []

        await private_bus.publish(SEGMENT_EXPORTED, second)  # the real one closes the epoch, with both scored
        await wait_until(lambda: store.exists(keys.epoch_scores(run_id, 1)), what="scores.jsonl")

    (ready,) = [e for e in await stored_events(private_bus, SCORES_READY) if e.run_id == run_id]
    assert (ready.segments_scored, ready.segments_unjudged) == (2, 0)
    # The invalid events are still there to read, as dead letters of every kind, with their salvaged ids.
    letters = [letter for letter in await stored_events(private_bus, DEAD_LETTER, stream=DEADLETTER_STREAM)
               if letter.run_id == run_id]
    assert sorted((letter.consumer, letter.segment_id) for letter in letters) == sorted(
        (f"judge-{kind.value}", segment) for kind in JudgeKind for segment in ("forged", second.segment_id))
    assert all(letter.original_subject == SEGMENT_EXPORTED.subject for letter in letters)


async def _closed(bus: Bus, run_id: str, epoch: int) -> bool:
    kv = await bus.coordination()
    try:
        await kv.get(scores_ready_marker(run_id, epoch))
    except KeyNotFoundError:
        return False
    return True


async def test_the_segment_of_a_dead_letter_comes_only_from_its_payload(store: ObjectStore, run_id: str) -> None:
    (event,), _ = write_epoch(store, run_id=run_id, epoch=0, segments=1)
    astore = AsyncStore(store)
    key = keys.dead_letter_payload(PIPELINE_STREAM, "judge-state", 7, "0" * 64)
    store.put_bytes(key, event.model_dump_json().encode())

    def letter(**fields: object) -> DeadLetter:
        base: dict[str, object] = {"original_subject": SEGMENT_EXPORTED.subject, "stream": PIPELINE_STREAM,
                                   "consumer": "judge-state", "stream_sequence": 7, "deliveries": 1, "reason": "r",
                                   "payload": b""}
        return DeadLetter.model_validate({**base, **fields})

    try:
        assert await segment_of(letter(payload=event.model_dump_json().encode()), astore) == event
        assert await segment_of(letter(payload_key=key), astore) == event  # a payload too large to embed
        salvaged = letter(payload=b'{"run_id": "x"}', run_id=run_id, epoch=0, segment_id=event.segment_id)
        assert await segment_of(salvaged, astore) is None
        assert await segment_of(letter(payload_key=key + ".gone"), astore) is None
    finally:
        astore.close()
