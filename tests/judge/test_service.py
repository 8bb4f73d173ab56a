"""The judge service end to end in one process: real NATS, a real S3 server, the OpenAI test server."""

from __future__ import annotations

import asyncio
import json
import statistics
from typing import Any

import httpx
import pytest

from tests.judge.conftest import SettingsFactory, one_per_kind, running
from tests.support.openai_server import OpenAIServer
from tests.support.segments import write_epoch, write_segment
from tests.support.streams import stored_events
from tests.support.waiting import free_port, wait_until
from zelda_judge.kinds import ALL_DIMENSIONS
from zelda_judge.ledger import scores_ready_marker
from zelda_judge.rubric import RubricWeights, combine
from zelda_judge.rule_scores import RULES_MODEL
from zelda_rlaif.bus import Bus, Delivery
from zelda_rlaif.events import DeadLetter, JudgeKind, ScoresReady, SegmentScored
from zelda_rlaif.storage import ObjectStore, keys
from zelda_rlaif.subjects import (
    DEAD_LETTER,
    DEADLETTER_STREAM,
    EPOCH_EXPORTED,
    SCORES_READY,
    SEGMENT_EXPORTED,
    SEGMENT_JUDGED,
    SEGMENT_SCORED,
)
from zelda_rlaif.verdicts import VerdictRecord


async def scores_ready(bus: Bus, run_id: str) -> list[ScoresReady]:
    return [e for e in await stored_events(bus, SCORES_READY) if e.run_id == run_id]


def scores_lines(store: ObjectStore, run_id: str, epoch: int) -> list[SegmentScored]:
    return [SegmentScored.model_validate(row) for row in store.get_jsonl(keys.epoch_scores(run_id, epoch))]


@pytest.mark.parametrize("epoch_first", [True, False], ids=["epoch-exported-first", "epoch-exported-last"])
async def test_every_kind_scores_an_epoch_once(private_bus: Bus, store: ObjectStore, llm: OpenAIServer, run_id: str,
                                              judge_settings: SettingsFactory, epoch_first: bool) -> None:
    events, announced = write_epoch(store, run_id=run_id, epoch=1, segments=6)
    llm_kinds: dict[str, dict[str, Any]] = {"state": {"backend": "openai"},
                                            "vision": {"backend": "openai", "key_frames": 2}}
    async with running(*one_per_kind(judge_settings, **llm_kinds)):
        if epoch_first:
            await private_bus.publish(EPOCH_EXPORTED, announced)
        for event in events:
            await private_bus.publish(SEGMENT_EXPORTED, event)
        if not epoch_first:
            await wait_until(lambda: len(list(store.list(keys.scored_segments(run_id, 1)))) == 6, what="6 scored")
            assert not store.exists(keys.epoch_scores(run_id, 1))  # nothing closes before the epoch is announced
            await private_bus.publish(EPOCH_EXPORTED, announced)
        await wait_until(lambda: store.exists(keys.epoch_scores(run_id, 1)), what="scores.jsonl")
        await asyncio.sleep(0.3)  # anything extra would be published by now

    (ready,) = await scores_ready(private_bus, run_id)
    assert (ready.epoch, ready.segments_scored, ready.segments_unjudged) == (1, 6, 0)
    lines = scores_lines(store, run_id, 1)
    assert sorted(line.segment_id for line in lines) == sorted(e.segment_id for e in events)
    for line in lines:
        assert set(line.dimensions) == set(ALL_DIMENSIONS)
        assert line.combined == combine(line.dimensions, RubricWeights())
        assert line == SegmentScored.model_validate_json(
            store.get_bytes(keys.scored_segment(run_id, 1, line.segment_id)))

    judged = [e for e in await stored_events(private_bus, SEGMENT_JUDGED) if e.run_id == run_id]
    assert len(judged) == 6 * len(JudgeKind)
    by_kind = {kind: [v for v in judged if v.kind is kind] for kind in JudgeKind}
    for kind, verdicts in by_kind.items():
        model, votes = (llm.model, 3) if kind.value in llm_kinds else (RULES_MODEL, 1)
        assert len(verdicts) == 6 and all(v.model == model and v.votes == votes for v in verdicts)
    stored = VerdictRecord.model_validate_json(store.get_bytes(keys.verdict(run_id, 1, events[0].segment_id, "state")))
    assert stored.verdict in by_kind[JudgeKind.STATE]
    # The record keeps every vote behind the published medians (replays show them).
    assert len(stored.votes) == 3 and len({v.seed for v in stored.votes}) == 3
    for dimension, median in stored.verdict.scores.items():
        assert median == statistics.median(v.scores[dimension] for v in stored.votes)
    assert stored.verdict.rationale in {v.rationale for v in stored.votes}
    rules = VerdictRecord.model_validate_json(store.get_bytes(keys.verdict(run_id, 1, events[0].segment_id, "puzzle")))
    assert [(v.scores, v.rationale) for v in rules.votes] == [(rules.verdict.scores, rules.verdict.rationale)]
    scored = [e for e in await stored_events(private_bus, SEGMENT_SCORED) if e.run_id == run_id]
    assert len(scored) == 6
    # vision requests carried frames; state requests did not
    vision = [r for r in llm.chat_requests() if "novelty" in json.dumps(r.body["response_format"])]
    assert len(vision) == 18 and all(isinstance(r.body["messages"][1]["content"], list) for r in vision)
    assert (await (await private_bus.coordination()).get(scores_ready_marker(run_id, 1))).value


