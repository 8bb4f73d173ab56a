"""``zelda-rlaif up --llm-url``: the judges vote through an OpenAI-compatible server instead of the rules.

The server is the project's OpenAI-protocol test server (a real HTTP server; the only stand-in allowed,
because a production LLM cannot run here). Every verdict must come from it: M=3 votes per segment, labelled
with the model, and the loop still closes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.openai_server import OpenAIServer
from zelda_rlaif.events import JudgeKind
from zelda_rlaif.settings import StoreSettings
from zelda_rlaif.storage import keys, open_store
from zelda_rlaif.verdicts import VerdictRecord

pytestmark = pytest.mark.slow


def test_up_with_llm_judges(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    env = {**os.environ, "ZELDA_TRAINER_SEGMENT_STEPS": "100", "ZELDA_TRAINER_EPISODE_STEPS": "400",
           "ZELDA_TRAINER_PPO_TRAIN_BATCH_SIZE": "1024", "ZELDA_TRAINER_PPO_MINIBATCH_SIZE": "256",
           # One 1,024-step epoch: with 4 emulators per runner each plays 128 steps, room for a 100-step segment.
           "ZELDA_TRAINER_ENVS_PER_RUNNER": "4"}
    with OpenAIServer(latency_s=0.02, model="judge-model") as llm:
        result = subprocess.run(
            [sys.executable, "-m", "zelda_rlaif.cli", "up", "--run-dir", str(run_dir), "--run-id", "llm",
             "--epochs", "1", "--steps-per-epoch", "1024", "--llm-url", llm.url, "--llm-model", llm.model,
             "--finish-timeout", "300"],
            env=env, capture_output=True, text=True, timeout=600,
        )
        requests = llm.chat_requests()
    print(result.stdout[-3000:])
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads((run_dir / "summary.json").read_text())
    (epoch,) = summary["epochs"]
    assert epoch["scores_ready_events"] == 1 and epoch["segments_scored"] == epoch["segments_exported"] > 0

    store = open_store(StoreSettings(url=(run_dir / "store").as_uri()))
    scored = [line["segment_id"] for line in store.get_jsonl(keys.epoch_scores("llm", 0))]
    for segment_id in scored:
        for kind in JudgeKind:
            record = VerdictRecord.model_validate_json(store.get_bytes(keys.verdict("llm", 0, segment_id, kind.value)))
            assert record.verdict.backend == "openai" and record.verdict.model == "judge-model"
            assert record.verdict.votes == len(record.votes) == 3
    # Three kinds x M=3 votes for every segment reached the server, with structured output.
    bodies = [r.body for r in requests]
    assert all(b["response_format"]["type"] == "json_schema" for b in bodies)
    votes = sum(int(b.get("n", 1)) for b in bodies)
    assert votes >= 3 * 3 * len(scored)
