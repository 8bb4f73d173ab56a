"""``zelda-rlaif hud --run-dir D``: a finished run served from what it stored, with no NATS at all."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
import websockets

from tests.hud.conftest import HudServer
from tests.hud.stored_run import write_finished_run
from tests.support.waiting import free_port
from zelda_hud.settings import HudSettings
from zelda_rlaif.errors import SettingsError
from zelda_rlaif.settings import NatsSettings, StoreSettings, load_settings

NO_NATS = NatsSettings(url=f"nats://127.0.0.1:{free_port()}")  # nothing listens there


def test_the_run_dir_names_the_run_and_its_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ZELDA_STORE_URL", raising=False)
    run_dir = tmp_path / "local"
    write_finished_run(run_dir, "finished-1", epochs=1)
    settings = load_settings(HudSettings, run_dir=run_dir)
    assert settings.live is False
    assert settings.run_id == "finished-1" and settings.store.url == (run_dir / "store").resolve().as_uri()
    # Given explicitly, the run id and the store win over the directory's.
    assert load_settings(HudSettings, run_dir=run_dir, run_id="other").run_id == "other"
    monkeypatch.setenv("ZELDA_STORE_URL", "file:///elsewhere")
    assert load_settings(HudSettings, run_dir=run_dir).store.url == "file:///elsewhere"
    monkeypatch.delenv("ZELDA_STORE_URL")

    # A run that stopped before its summary: run.json names it. An s3 store: the summary names it.
    (run_dir / "summary.json").unlink()
    (run_dir / "run.json").write_text(json.dumps({"run_id": "stopped-2"}))
    assert load_settings(HudSettings, run_dir=run_dir).run_id == "stopped-2"
    remote = tmp_path / "remote"
    remote.mkdir()
    (remote / "summary.json").write_text(json.dumps({"run_id": "r3", "store": "s3://bucket/runs"}))
    monkeypatch.setenv("ZELDA_STORE_S3_ACCESS_KEY", "key-id-for-the-test")
    monkeypatch.setenv("ZELDA_STORE_S3_SECRET_KEY", "secret-for-the-test")
    assert load_settings(HudSettings, run_dir=remote).store.url == "s3://bucket/runs"

    with pytest.raises(SettingsError, match=r"ZELDA_HUD_RUN_DIR \(--run-dir\): .*is not a directory"):
        load_settings(HudSettings, run_dir=tmp_path / "missing")
    with pytest.raises(SettingsError, match=r"RUN_DIR \(--run-dir\): .*neither summary.json nor run.json.*--run-id"):
        load_settings(HudSettings, run_dir=tmp_path / "local" / "store")


async def test_serves_a_finished_run_without_nats(tmp_path: Path) -> None:
    write_finished_run(tmp_path / "local", "finished-4", epochs=4)
    server = HudServer(HudSettings(port=0, run_dir=tmp_path / "local", nats=NO_NATS,
                                   store=StoreSettings(url=(tmp_path / "local" / "store").as_uri()))).start()
    try:
        async with httpx.AsyncClient(base_url=server.url) as client:
            assert (await client.get("/readyz")).status_code == 200  # nothing to wait for
            assert (await client.get("/healthz")).json()["nats"] == "not used (finished run)"
            status = (await client.get("/api/status")).json()
            assert status["live"] is False and status["run_id"] == "finished-4"
            epochs = (await client.get("/api/epochs")).json()["epochs"]
            assert [e["epoch"] for e in epochs] == [0, 1, 2, 3]
            assert all(e["report"] and e["reward_model"] for e in epochs)
            segments = (await client.get("/api/epochs/3/segments")).json()["segments"]
            assert len(segments) == 5
        async with websockets.connect(server.ws_url) as ws:
            snapshot = json.loads(await ws.recv())
        assert snapshot["type"] == "snapshot" and snapshot["data"]["live"] is False
        assert snapshot["data"]["run_id"] == "finished-4" and snapshot["data"]["history"] == []
    finally:
        server.stop()
