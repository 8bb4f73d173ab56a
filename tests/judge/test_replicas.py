"""Five judge replicas as real processes, one SIGKILLed mid-run: every segment scored once, one scores.ready."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tests.support.openai_server import OpenAIServer
from tests.support.segments import write_epoch
from tests.support.streams import stored_events
from tests.support.waiting import free_port, wait_until
from zelda_rlaif.bus import Bus
from zelda_rlaif.embedded_nats import EmbeddedNats
from zelda_rlaif.events import JudgeKind, SegmentJudged
from zelda_rlaif.settings import NatsSettings, StoreSettings
from zelda_rlaif.storage import ObjectStore, keys
from zelda_rlaif.subjects import EPOCH_EXPORTED, SCORES_READY, SEGMENT_EXPORTED, SEGMENT_JUDGED, SEGMENT_SCORED

SEGMENTS = 40
pytestmark = pytest.mark.slow




class Replica:
    def __init__(self, kind: str, env: dict[str, str], log_dir: Path, index: int) -> None:
        self.kind = kind
        self.port = free_port()
        self.log_path = log_dir / f"judge-{kind}-{index}.log"
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "zelda_rlaif.cli", "judge", "--kind", kind, "--http-port", str(self.port)],
                env={**env, "ZELDA_JUDGE_HTTP_HOST": "127.0.0.1"}, stdout=log, stderr=subprocess.STDOUT,
            )

    async def get(self, path: str) -> httpx.Response | None:
        try:
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{self.port}", timeout=2) as client:
                return await client.get(path)
        except httpx.TransportError:
            return None

    async def judged(self) -> float:
        response = await self.get("/metrics")
        if response is None:
            return 0.0
        for line in response.text.splitlines():
            if line.startswith(f'zelda_judge_segments_total{{kind="{self.kind}",outcome="judged"}}'):
                return float(line.split()[-1])
        return 0.0


@pytest.fixture
def llm(openai_server: Callable[..., OpenAIServer]) -> OpenAIServer:
    return openai_server(latency_s=0.2)


async def test_forty_segments_five_replicas_one_killed(tmp_path: Path, store: ObjectStore,
                                                      s3_store_settings: StoreSettings, llm: OpenAIServer,
                                                      private_nats: EmbeddedNats, run_id: str) -> None:
    nats = private_nats
    assert s3_store_settings.s3_endpoint and s3_store_settings.s3_access_key and s3_store_settings.s3_secret_key
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("ZELDA_")},
        "ZELDA_NATS_URL": nats.url,
        "ZELDA_STORE_URL": s3_store_settings.url,
        "ZELDA_STORE_S3_ENDPOINT": s3_store_settings.s3_endpoint,
        "ZELDA_STORE_S3_ACCESS_KEY": s3_store_settings.s3_access_key.get_secret_value(),
        "ZELDA_STORE_S3_SECRET_KEY": s3_store_settings.s3_secret_key.get_secret_value(),
        "ZELDA_JUDGE_BACKEND": "openai",
        "ZELDA_JUDGE_LLM_URL": llm.url,
        "ZELDA_JUDGE_LLM_MODEL": llm.model,
        "ZELDA_JUDGE_LLM_TIMEOUT_S": "5",
        "ZELDA_JUDGE_ENDPOINTS__STATE__MAX_IN_FLIGHT": "3",  # one segment's 3 votes at a time per state replica
        "ZELDA_JUDGE_ENDPOINTS__VISION__MAX_IN_FLIGHT": "12",
        "ZELDA_JUDGE_KEY_FRAMES": "2",
        "ZELDA_JUDGE_ACK_WAIT_S": "2",  # the killed replica's segment comes back after 2 s
        "ZELDA_JUDGE_REDELIVERY_BACKOFF_S": "0.1",
        "ZELDA_LOG_LEVEL": "INFO",
    }
    bus = await Bus.connect(NatsSettings(url=nats.url), name="pytest")
    await bus.provision()
    llm_kinds = {JudgeKind.STATE, JudgeKind.VISION}
    replicas = [Replica("state", env, tmp_path, i) for i in range(3)]
    replicas.append(Replica("vision", env, tmp_path, 0))
    # One rules replica of every other kind: this test is about the state replicas sharing the LLM work.
    replicas += [Replica(kind.value, {**env, "ZELDA_JUDGE_BACKEND": "rules"}, tmp_path, 0)
                 for kind in JudgeKind if kind not in llm_kinds]
    try:
        # The trainer's side, written while the replicas start.
        events, announced = write_epoch(store, run_id=run_id, epoch=4, segments=SEGMENTS, steps=60)
        for replica in replicas:
            await wait_until(_healthy(replica), timeout_s=60, what=f"{replica.log_path.name} healthy")
        for event in events:
            await bus.publish(SEGMENT_EXPORTED, event)
        await bus.publish(EPOCH_EXPORTED, announced)

        victim = replicas[0]
        await wait_until(lambda: _at_least(victim, 2), timeout_s=60, what="the victim judging")
        victim.process.send_signal(signal.SIGKILL)
        victim.process.wait(timeout=10)
        state_verdicts = len([k for k in store.list(keys.epoch_scores_prefix(run_id, 4) + "verdicts/")
                              if k.endswith("/state.json")])
        assert state_verdicts < SEGMENTS, "the kill came too late to test anything"

        await wait_until(lambda: store.exists(keys.epoch_scores(run_id, 4)), timeout_s=120, what="scores.jsonl")
        await asyncio.sleep(2.5)  # past ack_wait: a late duplicate would show up now
        survivors_judged = [await r.judged() for r in replicas[1:3]]
    finally:
        for replica in replicas[1:]:
            if replica.process.poll() is None:
                replica.process.send_signal(signal.SIGTERM)
        exits = [r.process.wait(timeout=30) for r in replicas[1:]]
    logs = "\n".join(f"--- {r.log_path.name}\n{r.log_path.read_text()[-3000:]}" for r in replicas)
    assert exits == [0] * len(exits), logs

    ready = [e for e in await stored_events(bus, SCORES_READY) if e.run_id == run_id]
    assert len(ready) == 1, logs
    assert (ready[0].segments_scored, ready[0].segments_unjudged) == (SEGMENTS, 0)
    lines = [row["segment_id"] for row in store.get_jsonl(keys.epoch_scores(run_id, 4))]
    assert sorted(lines) == sorted(e.segment_id for e in events)  # each exactly once
    scored = [e for e in await stored_events(bus, SEGMENT_SCORED) if e.run_id == run_id]
    assert sorted(e.segment_id for e in scored) == sorted(lines)
    judged: list[SegmentJudged] = [e for e in await stored_events(bus, SEGMENT_JUDGED) if e.run_id == run_id]
    assert len(judged) == len(JudgeKind) * SEGMENTS
    assert {(v.kind, v.backend) for v in judged} == {
        (kind, "openai" if kind in llm_kinds else "rules") for kind in JudgeKind}
    assert all(count > 0 for count in survivors_judged)  # the surviving state replicas shared the work
    await bus.close()


def _healthy(replica: Replica):  # type: ignore[no-untyped-def]
    async def check() -> bool:
        if replica.process.poll() is not None:
            raise AssertionError(f"{replica.log_path.name} exited:\n{replica.log_path.read_text()[-3000:]}")
        response = await replica.get("/healthz")
        return response is not None and response.status_code == 200

    return check


def _at_least(replica: Replica, count: int):  # type: ignore[no-untyped-def]
    async def check() -> bool:
        return await replica.judged() >= count

    return check
