"""Fixtures for the HUD tests: a HUD served by uvicorn on a random port, and game-like frames."""

from __future__ import annotations

import asyncio
import io
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from PIL import Image, ImageDraw

from tests.support.waiting import wait_until
from zelda_hud.server import build_server
from zelda_hud.settings import HudSettings
from zelda_rlaif.bus import Bus
from zelda_rlaif.settings import NatsSettings, StoreSettings
from zelda_rlaif.subjects import STREAMS


class HudServer:
    """The real HUD app under uvicorn in a thread with its own event loop, like a separate process would be.

    Running it apart from the test's loop keeps the test's own clients from being scheduled by the server
    (and vice versa), and lets a test stop it and start a new one on the same port.
    """

    def __init__(self, settings: HudSettings) -> None:
        self.settings = settings
        self.server, sock = build_server(settings)
        self.port = sock.getsockname()[1]
        self.thread = threading.Thread(target=lambda: asyncio.run(self.server.serve(sockets=[sock])), daemon=True)

    def start(self) -> HudServer:
        self.thread.start()
        for _ in range(500):
            if self.server.started:
                return self
            if not self.thread.is_alive():
                raise RuntimeError("the HUD server thread exited during start; see the log above")
            threading.Event().wait(0.02)
        raise RuntimeError("the HUD server did not start in 10 s")

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=15)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ws"

    async def status(self, **params: str) -> dict[str, Any]:
        async with httpx.AsyncClient(base_url=self.url) as client:
            response = await client.get("/api/status", params=params)
            response.raise_for_status()
            body: dict[str, Any] = response.json()
            return body

    async def wait_following(self, **params: str) -> None:
        """Until the HUD is subscribed to everything, so events published next are not missed."""

        async def following() -> bool:
            status = await self.status(**params)
            return status["nats"] == "connected" and len(status["streams_followed"]) == len(STREAMS)

        await wait_until(following, what="HUD following NATS")


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture
def hud_settings(nats_settings: NatsSettings, store_dir: Path, run_id: str) -> HudSettings:
    return HudSettings(
        port=0, run_id=run_id, nats=nats_settings, store=StoreSettings(url=store_dir.as_uri()),
        max_fps=60,
    )


@pytest.fixture
async def hud(hud_settings: HudSettings, bus: Bus) -> AsyncIterator[HudServer]:
    """A started HUD that follows the (provisioned) streams; ``bus`` is the test's publisher."""
    server = HudServer(hud_settings).start()
    await server.wait_following()
    yield server
    server.stop()


def game_screen(step: int, room: int = 0x11) -> bytes:
    """A 160x144 PNG that looks like a top-down game screen; the player moves with ``step``."""
    image = Image.new("RGB", (160, 144), (112, 184, 80))
    draw = ImageDraw.Draw(image)
    for x in range(0, 160, 16):  # a hedge of trees along the top and bottom
        for y in (0, 128):
            draw.ellipse((x + 1, y + 1, x + 15, y + 15), fill=(32, 104, 48))
    for i in range(room % 5 + 2):  # rocks differ per room
        draw.rectangle((24 + 22 * i, 40 + (i * 13) % 50, 36 + 22 * i, 52 + (i * 13) % 50), fill=(150, 130, 100))
    draw.rectangle((64, 96, 96, 104), fill=(216, 200, 120))  # a path
    px, py = 20 + (step * 3) % 120, 60 + (step * 2) % 50
    draw.rectangle((px, py, px + 10, py + 12), fill=(40, 160, 40))  # tunic
    draw.rectangle((px + 2, py - 4, px + 8, py + 2), fill=(240, 200, 160))  # face
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def noise_png(seed: int, size: int = 128) -> bytes:
    """An incompressible PNG (tens of kB): fills a stuck connection's buffers quickly."""
    import random

    rng = random.Random(seed)
    image = Image.frombytes("RGB", (size, size), rng.randbytes(size * size * 3))
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()
