"""``zelda-rlaif hud``: the real entry point starts (live or on a finished run), serves, stops cleanly, and refuses
bad settings."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.hud.stored_run import write_finished_run
from tests.support.waiting import free_port, wait_until
from zelda_hud.settings import HudSettings
from zelda_rlaif.cli import main
from zelda_rlaif.errors import SettingsError
from zelda_rlaif.settings import NatsSettings, load_settings


def test_bad_settings_name_the_variable(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("ZELDA_HUD_MAX_FPS", "0")
    assert main(["hud"]) == 2
    assert "ZELDA_HUD_MAX_FPS" in capsys.readouterr().err
    monkeypatch.delenv("ZELDA_HUD_MAX_FPS")
    monkeypatch.setenv("ZELDA_HUD_ACCESS_TOKEN", "changeme")
    with pytest.raises(SettingsError, match=r"ZELDA_HUD_ACCESS_TOKEN: .*placeholder"):
        load_settings(HudSettings)
    monkeypatch.setenv("ZELDA_HUD_ACCESS_TOKEN", "short-token")
    with pytest.raises(SettingsError, match=r"ZELDA_HUD_ACCESS_TOKEN: .*shorter than 16"):
        load_settings(HudSettings)


def test_exposure_without_token_is_detected() -> None:
    assert not HudSettings(host="127.0.0.1").exposed_without_token
    assert HudSettings(host="0.0.0.0").exposed_without_token
    assert not HudSettings(host="0.0.0.0", access_token="x" * 24).exposed_without_token


async def test_entry_point_serves_and_stops(nats_settings: NatsSettings, tmp_path: Path) -> None:
    port = free_port()
    env = {**os.environ, "ZELDA_NATS_URL": nats_settings.url, "ZELDA_STORE_URL": (tmp_path / "store").as_uri()}
    log_path = tmp_path / "hud.log"
    with log_path.open("wb") as log:
        process = await asyncio.create_subprocess_exec(
            str(Path(sys.executable).parent / "zelda-rlaif"), "hud", "--port", str(port),
            env=env, stdout=log, stderr=subprocess.STDOUT,
        )
    try:
        async def healthy() -> bool:
            try:
                async with httpx.AsyncClient() as client:
                    response = await client.get(f"http://127.0.0.1:{port}/healthz")
            except httpx.TransportError:
                assert process.returncode is None, log_path.read_text()
                return False
            return bool(response.json()["nats"] == "connected")

        await wait_until(healthy, timeout_s=30, what="zelda-rlaif hud answering /healthz")
        async with httpx.AsyncClient() as client:
            page = await client.get(f"http://127.0.0.1:{port}/")
            assert page.status_code == 200 and "zelda-rlaif" in page.text
            script = await client.get(f"http://127.0.0.1:{port}/static/vendor/uplot/uPlot.iife.min.js")
            assert script.status_code == 200 and "uPlot" in script.text  # served locally, no CDN
        process.send_signal(signal.SIGTERM)
        # SIGTERM sets the service's stop event: uvicorn closes the connections and shuts down, and the exit is clean.
        assert await asyncio.wait_for(process.wait(), timeout=15) == 0
        assert "Application shutdown complete" in log_path.read_text()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def test_entry_point_serves_a_finished_run(tmp_path: Path) -> None:
    """`zelda-rlaif hud --run-dir D`: no NATS anywhere (its address refuses connections), the run from D."""
    run_dir = tmp_path / "local"
    write_finished_run(run_dir, "cli-finished", epochs=2)
    port = free_port()
    env = {**os.environ, "ZELDA_NATS_URL": f"nats://127.0.0.1:{free_port()}"}
    env.pop("ZELDA_STORE_URL", None)
    log_path = tmp_path / "hud.log"
    with log_path.open("wb") as log:
        process = await asyncio.create_subprocess_exec(
            str(Path(sys.executable).parent / "zelda-rlaif"), "hud", "--run-dir", str(run_dir), "--port", str(port),
            env=env, stdout=log, stderr=subprocess.STDOUT,
        )
    try:
        async def ready() -> bool:
            try:
                async with httpx.AsyncClient() as client:
                    return (await client.get(f"http://127.0.0.1:{port}/readyz")).status_code == 200
            except httpx.TransportError:
                assert process.returncode is None, log_path.read_text()
                return False

        await wait_until(ready, timeout_s=30, what="zelda-rlaif hud --run-dir ready")
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
            epochs = (await client.get("/api/epochs")).json()
        assert epochs["run_id"] == "cli-finished" and [e["epoch"] for e in epochs["epochs"]] == [0, 1]
        process.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(process.wait(), timeout=15) == 0
        assert "serving the finished run cli-finished" in log_path.read_text()
        assert "NATS" not in log_path.read_text().replace("(no NATS, no live feed)", "")
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


def test_a_run_dir_without_a_run_says_what_to_do(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["hud", "--run-dir", str(tmp_path)]) == 2
    assert "neither summary.json nor run.json" in capsys.readouterr().err
