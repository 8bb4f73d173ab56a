"""The websocket that pushes live state to a browser (protocol: ``zelda_hud.wire``)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging

from fastapi import APIRouter, WebSocket, WebSocketDisconnect

from zelda_hud.auth import token_accepted
from zelda_hud.fanout import ClientChannel, SlowClient
from zelda_hud.hub import Hub
from zelda_hud.settings import HudSettings

log = logging.getLogger(__name__)
router = APIRouter()

# Application close codes (4000-4999) the page understands.
CLOSE_UNAUTHORIZED = 4401
CLOSE_TOO_SLOW = 4408
MAX_WATCHED = 64  # envs one browser may watch by name (or it asks for all)


@router.websocket("/ws")
async def live(websocket: WebSocket) -> None:
    settings: HudSettings = websocket.app.state.settings
    hub: Hub = websocket.app.state.hub
    await websocket.accept()
    # Checked after accepting: a browser cannot read an HTTP status of a refused upgrade, but it can read
    # a close code, and the page then tells the user to add the token instead of retrying forever.
    if not token_accepted(settings.access_token, websocket.headers.get("authorization"),
                          websocket.query_params.get("token")):
        await websocket.close(CLOSE_UNAUTHORIZED, "access token required: open the page with ?token=...")
        return

    peer = f"{websocket.client.host}:{websocket.client.port}" if websocket.client else "?"
    channel = hub.fanout.open(label=peer)
    if env := websocket.query_params.get("env"):
        hub.watch(channel, env.split(",")[:MAX_WATCHED])
    pump = asyncio.create_task(channel.pump(websocket.send_text, hub.snapshot_for, settings.send_timeout_s))
    listen = asyncio.create_task(_listen(websocket, hub, channel))
    try:
        done, _ = await asyncio.wait({pump, listen}, return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            error = task.exception()
            if isinstance(error, SlowClient):
                hub.fanout.slow_disconnects += 1
                log.info("%s; disconnecting it (its page reconnects when it can keep up)", error)
                # The close frame may never get through a stuck connection either: try briefly, then let go.
                with contextlib.suppress(WebSocketDisconnect, RuntimeError, OSError, TimeoutError):
                    await asyncio.wait_for(websocket.close(CLOSE_TOO_SLOW, "too slow"), timeout=1.0)
            elif error is not None and not isinstance(error, WebSocketDisconnect | RuntimeError | OSError):
                raise error
    finally:
        pump.cancel()
        listen.cancel()
        # Collect both: a send cut short by the disconnect ends with that error rather than the cancellation.
        await asyncio.gather(pump, listen, return_exceptions=True)
        hub.fanout.close(channel)


async def _listen(websocket: WebSocket, hub: Hub, channel: ClientChannel) -> None:
    """Read what the page asks for (which env to watch) until it goes away."""
    while True:
        text = await websocket.receive_text()
        try:
            request = json.loads(text)
        except ValueError:
            log.debug("ignoring a non-JSON message from %s", channel.label)
            continue
        if not isinstance(request, dict) or request.get("type") != "watch":
            continue
        env_ids = request.get("env_ids") or []
        if isinstance(env_ids, list) and all(isinstance(e, str) for e in env_ids):
            hub.watch(channel, env_ids[:MAX_WATCHED], watch_all=request.get("all") is True)