async def test_persistent_garbage_is_dead_lettered_and_counted_unjudged(
        private_bus: Bus, store: ObjectStore, llm: OpenAIServer, run_id: str, judge_settings: SettingsFactory) -> None:
    events, announced = write_epoch(store, run_id=run_id, epoch=0, segments=2)
    llm.fail_always("out_of_range")
    async with running(*one_per_kind(judge_settings, puzzle={"backend": "openai", "votes": 1})):
        await private_bus.publish(EPOCH_EXPORTED, announced)
        for event in events:
            await private_bus.publish(SEGMENT_EXPORTED, event)
        await wait_until(lambda: store.exists(keys.epoch_scores(run_id, 0)), what="scores.jsonl")

    (ready,) = await scores_ready(private_bus, run_id)
    assert (ready.segments_scored, ready.segments_unjudged) == (0, 2)
    assert store.get_bytes(keys.epoch_scores(run_id, 0)) == b""
    for event in events:
        assert not store.exists(keys.verdict(run_id, 0, event.segment_id, "puzzle"))  # never a made-up score
        assert not store.exists(keys.scored_segment(run_id, 0, event.segment_id))
        record = store.get_json(keys.unjudged_segment(run_id, 0, event.segment_id))
        assert record["reasons"]["puzzle"]["deliveries"] == 3
        assert "out of range" in record["reasons"]["puzzle"]["reason"]
    # max_deliver=3 deliveries x (1 + llm_retries=1) attempts, for each segment
    assert len(llm.chat_requests()) == 2 * 3 * 2
    letters = [d for d in await stored_events(private_bus, DEAD_LETTER, stream=DEADLETTER_STREAM) if d.run_id == run_id]
    assert [d.consumer for d in letters] == ["judge-puzzle", "judge-puzzle"]


async def test_transient_failure_recovers_on_redelivery(
        private_bus: Bus, store: ObjectStore, llm: OpenAIServer, run_id: str, judge_settings: SettingsFactory) -> None:
    events, announced = write_epoch(store, run_id=run_id, epoch=0, segments=1)
    llm.fail_next("http_500", times=2)  # more than one delivery's retries: the bus must redeliver
    async with running(*one_per_kind(judge_settings, state={"backend": "openai", "votes": 1})):
        await private_bus.publish(SEGMENT_EXPORTED, events[0])
        await private_bus.publish(EPOCH_EXPORTED, announced)
        await wait_until(lambda: store.exists(keys.epoch_scores(run_id, 0)), what="scores.jsonl")
    (ready,) = await scores_ready(private_bus, run_id)
    assert (ready.segments_scored, ready.segments_unjudged) == (1, 0)
    assert [r.fault for r in llm.chat_requests()] == ["http_500", "http_500", None]
    assert not list(store.list(keys.unjudged_segments(run_id, 0)))


async def test_missing_segment_is_dead_lettered_at_once(
        private_bus: Bus, store: ObjectStore, run_id: str, judge_settings: SettingsFactory) -> None:
    events, announced = write_epoch(store, run_id=run_id, epoch=0, segments=2)
    store.delete(keys.segment_states(run_id, 0, events[1].segment_id))
    async with running(*one_per_kind(judge_settings)):
        await private_bus.publish(EPOCH_EXPORTED, announced)
        for event in events:
            await private_bus.publish(SEGMENT_EXPORTED, event)
        await wait_until(lambda: store.exists(keys.epoch_scores(run_id, 0)), what="scores.jsonl")
    (ready,) = await scores_ready(private_bus, run_id)
    assert (ready.segments_scored, ready.segments_unjudged) == (1, 1)
    record = store.get_json(keys.unjudged_segment(run_id, 0, events[1].segment_id))
    # Every kind gave up at the same instant; the record keeps at least one reason (read-merge-write), and
    # the dead-letter stream keeps every kind's letter.
    assert record["reasons"] and set(record["reasons"]) <= {kind.value for kind in JudgeKind}
    assert all(r["deliveries"] == 1 and "states.jsonl" in r["reason"] for r in record["reasons"].values())
    letters = [d for d in await stored_events(private_bus, DEAD_LETTER, stream=DEADLETTER_STREAM) if d.run_id == run_id]
    assert sorted(d.consumer for d in letters) == sorted(f"judge-{kind.value}" for kind in JudgeKind)


