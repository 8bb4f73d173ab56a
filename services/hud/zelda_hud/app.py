"""The HUD application: settings -> clients (lifespan) -> routes. ``create_app`` is what uvicorn serves.

Live (the default) it follows the bus; with ``run_dir`` (a finished run) it never connects to NATS and serves
only what the run stored: the page then says "finished run" and shows no live feed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

from zelda_hud.cache import StoredViews
from zelda_hud.feeds import Feeds
from zelda_hud.hub import Hub
from zelda_hud.routes import api, health, live, segments
from zelda_hud.settings import HudSettings
from zelda_hud.telemetry import Telemetry

log = logging.getLogger(__name__)

STATIC_DIR = Path(__file__).parent / "static"
TICK_S = 0.25


async def _tick(hub: Hub) -> None:
    while True:
        hub.tick()
        await asyncio.sleep(TICK_S)


def create_app(settings: HudSettings) -> FastAPI:
    telemetry = Telemetry()
    hub = Hub(settings, telemetry)
    feeds = Feeds(settings, hub) if settings.live else None

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if settings.exposed_without_token:
            log.warning("the HUD listens on %s without ZELDA_HUD_ACCESS_TOKEN: anyone who can reach it can read "
                        "it; set a token when it is exposed beyond this machine", settings.host)
        if feeds is None:
            log.info("serving the finished run %s from %s (no NATS, no live feed)", settings.run_id, settings.store.url)
        tasks = [asyncio.create_task(_tick(hub), name="hud-tick")]
        if feeds is not None:
            tasks.append(asyncio.create_task(feeds.run(), name="hud-feeds"))
        try:
            yield
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            if feeds is not None:
                await feeds.close()

    # No Swagger UI: it loads its assets from a CDN, and the HUD must work offline. The schema is served.
    app = FastAPI(title="zelda-rlaif HUD", lifespan=lifespan, docs_url=None, redoc_url=None,
                  openapi_url="/api/openapi.json")
    app.state.settings = settings
    app.state.hub = hub
    app.state.telemetry = telemetry
    app.state.views = StoredViews()
    app.include_router(api.router)
    app.include_router(segments.router)
    app.include_router(health.router)
    app.include_router(live.router)
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")

    @app.get("/", include_in_schema=False)
    async def index() -> FileResponse:
        # The page holds no data (it fetches everything with the token), so it is served to anyone.
        return FileResponse(STATIC_DIR / "index.html", headers={"Cache-Control": "no-cache"})

    return app
