"""A run to evaluate: the real ``zelda-rlaif trainer`` for one tiny epoch, in its own process (it starts and stops
its own Ray, so the trainer suite's session Ray is untouched), with a file store in a run directory laid out as
``zelda-rlaif up`` leaves it (``run.json``, ``store/``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from zelda_rlaif.embedded_nats import EmbeddedNats

EPISODE_STEPS = 300


@dataclass(frozen=True)
class TrainedRun:
    run_dir: Path
    run_id: str
    store_url: str


@pytest.fixture(scope="session")
def trained_run(tmp_path_factory: pytest.TempPathFactory, nats_server: EmbeddedNats) -> TrainedRun:
    run_dir = tmp_path_factory.mktemp("run")
    run_id = "run-evaltest"
    store_url = (run_dir / "store").as_uri()
    (run_dir / "run.json").write_text(json.dumps({"run_id": run_id}))
    env = {
        **os.environ, "ZELDA_NATS_URL": nats_server.url, "ZELDA_STORE_URL": store_url, "OMP_NUM_THREADS": "1",
        "RAY_AUTH_MODE": "disabled", "ZELDA_TRAINER_RAY_NUM_CPUS": "2",
        "ZELDA_TRAINER_EPISODE_STEPS": str(EPISODE_STEPS), "ZELDA_TRAINER_EXPORT_FRACTION": "0",
        "ZELDA_TRAINER_LIVE_FRAMES": "false", "ZELDA_TRAINER_TENSORBOARD_DIR": "",
        "ZELDA_TRAINER_PPO_TRAIN_BATCH_SIZE": "300", "ZELDA_TRAINER_PPO_MINIBATCH_SIZE": "100",
        "ZELDA_TRAINER_PPO_NUM_EPOCHS": "1", "ZELDA_TRAINER_PPO_HIDDEN": "32",
        "ZELDA_TRAINER_EVAL_EPISODES": "2",
    }
    command = [sys.executable, "-m", "zelda_rlaif.cli", "trainer", "--run-id", run_id, "--epochs", "1",
               "--steps-per-epoch", "600", "--env-runners", "1", "--envs-per-runner", "1", "--no-progress"]
    done = subprocess.run(command, env=env, cwd=run_dir, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return TrainedRun(run_dir, run_id, store_url)
