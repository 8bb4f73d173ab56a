"""One background asyncio loop per process for guidance I/O (the LLM requests).

The env thread only schedules coroutines here (``submit`` returns at once); it never waits on them. One loop
serves every env of an env runner process, so a runner with several envs still runs one extra thread. The
loop belongs to the process that started it: a forked child gets a fresh one.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class BackgroundLoop:
    def __init__(self, name: str = "guidance-io") -> None:
        self.pid = os.getpid()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_forever()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule ``coro`` on the loop; returns immediately."""
        return asyncio.run_coroutine_threadsafe(coro, self._loop)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive() and self.pid == os.getpid()


_shared: BackgroundLoop | None = None
_lock = threading.Lock()


def shared_loop() -> BackgroundLoop:
    """The process's guidance loop, started on first use (daemon thread: it never delays process exit)."""
    global _shared
    with _lock:
        if _shared is None or not _shared.alive:
            _shared = BackgroundLoop()
        return _shared
