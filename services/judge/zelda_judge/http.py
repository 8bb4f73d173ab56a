"""``/healthz`` and Prometheus ``/metrics`` of one replica, served inside the replica's event loop.

Plain Starlette (what FastAPI is built on): two fixed endpoints need no request models, and a judge replica
starts ~0.5 s faster without FastAPI's imports, which matters when replicas scale up in a burst.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import uvicorn
from prometheus_client import CONTENT_TYPE_LATEST
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from zelda_judge.metrics import JudgeMetrics
from zelda_rlaif.http_server import EmbeddedServer


def build_app(metrics: JudgeMetrics, health: Callable[[], dict[str, Any]]) -> Starlette:
    async def healthz(request: Request) -> JSONResponse:
        report = health()
        return JSONResponse(report, status_code=200 if report.get("ok") else 503)

    async def prometheus(request: Request) -> Response:
        return Response(metrics.render(), media_type=CONTENT_TYPE_LATEST)

    return Starlette(routes=[Route("/healthz", healthz), Route("/metrics", prometheus)])


def health_server(app: Starlette, host: str, port: int) -> EmbeddedServer:
    config = uvicorn.Config(app, host=host, port=port, log_config=None, access_log=False, lifespan="off")
    return EmbeddedServer(config)
