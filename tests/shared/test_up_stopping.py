"""How ``zelda-rlaif up`` stops its services, with real processes: the polite signal to the service, SIGKILL to
its whole process group after the grace period (or at once when hurried), so nothing it started outlives it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

from zelda_rlaif.up.processes import ServiceProcess, stop_together
from zelda_rlaif.up.stopping import StopRequest, resume_command

# A service that starts a helper of its own (as the trainer starts Ray) and reports both pids.
SERVICE = """
import signal, subprocess, sys, time
if sys.argv[1] == "stubborn":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
print(helper.pid, flush=True)
time.sleep(600)
"""


def started(tmp_path: Path, behaviour: str) -> tuple[ServiceProcess, psutil.Process]:
    service = ServiceProcess(behaviour, [], {}, tmp_path / f"{behaviour}.log")
    # Started as ServiceProcess.start starts a service, in a session of its own, with a stand-in program.
    service.process = subprocess.Popen([sys.executable, "-c", SERVICE, behaviour], stdout=subprocess.PIPE,
                                       start_new_session=True)
    assert service.process.stdout is not None
    return service, psutil.Process(int(service.process.stdout.readline()))


def gone(process: psutil.Process) -> bool:
    """Dead or dying: SIGKILL takes effect when the kernel next schedules the process, not when kill() returns."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if not process.is_running() or process.status() == psutil.STATUS_ZOMBIE:
            return True
        time.sleep(0.05)
    return False


def test_services_stop_politely_or_are_killed_and_leave_nothing_behind(tmp_path: Path) -> None:
    polite, polite_helper = started(tmp_path, "polite")
    stubborn, stubborn_helper = started(tmp_path, "stubborn")
    stop_together([polite, stubborn], grace_s=2)
    assert polite.returncode == -signal.SIGTERM  # it stopped on the polite signal
    assert stubborn.returncode == -signal.SIGKILL  # it ignored it until the grace period ran out
    assert gone(polite_helper) and gone(stubborn_helper)  # neither left its helper running


def test_a_hurried_stop_kills_at_once(tmp_path: Path) -> None:
    stubborn, helper = started(tmp_path, "stubborn")
    stop_together([stubborn], grace_s=3600, hurry=lambda: True)  # would hang for an hour if the hurry were ignored
    assert stubborn.returncode == -signal.SIGKILL
    assert gone(helper)


def test_the_first_signal_asks_to_stop_and_another_hurries() -> None:
    # Not default_int_handler: a shell starts a background job (CI's, say) with SIGINT ignored.
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    request = StopRequest().install()
    try:
        assert not request.requested
        os.kill(os.getpid(), signal.SIGTERM)
        assert request.requested and request.exit_code == 143 and not request.hurry
        os.kill(os.getpid(), signal.SIGINT)
        assert request.exit_code == 143 and request.hurry  # the first signal decides the exit status
    finally:
        request.restore()
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before


def test_the_resume_command_can_be_pasted_into_a_shell() -> None:
    command = resume_command(Path("/runs/my run"), 7, ["--rom", "/roms/zelda.gbc", "--steps-per-epoch", "512"])
    assert command == ("zelda-rlaif up --resume --run-dir '/runs/my run' --epochs 7 --rom /roms/zelda.gbc "
                       "--steps-per-epoch 512")