async def test_redelivered_segment_reuses_its_verdict(
        private_bus: Bus, store: ObjectStore, llm: OpenAIServer, run_id: str, judge_settings: SettingsFactory) -> None:
    from zelda_judge.ledger import ScoreLedger
    from zelda_judge.metrics import JudgeMetrics
    from zelda_judge.segment_io import AsyncStore
    from zelda_judge.service import JudgeService, make_backend

    settings = judge_settings("state", backend="openai")
    metrics = JudgeMetrics("state")
    astore = AsyncStore(store)
    backend = make_backend(settings, metrics)
    ledger = ScoreLedger(astore, private_bus, await private_bus.coordination(), settings.rubric)
    service = JudgeService(settings, private_bus, astore, ledger, backend, metrics)
    event = write_segment(store, run_id=run_id, epoch=0, segment_id="again")
    key = keys.verdict(run_id, 0, "again", "state")
    try:
        await service.on_segment(event, Delivery("x", 1, 3, None))
        first = store.get_bytes(key)
        await service.on_segment(event, Delivery("x", 2, 3, None))  # e.g. the ack was lost
    finally:
        await backend.aclose()
        astore.close()
    assert store.get_bytes(key) == first
    assert len(llm.chat_requests()) == 3  # the second delivery asked nobody
    assert "zelda_judge_segments_total{kind=\"state\",outcome=\"reused\"} 1.0" in metrics.render().decode()


async def test_dead_letter_recorded_even_if_the_hook_never_ran(
        private_bus: Bus, store: ObjectStore, run_id: str, judge_settings: SettingsFactory) -> None:
    """A replica that dies between dead-lettering and recording: the durable dead-letter consumer records it."""
    from zelda_rlaif.bus.consumer import dead_letter
    from zelda_rlaif.subjects import judge_consumer

    events, announced = write_epoch(store, run_id=run_id, epoch=3, segments=1)
    await private_bus.publish(EPOCH_EXPORTED, announced)
    letter: DeadLetter = await dead_letter(private_bus, store, judge_consumer(JudgeKind.VISION),
                                           SEGMENT_EXPORTED.subject, events[0].model_dump_json().encode(),
                                           "LLM down for an hour", 5, 4242)
    assert letter.segment_id == events[0].segment_id
    async with running(*one_per_kind(judge_settings)):
        await wait_until(lambda: store.exists(keys.epoch_scores(run_id, 3)), what="scores.jsonl")
    (ready,) = await scores_ready(private_bus, run_id)
    assert (ready.segments_scored, ready.segments_unjudged) == (0, 1)
    assert store.get_json(keys.unjudged_segment(run_id, 3, events[0].segment_id))["reasons"]["vision"] == {
        "reason": "LLM down for an hour", "deliveries": 5}


async def test_health_and_metrics_endpoints(private_bus: Bus, store: ObjectStore, llm: OpenAIServer, run_id: str,
                                           judge_settings: SettingsFactory) -> None:
    port = free_port()
    event = write_segment(store, run_id=run_id, epoch=0, segment_id="probe")
    judged = 'zelda_judge_segments_total{kind="state",outcome="judged"} 1.0'
    async with running(judge_settings("state", backend="openai", http_port=port, http_host="127.0.0.1")), \
            httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
        await private_bus.publish(SEGMENT_EXPORTED, event)

        async def counted() -> bool:
            try:
                return judged in (await client.get("/metrics")).text
            except httpx.ConnectError:  # the replica's HTTP server is not listening yet (a loaded machine)
                return False

        await wait_until(counted, what="the segment counted in /metrics")
        health = (await client.get("/healthz")).json()
        metrics = (await client.get("/metrics")).text
    assert health == {"ok": True, "kind": "state", "backend": "openai", "model": llm.model, "nats_connected": True}
    assert 'zelda_judge_llm_requests_total{kind="state",outcome="ok"} 3.0' in metrics
    assert judged in metrics and store.exists(keys.verdict(run_id, 0, "probe", "state"))
    assert 'zelda_judge_vote_agreement_count{kind="state"} 1.0' in metrics
    assert "zelda_judge_llm_request_seconds_bucket" in metrics
