"""``zelda-rlaif up`` refuses bad input with one sentence naming the flag, before starting anything: no run
directory, run file, lock or process is left behind. A run directory another ``up`` holds is refused too."""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from zelda_rlaif.cli import main
from zelda_rlaif.errors import SettingsError
from zelda_rlaif.game.emulator import BUNDLED_ROM
from zelda_rlaif.up.checks import check_no_overridden_variables
from zelda_rlaif.up.lock import LOCK_FILE, RunDirBusy, RunDirLock


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--rom", "{tmp}/missing.gbc", "--state", "{tmp}/s.state"], "no ROM at"),
        (["--rom", "{tmp}/garbage.gbc", "--state", "{tmp}/s.state"], "not a valid Game Boy ROM"),
        (["--rom", str(BUNDLED_ROM), "--state", "{tmp}/missing.state"], "no save state at"),
        (["--rom", str(BUNDLED_ROM)], "--rom needs --state"),
        (["--llm-url", "http://127.0.0.1:9/v1"], "--llm-url needs --llm-model"),
        (["--resume"], "nothing to resume"),
        (["--epochs", "0"], "--epochs must be at least 1 (got 0)"),
        (["--steps-per-epoch", "0"], "--steps-per-epoch must be at least 1"),
        (["--steps-per-epoch", "10"], "--steps-per-epoch: Input should be greater than or equal to 64"),
        (["--env-runners", "0"], "--env-runners must be at least 1"),
        (["--export-fraction", "0"], "--export-fraction must be above 0 and at most 1"),
        (["--export-fraction", "1.5"], "--export-fraction must be above 0 and at most 1"),
        (["--finish-timeout", "0"], "--finish-timeout must be above 0"),
        (["--hud-port", "70000"], "--hud-port must be a TCP port"),
        (["--mlflow-uri", "mlruns"], "--mlflow-uri: MLflow 3 keeps local runs in a database"),
    ],
)
def test_bad_input_is_one_sentence_and_starts_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], expected: str
) -> None:
    (tmp_path / "garbage.gbc").write_bytes(b"x" * 400)
    run_dir = tmp_path / "run"
    code = main(["up", "--run-dir", str(run_dir), *(a.replace("{tmp}", str(tmp_path)) for a in args)])
    assert code == 2
    err = capsys.readouterr().err
    assert expected in err
    assert "Traceback" not in err
    assert not run_dir.exists()  # no run file, lock, log or store: nothing was started


def test_a_trainer_variable_that_a_flag_of_up_would_override_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ZELDA_TRAINER_SHAPING_MODE", "sync")
    run_dir = tmp_path / "run"
    assert main(["up", "--run-dir", str(run_dir)]) == 2
    err = capsys.readouterr().err
    assert "ZELDA_TRAINER_SHAPING_MODE is set" in err and "give --shaping-mode instead" in err
    assert not run_dir.exists()


def test_a_trainer_variable_reaches_the_trainer_where_up_passes_no_flag_for_it() -> None:
    """ROM, state and MLflow URI go to the trainer only when their flag is given; otherwise its variable counts."""
    environ = {"ZELDA_TRAINER_MLFLOW_URI": "http://mlflow.example:5000"}
    given = {"rom": None, "state": None, "mlflow_uri": None}
    check_no_overridden_variables(argparse.Namespace(**given), environ)  # nothing overrides it: allowed
    with pytest.raises(SettingsError, match=r"ZELDA_TRAINER_MLFLOW_URI is set.*give --mlflow-uri instead"):
        check_no_overridden_variables(argparse.Namespace(**{**given, "mlflow_uri": "sqlite:////tmp/m.db"}), environ)
    with pytest.raises(SettingsError, match=r"ZELDA_TRAINER_RUN_ID is set.*give --run-id instead"):
        check_no_overridden_variables(argparse.Namespace(**given), {"ZELDA_TRAINER_RUN_ID": "mine"})


def test_a_busy_hud_port_is_refused_before_anything_starts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = tmp_path / "run"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code = main(["up", "--run-dir", str(run_dir), "--hud-port", str(port)])
    assert code == 2
    assert f"--hud-port {port} is not free" in capsys.readouterr().err
    assert not run_dir.exists()


def hold_lock(run_dir: Path) -> subprocess.Popen[str]:
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from pathlib import Path; from zelda_rlaif.up.lock import "
         "RunDirLock; RunDirLock(Path(sys.argv[1])).acquire(); print('locked', flush=True); time.sleep(600)",
         str(run_dir)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
    return holder


def test_a_locked_run_dir_is_refused_naming_its_holder_until_the_holder_dies(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "run"
    holder = hold_lock(run_dir)
    try:
        for resume in ([], ["--resume"]):
            if resume:
                (run_dir / "run.json").write_text('{"run_id": "held"}')
            code = main(["up", "--run-dir", str(run_dir), *resume])
            assert code == 2
            err = capsys.readouterr().err
            assert f"{run_dir} is in use by zelda-rlaif up (pid {holder.pid} on {socket.gethostname()}" in err, err
            assert "Traceback" not in err
        assert {p.name for p in run_dir.iterdir()} == {LOCK_FILE, "run.json"}  # only what the test wrote
    finally:
        holder.kill()
        holder.wait()
    # The holder died without releasing anything: its lock file, with its record, stays and must not block.
    assert str(holder.pid) in (run_dir / LOCK_FILE).read_text()
    with RunDirLock(run_dir), pytest.raises(RunDirBusy, match=rf"in use by zelda-rlaif up \(pid {os.getpid()} "):
        RunDirLock(run_dir).acquire()
