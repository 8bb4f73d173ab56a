"""Child processes of ``zelda-rlaif up``: each service runs as its own ``zelda-rlaif`` process.

Each child gets its own process group (so a terminal's Ctrl-C reaches only the supervisor, which then stops
the children in a chosen order) and its own log file under the run directory.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class ServiceProcess:
    name: str
    args: list[str]
    env: dict[str, str]
    log_path: Path
    stop_signal: int = signal.SIGTERM
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "zelda_rlaif.cli", *self.args],
                env={**os.environ, **self.env}, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )

    @property
    def returncode(self) -> int | None:
        return self.process.poll() if self.process else None

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def signal(self, signum: int) -> None:
        if self.running and self.process is not None:
            os.killpg(self.process.pid, signum)

    def stop(self, timeout_s: float = 30.0) -> int | None:
        """Ask politely, wait, then insist. Returns the exit code."""
        if self.process is None:
            return None
        if self.running:
            self.signal(self.stop_signal)
            deadline = time.monotonic() + timeout_s
            while self.running and time.monotonic() < deadline:
                time.sleep(0.1)
            if self.running:
                self.signal(signal.SIGKILL)
        try:
            return self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            return None

    def log_tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""
