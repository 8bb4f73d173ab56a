"""Probes and Prometheus metrics. They reveal no run data, so they need no token (scrapers, kubelets)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response, status
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from zelda_hud.routes.deps import HubDep

router = APIRouter()


@router.get("/healthz")
async def healthz(hub: HubDep) -> dict[str, Any]:
    """Liveness: the server answers. NATS being down is reported, not fatal: the page says so and waits."""
    return {"status": "ok", "nats": hub.nats_state}


@router.get("/readyz")
async def readyz(hub: HubDep, response: Response) -> dict[str, Any]:
    """Readiness: live, 503 until the HUD is connected to NATS; serving a finished run, ready at once."""
    ready = not hub.live or hub.nats_state == "connected"
    if not ready:
        response.status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    return {"status": "ready" if ready else "waiting for NATS", "nats": hub.nats_state}


@router.get("/metrics")
async def metrics(request: Request) -> Response:
    return Response(generate_latest(request.app.state.telemetry.registry), media_type=CONTENT_TYPE_LATEST)
