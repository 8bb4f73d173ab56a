"""One ``zelda-rlaif up`` per run directory: two would share its NATS data, store and run file.

The lock is an ``flock`` on ``up.lock`` in the run directory, so the kernel releases it when its holder exits,
however it exits: a lock file left by a dead process never blocks. The file records who holds it, for the
message a second ``up`` prints; it stays in place when released (removing it would let two processes lock
two different files of the same name). ``up`` hands the locked descriptor to every process it starts
(``held_fd``), so the lock outlasts an ``up`` that was killed until the last of its services has stopped too:
until then they may still write to the run directory.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType

from zelda_rlaif.errors import ZeldaRlaifError

LOCK_FILE = "up.lock"


class RunDirBusy(ZeldaRlaifError):
    """Another ``zelda-rlaif up`` holds the run directory."""


class RunDirLock:
    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / LOCK_FILE
        self._fd: int | None = None

    def acquire(self) -> RunDirLock:
        """Take the lock or raise ``RunDirBusy`` naming its holder. Creates the run directory."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise RunDirBusy(f"{self.path.parent} is in use by {holder(self.path)}: stop that one first "
                             "(Ctrl-C in its terminal) or give another --run-dir") from None
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                                 "started": datetime.now(UTC).isoformat(timespec="seconds")}).encode())
        self._fd = fd
        return self

    @property
    def held_fd(self) -> int:
        """The locked descriptor, for child processes to keep open (``subprocess.Popen(pass_fds=...)``)."""
        if self._fd is None:
            raise RuntimeError("the run directory lock is not held")
        return self._fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the only descriptor releases the flock
            self._fd = None

    def __enter__(self) -> RunDirLock:
        return self.acquire()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.release()


def holder(path: Path) -> str:
    """Who holds the lock, as its file records it (it may not have written the record yet)."""
    try:
        found = json.loads(path.read_text())
        pid, host = int(found["pid"]), str(found["host"])
        who = f"zelda-rlaif up (pid {pid} on {host}, started {found['started']})"
    except (OSError, ValueError, KeyError, TypeError):
        return "another zelda-rlaif up (it has not recorded its pid yet)"
    if host == socket.gethostname() and not _alive(pid):
        return (f"the services of {who}, which has exited: they are stopping (wait a few seconds), or find them "
                f"with `ps` and stop them")
    return who


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True
