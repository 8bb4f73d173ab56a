"""The HUD's REST side against a real NATS and a real object store: status, epochs, segments, replays, token,
probes."""

from __future__ import annotations

import logging
import statistics
from pathlib import Path

import httpx
import pytest
import websockets
from nats.js.api import AckPolicy
from pydantic import SecretStr

from tests.hud.conftest import HudServer, game_screen
from tests.hud.stored_run import DIMENSIONS, SEGMENTS_PER_EPOCH, STEPS_PER_EPOCH, write_stored_epoch
from tests.support.waiting import wait_until
from zelda_hud.server import uvicorn_config
from zelda_hud.settings import HudSettings
from zelda_rlaif.bus import Bus
from zelda_rlaif.episodes import EpisodeStats, EpochReport
from zelda_rlaif.events import EpochExported, LiveFrame, LiveMetrics
from zelda_rlaif.judge_figures import read_judge_figures
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


async def test_status_follows_the_bus(hud: HudServer, bus: Bus, run_id: str) -> None:
    await bus.publish_live(LIVE_METRICS.subject, LiveMetrics(
        run_id=run_id, epoch=2, env_steps=4096, env_steps_per_s=812.5, episodes=EpisodeStats.of([], []),
        reward_components={"new_room": 20.0}, rooms_visited=[(0, 0x11), (0, 0x12)]))
    await bus.publish_live(live_frame_subject("env-0"), LiveFrame(
        run_id=run_id, env_id="env-0", step=7, png=game_screen(7), state={"group": 0, "room": 0x13}))
    await bus.publish(EPOCH_EXPORTED, EpochExported(run_id=run_id, epoch=2, segments_exported=5, env_steps=4096,
                                                    episodes=3))

    async def shown() -> bool:
        status = await hud.status()
        return bool(status["metrics"] and status["envs"] and status["pipeline"]["epochs"])

    await wait_until(shown, what="metrics, frame and epoch in /api/status")
    status = await hud.status()
    assert status["run_id"] == run_id and status["pinned"] is True and status["live"] is True
    assert status["metrics"]["env_steps"] == 4096 and status["metrics"]["episodes"]["count"] == 0
    assert status["envs"] == [{"env_id": "env-0", "step": 7, "frames": 1}]
    assert status["exploration"] == {"rooms_discovered": 3}
    assert status["pipeline"]["epochs"][0]["announced"] == 5


async def test_epochs_come_from_the_store(hud: HudServer, store_dir: Path, run_id: str) -> None:
    """Each epoch's row: the trainer's report, the judges' means per kind and dimension, the reward model; under the
    metric names every output uses. Epochs still being judged show what is stored so far."""
    store = open_store(StoreSettings(url=store_dir.as_uri()))
    for epoch in range(3):
        write_stored_epoch(store, run_id, epoch, episode_count=0 if epoch == 0 else 4, judged=epoch < 2,
                           model=epoch < 1)
    async with httpx.AsyncClient(base_url=hud.url) as client:
        body = (await client.get("/api/epochs")).json()
    assert body["run_id"] == run_id
    rows = {row["epoch"]: row for row in body["epochs"]}
    assert sorted(rows) == [0, 1, 2]

    first = rows[0]
    assert first["report"]["episodes"]["count"] == 0
    assert first["episodes_summary"].startswith("no episode finished")
    assert first["env_steps"] == STEPS_PER_EPOCH
    assert first["segments_announced"] == SEGMENTS_PER_EPOCH
    assert (first["segments_scored"], first["segments_unjudged"]) == (SEGMENTS_PER_EPOCH - 1, 1)
    assert first["reward_model"]["validation_accuracy"] == pytest.approx(0.55)
    assert set(first["metrics"]) == {
        "throughput/env_steps_per_s", "episode/count", "judge/combined", "reward_model/accuracy", "reward_model/pairs",
        *(f"judge/{kind.value}/{dimension}" for kind, dims in DIMENSIONS.items() for dimension in dims)}
    # The unjudged segment's state and puzzle verdicts count; the mean is over every stored verdict.
    scores = [0.3 + 0.04 * i for i in range(SEGMENTS_PER_EPOCH - 1)] + [0.4]
    assert first["metrics"]["judge/state/progress"] == pytest.approx(sum(scores) / len(scores))

    second = rows[1]
    report = EpochReport.model_validate(second["report"])
    assert second["metrics"] == pytest.approx({**report.flat(), **read_judge_figures(store, run_id, 1)})
    assert second["metrics"]["milestone/talk_old_man"] == report.episodes.milestones["talk_old_man"]
    assert second["reward_model"] is None  # not trained yet

    third = rows[2]  # trained, not judged yet
    assert third["scores"] is False and third["segments_scored"] == 0
    assert not any(k.startswith("judge/") for k in third["metrics"])


