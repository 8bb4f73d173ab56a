"""Dependencies the routes declare: the hub, the settings, the object store, the caches of what it holds and the
token check."""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import Depends, HTTPException, Query, Request, status

from zelda_hud.auth import TOKEN_HELP, token_accepted
from zelda_hud.cache import StoredViews
from zelda_hud.hub import Hub
from zelda_hud.settings import HudSettings
from zelda_rlaif.errors import StoreError
from zelda_rlaif.events import RunId
from zelda_rlaif.storage import ObjectStore, open_store


def get_settings(request: Request) -> HudSettings:
    settings: HudSettings = request.app.state.settings
    return settings


def get_hub(request: Request) -> Hub:
    hub: Hub = request.app.state.hub
    return hub


def get_views(request: Request) -> StoredViews:
    views: StoredViews = request.app.state.views
    return views


SettingsDep = Annotated[HudSettings, Depends(get_settings)]
HubDep = Annotated[Hub, Depends(get_hub)]
ViewsDep = Annotated[StoredViews, Depends(get_views)]


def require_token(request: Request, settings: SettingsDep) -> None:
    if not token_accepted(settings.access_token, request.headers.get("authorization"),
                          request.query_params.get("token")):
        raise HTTPException(status.HTTP_401_UNAUTHORIZED, f"access token required: {TOKEN_HELP}",
                            headers={"WWW-Authenticate": "Bearer"})


async def get_store(request: Request, settings: SettingsDep) -> ObjectStore:
    """The object store, opened on first use so the HUD starts (and shows live data) even while it is down."""
    store: ObjectStore | None = getattr(request.app.state, "store", None)
    if store is None:
        try:
            store = await asyncio.to_thread(open_store, settings.store)
        except StoreError as exc:
            raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, str(exc)) from exc
        request.app.state.store = store
    return store


StoreDep = Annotated[ObjectStore, Depends(get_store)]


def get_run_id(hub: HubDep, run_id: Annotated[RunId | None, Query(description="default: the run shown")] = None) -> str:
    chosen = run_id or hub.runs.current_id
    if chosen is None:
        raise HTTPException(
            status.HTTP_404_NOT_FOUND,
            "no run seen on the bus yet: pass ?run_id=... or set ZELDA_HUD_RUN_ID",
        )
    return chosen


RunIdDep = Annotated[str, Depends(get_run_id)]
