"""Stopping ``zelda-rlaif up``: Ctrl-C (SIGINT to the terminal's whole foreground process group) and SIGTERM stop
every service in order, leave no process behind, exit 130 / 143 and say how to continue; ``--resume`` then
continues from the checkpoint. While a run holds its directory, a second ``up`` there is refused at once. A
``up`` killed outright takes its services with it."""

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

# Short epochs in which each of the two emulators still plays two whole segments (256 steps), so that the judges
# and the reward model have work in flight when the stop comes, and the resumed epoch closes the loop.
SMALL = {
    "ZELDA_TRAINER_SEGMENT_STEPS": "100",
    "ZELDA_TRAINER_EPISODE_STEPS": "400",
    "ZELDA_TRAINER_ENVS_PER_RUNNER": "1",
    "ZELDA_TRAINER_FRAME_EVERY": "20",
    "ZELDA_TRAINER_PPO_TRAIN_BATCH_SIZE": "512",
    "ZELDA_TRAINER_PPO_MINIBATCH_SIZE": "128",
}


def up(run_dir: Path, *extra: str) -> subprocess.Popen[str]:
    # Its own process group, as a shell starts a foreground job: a Ctrl-C goes to that whole group.
    return subprocess.Popen(
        [sys.executable, "-m", "zelda_rlaif.cli", "up", "--run-dir", str(run_dir), *extra],
        env={**os.environ, **SMALL}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, process_group=0,
    )


def wait_for(key: str, run_dir: Path, process: subprocess.Popen[str]) -> None:
    store = open_store(StoreSettings(url=(run_dir / "store").as_uri()))
    deadline = time.monotonic() + 300
    while not store.exists(key):
        if process.poll() is not None:
            pytest.fail(process.communicate()[0][-3000:])
        assert time.monotonic() < deadline, f"no {key} within 300 s"
        time.sleep(0.5)


def descendants(process: subprocess.Popen[str]) -> list[psutil.Process]:
    # Ray starts short-lived helper processes; one may exit between listing and naming it.
    found: list[psutil.Process] = []
    names: set[str] = set()
    for child in psutil.Process(process.pid).children(recursive=True):
        try:
            names.add(child.name())
        except psutil.NoSuchProcess:
            continue
        found.append(child)
    assert "nats-server" in names, names
    assert len(found) >= 7, names  # NATS, three judges, reward model, HUD, trainer (and Ray under it)
    return found


def running(process: psutil.Process) -> bool:
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def stop(process: subprocess.Popen[str], children: list[psutil.Process]) -> str:
    output, _ = process.communicate(timeout=120)
    print(output[-2500:])
    assert "Traceback" not in output
    _, alive = psutil.wait_procs(children, timeout=10)  # a SIGKILLed process dies when next scheduled
    left = [c for c in alive if running(c)]
    assert not left, [(c.pid, c.name()) for c in left]
    return output


def test_ctrl_c_stops_everything_and_resume_continues(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    first = up(run_dir, "--run-id", "interrupted", "--epochs", "20", "--steps-per-epoch", "512")
    wait_for(keys.checkpoint_metadata(keys.checkpoint("interrupted", 0)), run_dir, first)

    # The run directory is locked: a second `up` there is refused at once, naming the first.
    second = subprocess.run([sys.executable, "-m", "zelda_rlaif.cli", "up", "--run-dir", str(run_dir), "--resume"],
                            env={**os.environ, **SMALL}, capture_output=True, text=True, timeout=120)
    assert second.returncode == 2, second.stderr
    assert f"is in use by zelda-rlaif up (pid {first.pid} " in second.stderr

    children = descendants(first)
    os.killpg(first.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
    output = stop(first, children)
    assert first.returncode == 130
    assert f"zelda-rlaif up --resume --run-dir {run_dir} --epochs " in output
    assert "--steps-per-epoch 512" in output  # the flags that shaped the run, to be given again

    # The run directory is consistent: every checkpoint that has metadata is complete and loadable next time.
    store = open_store(StoreSettings(url=(run_dir / "store").as_uri()))
    reached = max(keys.epoch_of(k) or 0 for k in store.list(keys.checkpoints("interrupted"))
                  if k.endswith("zelda-checkpoint.json") and "/best/" not in k)
    # A resume goes on after the last checkpoint, or one later when the stop came between the next epoch's report
    # (the epoch judged and closed) and its checkpoint: that epoch's number is taken.
    start = reached + 1 + store.exists(keys.epoch_report("interrupted", reached + 1))
    assert f"--epochs {20 - start} " in output

    resumed = up(run_dir, "--resume", "--epochs", "1", "--steps-per-epoch", "512")
    output, _ = resumed.communicate(timeout=600)
    print(output[-2500:])
    assert resumed.returncode == 0, output[-3000:]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["run_id"] == "interrupted"
    assert [row["epoch"] for row in summary["epochs"]] == [start]
    trainer_log = (run_dir / "logs" / "trainer.log").read_text()
    assert f"resumed run interrupted from epoch {reached}" in trainer_log


def test_sigterm_stops_everything_with_143(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    process = up(run_dir, "--run-id", "terminated", "--epochs", "20", "--steps-per-epoch", "512")
    wait_for(keys.progress("terminated"), run_dir, process)  # the trainer is sampling

    children = descendants(process)
    process.send_signal(signal.SIGTERM)  # to `up` alone, as an orchestrator or `kill` does
    output = stop(process, children)
    assert process.returncode == 143
    assert f"zelda-rlaif up --resume --run-dir {run_dir} --epochs " in output


def test_a_killed_up_takes_every_service_with_it_and_resume_continues(tmp_path: Path) -> None:
    """SIGKILL (or the OOM killer) gives `up` no chance to stop anything: the kernel signals each service as `up`
    dies, so no trainer goes on writing into the run directory beside the next `up --resume`."""
    run_dir = tmp_path / "run"
    first = up(run_dir, "--run-id", "killed", "--epochs", "20", "--steps-per-epoch", "512")
    wait_for(keys.checkpoint_metadata(keys.checkpoint("killed", 0)), run_dir, first)

    children = descendants(first)
    os.kill(first.pid, signal.SIGKILL)
    first.communicate(timeout=60)
    _, alive = psutil.wait_procs(children, timeout=120)
    left = [c for c in alive if running(c)]
    assert not left, [(c.pid, c.name()) for c in left]

    resumed = up(run_dir, "--resume", "--epochs", "1", "--steps-per-epoch", "512")
    output, _ = resumed.communicate(timeout=600)
    print(output[-2500:])
    assert resumed.returncode == 0, output[-3000:]
    trainer_log = (run_dir / "logs" / "trainer.log").read_text()
    assert "SIGHUP received" in trainer_log  # how the first trainer stopped
    assert "resumed run killed from epoch " in trainer_log
