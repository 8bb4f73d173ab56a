"""The HUD's REST side against a real NATS and a real object store: status, epochs, scores, token, probes."""

from __future__ import annotations

import logging
from pathlib import Path

import httpx
import pytest
import websockets
from nats.js.api import AckPolicy
from pydantic import SecretStr

from tests.hud.conftest import HudServer, game_screen
from tests.support.waiting import wait_until
from zelda_hud.server import uvicorn_config
from zelda_hud.settings import HudSettings
from zelda_rlaif.bus import Bus
from zelda_rlaif.events import EpochExported, LiveFrame, LiveMetrics, SegmentScored
from zelda_rlaif.settings import StoreSettings
from zelda_rlaif.storage import keys, open_store
from zelda_rlaif.subjects import (
    DEADLETTER_STREAM,
    EPOCH_EXPORTED,
    LIVE_METRICS,
    PIPELINE_STREAM,
    live_frame_subject,
)

TOKEN = "a-test-token-that-is-long-enough"


def scored(run_id: str, epoch: int, segment: str, combined: float) -> SegmentScored:
    return SegmentScored(run_id=run_id, epoch=epoch, segment_id=segment, combined=combined,
                         dimensions={"progress": combined, "novelty": 1 - combined},
                         weights={"progress": 0.4, "novelty": 0.1})


async def test_status_follows_the_bus(hud: HudServer, bus: Bus, run_id: str) -> None:
    await bus.publish_live(LIVE_METRICS.subject, LiveMetrics(
        run_id=run_id, epoch=2, env_steps=4096, episodes=3, env_steps_per_s=812.5, mean_episode_return=12.5,
        reward_components={"new_room": 20.0}, rooms_visited=[(0, 0x11), (0, 0x12)], tiles_visited=57))
    await bus.publish_live(live_frame_subject("env-0"), LiveFrame(
        run_id=run_id, env_id="env-0", step=7, png=game_screen(7), state={"group": 0, "room": 0x13}))
    await bus.publish(EPOCH_EXPORTED, EpochExported(run_id=run_id, epoch=2, segments_exported=5, env_steps=4096,
                                                    episodes=3))

    async def shown() -> bool:
        status = await hud.status()
        return bool(status["metrics"] and status["envs"] and status["pipeline"]["epochs"])

    await wait_until(shown, what="metrics, frame and epoch in /api/status")
    status = await hud.status()
    assert status["run_id"] == run_id and status["pinned"] is True
    assert status["metrics"]["env_steps"] == 4096
    assert status["envs"] == [{"env_id": "env-0", "step": 7, "frames": 1}]
    assert status["exploration"] == {"rooms_discovered": 3, "tiles_visited": 57}
    assert status["pipeline"]["epochs"][0]["announced"] == 5


async def test_epochs_and_scores_come_from_the_store(hud: HudServer, store_dir: Path, run_id: str) -> None:
    store = open_store(StoreSettings(url=store_dir.as_uri()))
    rows = [scored(run_id, 1, f"seg-{i}", 0.25 * i) for i in range(3)]
    body = "".join(r.model_dump_json() + "\n" for r in rows) + '{"not": "a scored segment"}\n'
    store.put_bytes(keys.epoch_scores(run_id, 1), body.encode())
    for row in rows:
        store.put_json(keys.scored_segment(run_id, 1, row.segment_id), row)
    store.put_json(keys.unjudged_segment(run_id, 1, "seg-9"), {"reason": "judge failed"})
    store.put_json(keys.epoch_manifest(run_id, 1), {"segments_exported": 4})
    store.put_json(keys.scored_segment(run_id, 0, "seg-a"), rows[0])  # an epoch still being judged

    async with httpx.AsyncClient(base_url=hud.url) as client:
        epochs = (await client.get("/api/epochs")).json()
        assert epochs == {"run_id": run_id, "epochs": [
            {"epoch": 0, "scores": False, "segments_announced": None, "segments_scored": 1, "segments_unjudged": 0},
            {"epoch": 1, "scores": True, "segments_announced": 4, "segments_scored": 3, "segments_unjudged": 1},
        ]}
        result = (await client.get("/api/epochs/1/scores")).json()
        assert result["count"] == 3
        assert result["mean_combined"] == pytest.approx(0.25)
        assert result["dimension_means"] == pytest.approx({"novelty": 0.75, "progress": 0.25})
        assert [r["segment_id"] for r in result["rows"]] == ["seg-0", "seg-1", "seg-2"]
        assert [r["line"] for r in result["invalid_rows"]] == [4]  # reported, not silently dropped

        missing = await client.get("/api/epochs/0/scores")
        assert missing.status_code == 404 and "no scores yet" in missing.json()["detail"]
        other = await client.get("/api/epochs", params={"run_id": "../etc"})
        assert other.status_code == 422  # run ids are validated before they become object keys


