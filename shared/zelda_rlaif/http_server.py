"""uvicorn inside a service's own event loop: the HUD, and the judges' ``/healthz`` and ``/metrics``.

``zelda_rlaif.service.run_service`` owns SIGTERM and SIGINT; uvicorn would otherwise install handlers of its
own while it serves, and re-raise the signal when it is done. Here the service's ``stop`` event ends it.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Iterator

import uvicorn


class EmbeddedServer(uvicorn.Server):
    """uvicorn without its signal handlers: stopped by ``serve_until_stopped``."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


async def serve_until_stopped(server: EmbeddedServer, stop: asyncio.Event,
                              sockets: list[socket.socket] | None = None) -> None:
    """Serve until ``stop`` is set, then let uvicorn close its connections and shut down gracefully."""

    async def exit_on_stop() -> None:
        await stop.wait()
        server.should_exit = True

    watcher = asyncio.create_task(exit_on_stop())
    try:
        await server.serve(sockets=sockets)
    finally:
        watcher.cancel()
