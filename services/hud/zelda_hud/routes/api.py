"""The read-only REST API: status of the live view, and the run's epochs as stored."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Depends

from zelda_hud.epochs import list_epochs
from zelda_hud.routes.deps import HubDep, RunIdDep, StoreDep, ViewsDep, require_token

router = APIRouter(prefix="/api", dependencies=[Depends(require_token)])


@router.get("/status")
async def get_status(hub: HubDep) -> dict[str, Any]:
    """What the HUD sees right now: run, envs, latest metrics, pipeline counters, connected browsers."""
    return hub.status()


@router.get("/epochs")
async def get_epochs(store: StoreDep, views: ViewsDep, run_id: RunIdDep) -> dict[str, Any]:
    """Every stored epoch of the run: its ``EpochReport``, judge scores per kind and dimension, segments scored
    and unjudged, and the reward model trained on it; ``metrics`` holds them under their metric names."""
    return {"run_id": run_id, "epochs": await asyncio.to_thread(list_epochs, store, run_id, views.epochs)}