async def test_access_token_guards_api_and_websocket(hud_settings: HudSettings,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    settings = hud_settings.model_copy(update={"access_token": SecretStr(TOKEN)})
    server = HudServer(settings).start()
    try:
        async with httpx.AsyncClient(base_url=server.url) as client:
            refused = await client.get("/api/status")
            assert refused.status_code == 401 and "token" in refused.json()["detail"]
            assert (await client.get("/api/status", headers={"Authorization": "Bearer wrong"})).status_code == 401
            assert (await client.get("/api/status", headers={"Authorization": f"Bearer {TOKEN}"})).status_code == 200
            assert (await client.get("/api/status", params={"token": TOKEN})).status_code == 200
            # The page itself and the probes hold no run data.
            assert (await client.get("/")).status_code == 200
            assert (await client.get("/healthz")).status_code == 200
            assert (await client.get("/metrics")).status_code == 200

        async with websockets.connect(server.ws_url) as ws:
            with pytest.raises(websockets.ConnectionClosed) as closed:
                await ws.recv()
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 4401
        async with websockets.connect(f"{server.ws_url}?token={TOKEN}") as ws:
            assert '"type":"snapshot"' in str(await ws.recv())
    finally:
        server.stop()
    server_log = "\n".join(r.getMessage() for r in caplog.records if r.name.startswith("uvicorn"))
    assert "token=***" in server_log and TOKEN not in server_log  # access logs do not leak it


async def test_probes_and_metrics(hud: HudServer, bus: Bus, run_id: str) -> None:
    await bus.nc.publish(LIVE_METRICS.subject, b'{"run_id": "x", "epoch": "not a number"}')
    async with httpx.AsyncClient(base_url=hud.url) as client:
        assert (await client.get("/healthz")).json() == {"status": "ok", "nats": "connected"}
        assert (await client.get("/readyz")).status_code == 200

        async def counted() -> bool:
            text = (await client.get("/metrics")).text
            return 'zelda_hud_messages_invalid_total{kind="metrics"} 1.0' in text

        await wait_until(counted, what="invalid message counted")
        text = (await client.get("/metrics")).text
        assert "zelda_hud_nats_connected 1.0" in text
        assert "zelda_hud_clients 0.0" in text


def test_uvicorn_is_configured_for_many_browsers(hud_settings: HudSettings) -> None:
    config = uvicorn_config(hud_settings)
    assert config.ws_per_message_deflate is False  # PNGs do not compress; deflate per browser would cost CPU


async def test_the_hud_only_reads(hud: HudServer, bus: Bus) -> None:
    """Its stream readers are ephemeral, unacknowledged push consumers: they cannot take work from a service."""
    consumers = await bus.js.consumers_info(PIPELINE_STREAM) + await bus.js.consumers_info(DEADLETTER_STREAM)
    push = [c for c in consumers if c.config.deliver_subject]
    assert len(push) >= 2
    assert all(c.config.durable_name is None and c.config.ack_policy == AckPolicy.NONE for c in push)


async def test_without_a_pinned_run_it_shows_the_newest(hud_settings: HudSettings, bus: Bus, run_id: str) -> None:
    server = HudServer(hud_settings.model_copy(update={"run_id": None})).start()
    try:
        await server.wait_following()
        for run in (f"{run_id}-a", f"{run_id}-b"):
            await bus.publish_live(LIVE_METRICS.subject, LiveMetrics(
                run_id=run, epoch=0, env_steps=1, episodes=0, env_steps_per_s=1.0, mean_episode_return=None))

        async def newest_shown() -> bool:
            return (await server.status())["run_id"] == f"{run_id}-b"

        await wait_until(newest_shown, what="the newer run shown")
        await bus.publish_live(LIVE_METRICS.subject, LiveMetrics(
            run_id=f"{run_id}-a", epoch=0, env_steps=2, episodes=0, env_steps_per_s=1.0, mean_episode_return=None))
        await wait_until(lambda: _received(server, 3), what="third metrics message received")
        status = await server.status()
        assert status["run_id"] == f"{run_id}-b" and status["pinned"] is False
        assert {r["run_id"] for r in status["runs"]} >= {f"{run_id}-a", f"{run_id}-b"}
    finally:
        server.stop()


async def _received(server: HudServer, count: int) -> bool:
    async with httpx.AsyncClient(base_url=server.url) as client:
        text = (await client.get("/metrics")).text
    return f'zelda_hud_messages_received_total{{kind="metrics"}} {float(count)}' in text
