"""Child processes of ``zelda-rlaif up``: each service runs as its own ``zelda-rlaif`` process.

Each child gets its own process group (so a terminal's Ctrl-C reaches only the supervisor, which then stops
the children in a chosen order) and its own log file under the run directory. Should the supervisor die without
stopping them (SIGKILL, the OOM killer), each child gets SIGHUP from the kernel, which every service takes as
"stop now" (``service.py``), and until the last has exited they keep the run directory's lock held.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from zelda_rlaif.parent_death import stop_with_parent


@dataclass
class ServiceProcess:
    name: str
    args: list[str]
    env: dict[str, str]
    log_path: Path
    stop_signal: int = signal.SIGTERM
    # Descriptors the service keeps open without using them: the run directory's lock (``up/lock.py``).
    held_fds: tuple[int, ...] = ()
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "zelda_rlaif.cli", *self.args],
                env={**os.environ, **self.env}, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                pass_fds=self.held_fds, preexec_fn=stop_with_parent(signal.SIGHUP),
            )

    @property
    def returncode(self) -> int | None:
        """The exit status once the service has exited. It is read without reaping the process: until
        ``reap`` its process id, which is also its group's, cannot be reused, so ``kill`` never hits a stranger."""
        if self.process is None:
            return None
        if self.process.returncode is not None:
            return self.process.returncode
        exited = os.waitid(os.P_PID, self.process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        if exited is None:
            return None
        return exited.si_status if exited.si_code == os.CLD_EXITED else -exited.si_status

    @property
    def running(self) -> bool:
        return self.process is not None and self.returncode is None

    def request_stop(self) -> None:
        """The polite signal, to the service's own process only: it unwinds what it started itself (the
        trainer stops Ray, whose processes ignore SIGINT anyway)."""
        if self.running and self.process is not None:
            os.kill(self.process.pid, self.stop_signal)

    def kill(self) -> None:
        """SIGKILL to the service's whole process group: the service and anything it left behind (Ray)."""
        if self.process is not None and self.process.returncode is None:  # not reaped: the group id is still ours
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)

    def reap(self) -> int | None:
        if self.process is None:
            return None
        try:
            return self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:  # unkillable (stuck in the kernel): nothing more to do from here
            return None

    def log_tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


def stop_together(processes: Sequence[ServiceProcess], grace_s: float,
                  hurry: Callable[[], bool] = lambda: False) -> None:
    """Ask each service to stop, wait up to ``grace_s`` (less once ``hurry()`` says so), then SIGKILL each
    service's process group, whether the service exited by itself or not, so that no grandchild outlives it."""
    for process in processes:
        process.request_stop()
    deadline = time.monotonic() + grace_s
    while any(p.running for p in processes) and time.monotonic() < deadline and not hurry():
        time.sleep(0.1)
    for process in processes:
        process.kill()
    for process in processes:
        process.reap()
