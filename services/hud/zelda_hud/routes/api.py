"""The read-only REST API: status of the live view, and epochs and scores from the object store."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Path, status

from zelda_hud.epochs import list_epochs, read_scores
from zelda_hud.routes.deps import HubDep, RunIdDep, StoreDep, require_token
from zelda_rlaif.errors import ObjectNotFound

router = APIRouter(prefix="/api", dependencies=[Depends(require_token)])


@router.get("/status")
async def get_status(hub: HubDep) -> dict[str, Any]:
    """What the HUD sees right now: run, envs, latest metrics, pipeline counters, connected browsers."""
    return hub.status()


@router.get("/epochs")
async def get_epochs(store: StoreDep, run_id: RunIdDep) -> dict[str, Any]:
    """Epochs of the run with stored scores, and how many segments were scored or left unjudged."""
    return {"run_id": run_id, "epochs": await asyncio.to_thread(list_epochs, store, run_id)}


@router.get("/epochs/{epoch}/scores")
async def get_epoch_scores(
    store: StoreDep, run_id: RunIdDep, epoch: Annotated[int, Path(ge=0)]
) -> dict[str, Any]:
    """The epoch's ``scores.jsonl``: every segment's combined score and dimensions, with a summary."""
    try:
        return await asyncio.to_thread(read_scores, store, run_id, epoch)
    except ObjectNotFound as exc:
        raise HTTPException(
            status.HTTP_404_NOT_FOUND, f"epoch {epoch} of run {run_id} has no scores yet ({exc})"
        ) from exc
