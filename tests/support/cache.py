"""Where the suite keeps what it makes once per machine (llama-server's build, the tiny models, the notebook's
venv), and the lock that lets one maker at a time fill an entry."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path


def cache_root() -> Path:
    """``ZELDA_TEST_CACHE``, else ``$XDG_CACHE_HOME/zelda-rlaif``, else ``~/.cache/zelda-rlaif``."""
    if os.environ.get("ZELDA_TEST_CACHE"):
        return Path(os.environ["ZELDA_TEST_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "zelda-rlaif"


@contextlib.contextmanager
def locked(directory: Path) -> Iterator[None]:
    """One maker at a time per cache entry: a second one (another test session, or the suite's background
    prebuild, ``tests/support/prebuilt.py``) waits here and then finds the entry made."""
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / ".lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