async def test_an_epochs_segments_with_their_scores(hud: HudServer, store_dir: Path, run_id: str) -> None:
    store = open_store(StoreSettings(url=store_dir.as_uri()))
    write_stored_epoch(store, run_id, 1, episode_count=4)
    segments = [k for k in store.list(keys.epoch_segments(run_id, 1)) if keys.is_segment_manifest(k)]
    # A row that does not validate is reported with its line, not dropped silently.
    raw = store.get_bytes(keys.epoch_scores(run_id, 1)) + b'{"not": "a scored segment"}\n'
    store.put_bytes(keys.epoch_scores(run_id, 1), raw)
    write_stored_epoch(store, run_id, 2, episode_count=4, judged=False)  # still being judged

    async with httpx.AsyncClient(base_url=hud.url) as client:
        body = (await client.get("/api/epochs/1/segments")).json()
        assert body["closed"] is True and len(body["segments"]) == len(segments) == SEGMENTS_PER_EPOCH
        statuses = [s["status"] for s in body["segments"]]
        assert statuses == ["scored"] * (SEGMENTS_PER_EPOCH - 1) + ["unjudged"]
        first = body["segments"][0]
        assert first["combined"] == pytest.approx(statistics.fmean(first["dimensions"].values()), abs=1e-3)
        assert first["judged_by"] == ["puzzle", "state", "vision"]
        assert body["segments"][-1]["judged_by"] == ["puzzle", "state"]
        assert body["mean_combined"] == pytest.approx(
            statistics.fmean(s["combined"] for s in body["segments"] if s["combined"] is not None))
        [unreadable] = body["unreadable"]
        assert unreadable.startswith(f"{keys.epoch_scores(run_id, 1)} line {SEGMENTS_PER_EPOCH}: ")

        judging = (await client.get("/api/epochs/2/segments")).json()
        assert judging["closed"] is False and {s["status"] for s in judging["segments"]} == {"judging"}

        other = await client.get("/api/epochs", params={"run_id": "../etc"})
        assert other.status_code == 422  # run ids are validated before they become object keys
        assert (await client.get("/api/epochs/1/segments/..%2Fx")).status_code in (404, 422)


async def test_a_segments_replay_as_data_and_animation(hud: HudServer, store_dir: Path, run_id: str) -> None:
    store = open_store(StoreSettings(url=store_dir.as_uri()))
    write_stored_epoch(store, run_id, 1, episode_count=4)
    segment = "seg-001-0000"
    async with httpx.AsyncClient(base_url=hud.url, timeout=60) as client:
        replay = (await client.get(f"/api/epochs/1/segments/{segment}")).json()
        assert replay["manifest"]["segment_id"] == segment
        assert [v["kind"] for v in replay["verdicts"]] == ["state", "puzzle", "vision"]
        votes = replay["verdicts"][0]["record"]["votes"]
        assert len(votes) == 3 and votes[0]["rationale"].startswith("vote 1:")
        assert replay["scored"]["segment_id"] == segment and len(replay["steps"]) == 60

        gif = await client.get(f"/api/epochs/1/segments/{segment}/replay.gif")
        assert gif.status_code == 200 and gif.headers["content-type"] == "image/gif"
        assert gif.content.startswith(b"GIF89a")
        mp4 = await client.get(f"/api/epochs/1/segments/{segment}/replay.mp4")
        assert mp4.status_code == 200 and mp4.headers["content-type"] == "video/mp4"
        assert mp4.content[4:8] == b"ftyp"

        missing = await client.get("/api/epochs/1/segments/seg-none")
        assert missing.status_code == 404 and "no segment 'seg-none'" in missing.json()["detail"]
        assert (await client.get(f"/api/epochs/1/segments/{segment}/replay.webm")).status_code == 422


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
            for path in ("/api/epochs", "/api/epochs/0/segments", "/api/epochs/0/segments/s-1",
                         "/api/epochs/0/segments/s-1/replay.gif"):
                assert (await client.get(path)).status_code == 401, path
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
                run_id=run, epoch=0, env_steps=1, env_steps_per_s=1.0, episodes=EpisodeStats.of([], [])))

        async def newest_shown() -> bool:
            return (await server.status())["run_id"] == f"{run_id}-b"

        await wait_until(newest_shown, what="the newer run shown")
        await bus.publish_live(LIVE_METRICS.subject, LiveMetrics(
            run_id=f"{run_id}-a", epoch=0, env_steps=2, env_steps_per_s=1.0, episodes=EpisodeStats.of([], [])))
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
