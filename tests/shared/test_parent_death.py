"""What ``zelda-rlaif up`` leaves when it is killed without a chance to stop anything (SIGKILL, the OOM killer):
its children get the signal they asked the kernel for, and the run directory stays locked until the last of
them has exited. Real processes; the whole of ``up`` is in tests/e2e/test_up_interrupt.py."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from zelda_rlaif.up.lock import RunDirBusy, RunDirLock

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")

# Stands in for `up`: takes the run directory's lock, starts a child as `up` starts its services, reports its pid.
PARENT = """
import signal, subprocess, sys, time
from pathlib import Path
from zelda_rlaif.parent_death import stop_with_parent
from zelda_rlaif.up.lock import RunDirLock
lock = RunDirLock(Path(sys.argv[1])).acquire()
child = subprocess.Popen([sys.executable, "-c", sys.argv[2]], pass_fds=(lock.held_fd,),
                         preexec_fn=stop_with_parent(signal.SIGTERM), start_new_session=True)
print(child.pid, flush=True)
time.sleep(600)
"""
# A child that, on SIGTERM, says so in a file and stops only once told to, as a service takes a while to stop.
STOPS_WHEN_TOLD = """
import os, signal, sys, time
def stop(*_):
    open("got-sigterm", "w").close()
    while not os.path.exists("may-exit"):
        time.sleep(0.05)
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
open("ready", "w").close()
time.sleep(600)
"""


def start_parent(run_dir: Path, child_program: str) -> tuple[subprocess.Popen[str], psutil.Process]:
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(run_dir), child_program], stdout=subprocess.PIPE,
                              text=True, cwd=run_dir.parent)
    assert parent.stdout is not None
    return parent, psutil.Process(int(parent.stdout.readline()))


def wait_gone(process: psutil.Process, timeout_s: float = 30) -> bool:
    try:
        process.wait(timeout=timeout_s)
    except psutil.TimeoutExpired:
        return False
    return True


def wait_for_file(path: Path, failure: str) -> None:
    deadline = time.monotonic() + 60
    while not path.exists():
        assert time.monotonic() < deadline, failure
        time.sleep(0.05)


def test_a_killed_parent_takes_its_child_with_it(tmp_path: Path) -> None:
    parent, child = start_parent(tmp_path / "run", "import time; time.sleep(600)")
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    assert wait_gone(child), "the child outlived its killed parent"


def test_the_run_directory_stays_locked_until_the_last_child_has_stopped(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    parent, child = start_parent(run_dir, STOPS_WHEN_TOLD)
    wait_for_file(tmp_path / "ready", "the child did not start")
    with pytest.raises(RunDirBusy, match=f"pid {parent.pid} "):
        RunDirLock(run_dir).acquire()
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    wait_for_file(tmp_path / "got-sigterm", "the child was not signalled when its parent died")
    # The child is stopping: meanwhile a second `up` is refused, and told why.
    with pytest.raises(RunDirBusy, match="which has exited: they are stopping"):
        RunDirLock(run_dir).acquire()
    (tmp_path / "may-exit").touch()
    assert wait_gone(child)
    deadline = time.monotonic() + 10
    while True:  # the kernel releases the flock as the child's last descriptor closes
        try:
            RunDirLock(run_dir).acquire().release()
            break
        except RunDirBusy:
            assert time.monotonic() < deadline, "the lock stayed held after every holder exited"
            time.sleep(0.1)
