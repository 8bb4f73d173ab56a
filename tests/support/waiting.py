"""Waiting for real servers and real processes: a free loopback port, and polling until something holds.

Timeouts here are safety nets for a hung test, never assertions about speed.
"""

from __future__ import annotations

import asyncio
import inspect
import socket
from collections.abc import Awaitable, Callable

Check = Callable[[], Awaitable[object]] | Callable[[], object]


def free_port() -> int:
    """A loopback TCP port that nothing listens on right now (for a server started in another process)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def wait_until(check: Check, timeout_s: float = 20.0, what: str = "condition", *,
                     interval_s: float = 0.02) -> None:
    """Poll ``check`` (sync or async) until it returns something truthy; raise AssertionError naming ``what``
    after ``timeout_s``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        result = check()
        if inspect.isawaitable(result):
            result = await result
        if result:
            return
        if loop.time() > deadline:
            raise AssertionError(f"{what} not reached within {timeout_s}s")
        await asyncio.sleep(interval_s)
