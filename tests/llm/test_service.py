"""Segments judged end to end through NATS by every kind on a real inference server (llama.cpp's ``llama-server``
on the tiny model), into ``scores.jsonl``; and the whole loop, ``zelda-rlaif up --llm-url``, for two epochs with the
judges and online guidance on that server."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.judge.conftest import running
from tests.support.llama_server import LlamaServer
from tests.support.segments import write_epoch
from tests.support.tiny_llm import TinyModel
from tests.support.waiting import wait_until
from zelda_judge.kinds import ALL_DIMENSIONS, KINDS
from zelda_judge.settings import JudgeSettings
from zelda_rlaif.bus import Bus
from zelda_rlaif.embedded_nats import EmbeddedNats
from zelda_rlaif.events import JudgeKind, SegmentScored
from zelda_rlaif.settings import NatsSettings, StoreSettings
from zelda_rlaif.storage import ObjectStore, keys, open_store
from zelda_rlaif.subjects import EPOCH_EXPORTED, SEGMENT_EXPORTED
from zelda_rlaif.verdicts import VerdictRecord


async def test_segments_are_judged_through_nats_into_scores_jsonl(
        private_bus: Bus, private_nats: EmbeddedNats, s3_store_settings: StoreSettings, real_llm: LlamaServer,
        run_id: str) -> None:
    store: ObjectStore = open_store(s3_store_settings, create_bucket=True)
    events, announced = write_epoch(store, run_id=run_id, epoch=0, segments=3, steps=120)
    replicas = [JudgeSettings(kind=kind, backend="openai", nats=NatsSettings(url=private_nats.url),
                              store=s3_store_settings, http_port=0, llm_url=real_llm.url,
                              llm_model=f"judge-{kind.value}", llm_timeout_s=60.0, key_frames=2, ack_wait_s=60.0)
                for kind in JudgeKind]
    async with running(*replicas):
        for event in events:
            await private_bus.publish(SEGMENT_EXPORTED, event)
        await private_bus.publish(EPOCH_EXPORTED, announced)
        await wait_until(lambda: store.exists(keys.epoch_scores(run_id, 0)), timeout_s=300, what="scores.jsonl")

    lines = [SegmentScored.model_validate(row) for row in store.get_jsonl(keys.epoch_scores(run_id, 0))]
    assert sorted(line.segment_id for line in lines) == sorted(event.segment_id for event in events)
    for line in lines:
        assert set(line.dimensions) == set(ALL_DIMENSIONS)
        assert all(0.0 <= value <= 1.0 for value in line.dimensions.values()) and 0.0 <= line.combined <= 1.0
        for kind in JudgeKind:
            record = VerdictRecord.model_validate_json(
                store.get_bytes(keys.verdict(run_id, 0, line.segment_id, kind.value)))
            assert (record.verdict.backend, record.verdict.model) == ("openai", f"judge-{kind.value}")
            assert len(record.votes) == record.verdict.votes == 3 and len({v.seed for v in record.votes}) == 3
            for dimension in KINDS[kind].dimension_names:
                median = statistics.median(vote.scores[dimension] for vote in record.votes)
                assert record.verdict.scores[dimension] == line.dimensions[dimension] == median


def served_tokens(server: LlamaServer) -> float:
    """Completion tokens the server generated so far (its Prometheus ``/metrics``, on with ``--metrics``)."""
    text = httpx.get(f"http://127.0.0.1:{server.port}/metrics", timeout=10).text
    [line] = [line for line in text.splitlines() if line.startswith("llamacpp:tokens_predicted_total")]
    return float(line.split()[-1])


@pytest.mark.slow
def test_up_runs_two_epochs_with_judges_and_guidance_on_the_real_server(
        real_llm: LlamaServer, llama_server_bin: Path, tiny_model: TinyModel, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    # Guidance gets a server of its own, so that what it was answered can be told from the judges' traffic.
    guide_llm = LlamaServer(llama_server_bin, tiny_model.model, mmproj=tiny_model.mmproj, aliases=("guidance",),
                            extra=("--metrics",), log=tmp_path / "guidance-llm.log").start()
    env = {**os.environ, "ZELDA_TRAINER_SEGMENT_STEPS": "100", "ZELDA_TRAINER_EPISODE_STEPS": "200",
           "ZELDA_TRAINER_PPO_TRAIN_BATCH_SIZE": "512", "ZELDA_TRAINER_PPO_MINIBATCH_SIZE": "256",
           "ZELDA_TRAINER_ENVS_PER_RUNNER": "2",
           # Guidance on the same server: a text request on ~5% of steps, a vision request on ~2%.
           "ZELDA_TRAINER_GUIDANCE__ENABLED": "true", "ZELDA_TRAINER_GUIDANCE__BACKEND": "openai",
           "ZELDA_TRAINER_GUIDANCE__LLM_URL": guide_llm.url, "ZELDA_TRAINER_GUIDANCE__LLM_MODEL": "guidance",
           "ZELDA_TRAINER_GUIDANCE__TEXT_PROBABILITY": "0.05", "ZELDA_TRAINER_GUIDANCE__VISION_PROBABILITY": "0.02",
           "ZELDA_TRAINER_GUIDANCE__TIMEOUT_S": "30"}
    try:
        result = subprocess.run(
            [sys.executable, "-m", "zelda_rlaif.cli", "up", "--run-dir", str(run_dir), "--run-id", "real-llm",
             "--epochs", "2", "--steps-per-epoch", "512", "--env-runners", "1", "--llm-url", real_llm.url,
             "--llm-model", "tiny", "--finish-timeout", "300"],
            env=env, capture_output=True, text=True, timeout=900,
        )
        guidance_tokens = served_tokens(guide_llm)
    finally:
        guide_llm.stop()
    print(result.stdout[-3000:])
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert len(summary["epochs"]) == 2
    store = open_store(StoreSettings(url=(run_dir / "store").as_uri()))
    for epoch in summary["epochs"]:
        assert epoch["scores_ready_events"] == 1
        assert epoch["segments_scored"] == epoch["segments_exported"] > 0 and not epoch.get("segments_unjudged")
    scored = [(epoch, line["segment_id"]) for epoch in (0, 1)
              for line in store.get_jsonl(keys.epoch_scores("real-llm", epoch))]
    assert scored
    for epoch, segment_id in scored:
        for kind in JudgeKind:
            record = VerdictRecord.model_validate_json(
                store.get_bytes(keys.verdict("real-llm", epoch, segment_id, kind.value)))
            assert (record.verdict.backend, record.verdict.model, len(record.votes)) == ("openai", "tiny", 3)
    assert guidance_tokens > 0, "no guidance request was answered"
