"""Ctrl-C stops every service of ``zelda-rlaif up`` cleanly; ``--resume`` continues from the checkpoint."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from zelda_rlaif.settings import StoreSettings
from zelda_rlaif.storage import keys, open_store

pytestmark = pytest.mark.slow

SMALL = {
    "ZELDA_TRAINER_SEGMENT_STEPS": "100",
    "ZELDA_TRAINER_EPISODE_STEPS": "400",
    "ZELDA_TRAINER_PPO_TRAIN_BATCH_SIZE": "512",
    "ZELDA_TRAINER_PPO_MINIBATCH_SIZE": "128",
}


def up(run_dir: Path, *extra: str) -> subprocess.Popen[str]:
    # Stopping and resuming is under test, not the judging loop (tests/e2e/test_up.py): these short epochs
    # (32 steps per emulator) export nothing, which the trainer only accepts when told to export nothing.
    return subprocess.Popen(
        [sys.executable, "-m", "zelda_rlaif.cli", "up", "--run-dir", str(run_dir), "--export-fraction", "0", *extra],
        env={**os.environ, **SMALL}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )


def test_ctrl_c_stops_everything_and_resume_continues(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    first = up(run_dir, "--run-id", "interrupted", "--epochs", "20", "--steps-per-epoch", "512")
    store = open_store(StoreSettings(url=(run_dir / "store").as_uri()))
    checkpoint = keys.checkpoint_metadata(keys.checkpoint("interrupted", 0))
    deadline = time.monotonic() + 300
    while not store.exists(checkpoint):
        assert first.poll() is None, first.communicate()[0][-3000:]
        assert time.monotonic() < deadline, "no checkpoint within 300 s"
        time.sleep(0.5)
    children = psutil.Process(first.pid).children(recursive=True)
    assert len(children) >= 6  # three judges, reward model, HUD, trainer (and Ray under it)

    first.send_signal(signal.SIGINT)  # what Ctrl-C sends
    output, _ = first.communicate(timeout=120)
    print(output[-2500:])
    assert first.returncode == 0
    assert "stopped by request" in output
    assert not [c for c in children if c.is_running() and c.status() != psutil.STATUS_ZOMBIE]

    # The run directory is consistent: every checkpoint that has metadata is complete and loadable next time.
    reached = max(keys.epoch_of(k) or 0 for k in store.list(keys.checkpoints("interrupted"))
                  if k.endswith("zelda-checkpoint.json") and "/best/" not in k)

    second = up(run_dir, "--resume", "--epochs", "1", "--steps-per-epoch", "512")
    output, _ = second.communicate(timeout=600)
    print(output[-2500:])
    assert second.returncode == 0, output[-3000:]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["run_id"] == "interrupted"
    assert [row["epoch"] for row in summary["epochs"]] == [reached + 1]
    trainer_log = (run_dir / "logs" / "trainer.log").read_text()
    assert f"resumed run interrupted from epoch {reached}" in trainer_log
