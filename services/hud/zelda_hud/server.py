"""Run the HUD under uvicorn: ``serve``, the entry point behind ``zelda-rlaif hud``."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable

import uvicorn
from uvicorn.loops.auto import auto_loop_factory

from zelda_hud.app import create_app
from zelda_hud.auth import redact_tokens_in_server_logs
from zelda_hud.settings import HudSettings
from zelda_rlaif.errors import ZeldaRlaifError
from zelda_rlaif.http_server import EmbeddedServer, serve_until_stopped


class CannotListen(ZeldaRlaifError):
    """The HUD's address is taken or not available on this machine."""


def uvicorn_config(settings: HudSettings) -> uvicorn.Config:
    return uvicorn.Config(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        log_config=None,  # keep our log format (configure_logging)
        # Frames are PNG already; compressing each one again for every browser costs CPU and gains nothing.
        ws_per_message_deflate=False,
        ws_max_size=64 * 1024,  # browsers only send small "watch" requests
    )


def listening_socket(settings: HudSettings) -> socket.socket:
    """The listening socket; connections accepted on it inherit its send-buffer size.

    With the kernel's default autotuning, a browser that stops reading can have megabytes of frames queued
    in its connection before a send blocks: seconds of stale video, and the HUD's newest-frame-wins outbox
    never comes into play. A small fixed buffer makes the send block early, so the browser gets the newest
    frame as soon as it reads again.
    """
    family, kind, proto, _, address = socket.getaddrinfo(
        settings.host, settings.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if settings.send_buffer_kib:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, settings.send_buffer_kib * 1024)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise CannotListen(
            f"cannot listen on {settings.host}:{settings.port} ({exc.strerror}); "
            "set ZELDA_HUD_PORT / ZELDA_HUD_HOST to a free address"
        ) from exc
    sock.set_inheritable(True)
    return sock


def build_server(settings: HudSettings) -> tuple[EmbeddedServer, socket.socket]:
    redact_tokens_in_server_logs()
    return EmbeddedServer(uvicorn_config(settings)), listening_socket(settings)


def event_loop_factory() -> Callable[[], asyncio.AbstractEventLoop]:
    """uvloop when it is installed (``uvicorn[standard]`` brings it), as ``uvicorn.run`` would choose."""
    return auto_loop_factory(use_subprocess=False)


async def serve(settings: HudSettings, stop: asyncio.Event) -> None:
    """Serve until ``stop`` is set, then close every browser's connection and shut down gracefully."""
    server, sock = build_server(settings)
    await serve_until_stopped(server, stop, sockets=[sock])
