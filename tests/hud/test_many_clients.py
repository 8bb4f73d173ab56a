"""Fan-out under load: 50 browsers get every round of frames while one stuck browser only loses its own."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import socket
from collections.abc import Iterator

import httpx
import pytest
import websockets

from tests.hud.conftest import HudServer, game_screen, noise_png
from tests.support.waiting import wait_until
from zelda_hud.settings import HudSettings
from zelda_rlaif.bus import Bus
from zelda_rlaif.events import LiveFrame
from zelda_rlaif.subjects import live_frame_subject

FAST_CLIENTS = 50
ROUNDS = 5
FRAMES_PER_ROUND = 8


class StuckBrowser:
    """A websocket client that completes the handshake and then never reads a byte, with a tiny receive
    buffer: the server's sends to it block almost at once, as with a browser on a dead network link."""

    def __init__(self, port: int, env_id: str) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        self.sock.connect(("127.0.0.1", port))
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(
            f"GET /ws?env={env_id} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode()
        )
        response = b""
        while b"\r\n\r\n" not in response:
            response += self.sock.recv(1)  # one byte at a time: read nothing beyond the handshake
        assert response.startswith(b"HTTP/1.1 101"), response

    @property
    def label(self) -> str:
        host, port = self.sock.getsockname()
        return f"{host}:{port}"

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def stuck(hud: HudServer) -> Iterator[StuckBrowser]:
    browser = StuckBrowser(hud.port, "env-big")
    yield browser
    browser.close()


async def read_frames(url: str, steps: list[int], ready: asyncio.Event) -> None:
    async with websockets.connect(url, max_size=None) as ws:
        async for raw in ws:
            message = json.loads(raw)
            if message["type"] == "snapshot":
                ready.set()
            elif message["type"] == "frame":
                steps.append(message["data"]["step"])


async def test_fifty_browsers_keep_up_while_a_stuck_one_loses_frames(
    hud: HudServer, bus: Bus, run_id: str, stuck: StuckBrowser
) -> None:
    received: list[list[int]] = [[] for _ in range(FAST_CLIENTS)]
    ready = [asyncio.Event() for _ in range(FAST_CLIENTS)]
    readers = [asyncio.create_task(read_frames(f"{hud.ws_url}?env=env-0", received[i], ready[i]))
               for i in range(FAST_CLIENTS)]
    try:
        await asyncio.wait_for(asyncio.gather(*(r.wait() for r in ready)), timeout=30)
        small = game_screen(0)
        published = 0
        for round_ in range(ROUNDS):
            for i in range(FRAMES_PER_ROUND):
                step = round_ * FRAMES_PER_ROUND + i
                # ~50 kB of incompressible PNG per frame for the stuck browser's env: its buffers fill fast
                await bus.publish_live(live_frame_subject("env-big"), LiveFrame(
                    run_id=run_id, env_id="env-big", step=step, png=noise_png(step)))
                await bus.publish_live(live_frame_subject("env-0"), LiveFrame(
                    run_id=run_id, env_id="env-0", step=step, png=small, state={"group": 0, "room": step % 16}))
                published += 2
            last = round_ * FRAMES_PER_ROUND + FRAMES_PER_ROUND - 1
            # Every fast browser gets this round's newest frame before the next round starts, however stuck the
            # other one is. (The timeout is a safety net; nothing here measures time.)
            await wait_until(lambda last=last: all(r and r[-1] == last for r in received), timeout_s=30,
                             what=f"round {round_} delivered to all {FAST_CLIENTS} browsers")

        for steps in received:
            assert steps == sorted(set(steps)), "frames arrive in order, never twice"
            assert len(steps) >= ROUNDS

        status = await hud.status()
        channels = {c["label"]: c for c in status["clients"]["each"]}
        assert len(channels) == FAST_CLIENTS + 1
        slow = channels[stuck.label]
        big_frames = ROUNDS * FRAMES_PER_ROUND
        # The stuck browser stopped taking frames early: newer frames replaced the unsent ones (skipped), and
        # only the newest waits for it. It cost the others nothing, and the NATS side received every frame.
        assert slow["sending"] is True  # blocked in a send right now
        assert slow["frames_skipped"] > 0
        assert slow["frames_sent"] < big_frames // 2
        assert not any(c["sending"] for label, c in channels.items() if label != stuck.label)
        async with httpx.AsyncClient(base_url=hud.url) as client:
            metrics = (await client.get("/metrics")).text
        assert f'zelda_hud_messages_received_total{{kind="frame"}} {float(published)}' in metrics
    finally:
        for reader in readers:
            reader.cancel()
        await asyncio.gather(*readers, return_exceptions=True)


async def test_a_browser_stuck_past_the_send_timeout_is_let_go(
    hud_settings: HudSettings, bus: Bus, run_id: str
) -> None:
    server = HudServer(hud_settings.model_copy(update={"send_timeout_s": 0.3})).start()
    try:
        await server.wait_following()
        browser = StuckBrowser(server.port, "env-big")
        try:
            step = 0

            async def let_go() -> bool:
                nonlocal step
                step += 1
                await bus.publish_live(live_frame_subject("env-big"), LiveFrame(
                    run_id=run_id, env_id="env-big", step=step, png=noise_png(step)))
                clients = (await server.status())["clients"]
                return bool(clients["slow_disconnects"] == 1 and clients["connected"] == 0)  # its outbox is gone

            await wait_until(let_go, what="the stuck browser disconnected")
        finally:
            browser.close()
    finally:
        server.stop()
