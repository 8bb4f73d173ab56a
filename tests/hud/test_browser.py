"""The page in a real headless Chromium: live data on the real NATS shows up, and it survives a restart."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from playwright.async_api import Browser, async_playwright, expect
from pydantic import SecretStr

from tests.hud.conftest import HudServer, game_screen
from zelda_hud.settings import HudSettings
from zelda_rlaif.bus import Bus
from zelda_rlaif.events import (
    DeadLetter,
    EpochExported,
    GuidanceSuggestion,
    JudgeKind,
    LiveFrame,
    LiveMetrics,
    RewardModelUpdated,
    ScoresReady,
    SegmentExported,
    SegmentJudged,
    SegmentScored,
)
from zelda_rlaif.settings import StoreSettings
from zelda_rlaif.storage import keys, open_store
from zelda_rlaif.subjects import (
    DEAD_LETTER,
    EPOCH_EXPORTED,
    LIVE_GUIDANCE,
    LIVE_METRICS,
    PIPELINE_STREAM,
    REWARD_MODEL_UPDATED,
    SCORES_READY,
    SEGMENT_EXPORTED,
    SEGMENT_JUDGED,
    SEGMENT_SCORED,
    dead_letter_subject,
    live_frame_subject,
)

CHROMIUM = "/usr/bin/chromium"
NO_VALUE = "\u2013"  # the dash the page shows before a value arrives
SCORES = {
    JudgeKind.STATE: {"progress": 0.62, "dialog": 0.4, "efficiency": 0.55},
    JudgeKind.PUZZLE: {"puzzle": 0.3},
    JudgeKind.VISION: {"novelty": 0.81},
}
# A walk through the test world's 4x4 overworld (group 0) and into a dungeon (group 4).
ROUTE = [(0, 0x00), (0, 0x01), (0, 0x11), (0, 0x12), (0, 0x22), (0, 0x23), (0, 0x33), (4, 0x00), (4, 0x10)]


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    if shutil.which(CHROMIUM) is None:
        # Failing rather than skipping: a browser test that silently stops running protects nothing.
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium; scripts/test "
                    "does this when run as root). Playwright's own browser download is not used.")
    async with async_playwright() as playwright:
        chromium = await playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        yield chromium
        await chromium.close()


def frame(run_id: str, env_id: str, step: int, group: int, room: int) -> LiveFrame:
    state: dict[str, float | int | bool | str] = {
        "group": group, "room": room, "x": 40 + step % 80, "y": 64, "direction": 2, "health": 11, "max_health": 12,
        "rupees": 30 + step // 10, "keys": 1, "sword_level": 1, "text_active": step % 50 == 0, "menu_open": False,
    }
    return LiveFrame(run_id=run_id, env_id=env_id, step=step, png=game_screen(step, room), state=state)


def metrics(run_id: str, i: int, at: datetime) -> LiveMetrics:
    return LiveMetrics(
        run_id=run_id, epoch=1 + i // 10, env_steps=4096 * (i + 1), episodes=3 * (i + 1), env_steps_per_s=800 + 9 * i,
        mean_episode_return=5 + 2.5 * i - (i % 3), emitted_at=at,
        reward_components={"new_room": 4 + i * 0.8, "coverage": 2 + i * 0.3, "rnd": 1.5 - 0.05 * i, "death": -1.0},
        rooms_visited=ROUTE[: 3 + i % 6], tiles_visited=100 + 17 * i,
    )


async def publish_pipeline(bus: Bus, run_id: str, store_dir: Path) -> None:
    await bus.publish(EPOCH_EXPORTED, EpochExported(run_id=run_id, epoch=1, segments_exported=3, env_steps=40960,
                                                    episodes=30))
    store = open_store(StoreSettings(url=store_dir.as_uri()))
    rows = []
    for s in range(3):
        segment = f"ep0001-seg{s:03d}"
        await bus.publish(SEGMENT_EXPORTED, SegmentExported(
            run_id=run_id, epoch=1, segment_id=segment, episode_id="ep0001", profile="testworld",
            step_start=300 * s, step_end=300 * (s + 1), num_steps=300, frame_every=10,
            frame_steps=list(range(300 * s, 300 * (s + 1), 10)), total_reward=12.5 + s, reward_components={},
            rooms_visited=[(0, 0x11)], reward_model_epoch=None))
        if s == 2:
            continue  # this one's judges gave up: see the dead letter below
        for kind, scores in SCORES.items():
            await bus.publish(SEGMENT_JUDGED, SegmentJudged(
                run_id=run_id, epoch=1, segment_id=segment, kind=kind, backend="rules", model="rules-v1",
                scores={k: min(v + 0.1 * s, 1.0) for k, v in scores.items()}, agreement=0.9 - 0.2 * s, votes=3,
                rationale=f"{kind.value} judge: Link reached room 0x{0x12 + s:02x}, opened a chest and kept moving."),
                subject=SEGMENT_JUDGED.for_kind(kind))
        row = SegmentScored(run_id=run_id, epoch=1, segment_id=segment, combined=0.55 + 0.1 * s,
                            dimensions={"progress": 0.62, "novelty": 0.81, "puzzle": 0.3},
                            weights={"progress": 0.4, "novelty": 0.1, "puzzle": 0.2})
        rows.append(row)
        await bus.publish(SEGMENT_SCORED, row)
    letter = DeadLetter(original_subject=SEGMENT_EXPORTED.subject, stream=PIPELINE_STREAM, consumer="judge-vision",
                        stream_sequence=None, deliveries=5, reason="LLM endpoint timed out 5 times",
                        payload=b"{}", run_id=run_id, epoch=1, segment_id="ep0001-seg002")
    await bus.publish(DEAD_LETTER, letter, subject=dead_letter_subject(SEGMENT_EXPORTED.subject))
    store.put_jsonl(keys.epoch_scores(run_id, 1), rows)
    await bus.publish(SCORES_READY, ScoresReady(run_id=run_id, epoch=1, segments_scored=2, segments_unjudged=1))


async def test_page_shows_live_data_and_reconnects(
    browser: Browser, hud: HudServer, hud_settings: HudSettings, bus: Bus, run_id: str, store_dir: Path,
    artifacts_dir: Path,
) -> None:
    page = await browser.new_page(viewport={"width": 1500, "height": 1650})
    await page.goto(hud.url)
    await expect(page.locator("#conn")).to_have_attribute("data-state", "connected")
    await expect(page.locator("#stat-env-steps")).to_have_text(NO_VALUE)
    await expect(page.locator("#count-scored")).to_have_text("0")

    # Training progress: a history of metrics (spread over the last 20 minutes for the chart)
    start = datetime.now(UTC) - timedelta(minutes=20)
    for i in range(20):
        await bus.publish_live(LIVE_METRICS.subject, metrics(run_id, i, start + timedelta(minutes=i)))
    await expect(page.locator("#stat-env-steps")).to_have_text(f"{4096 * 20:,}")
    await expect(page.locator("#stat-epoch")).to_have_text("2")
    assert await page.evaluate("window.hud.charts.ret.data[0].length") == 20
    assert await page.evaluate("window.hud.charts.comp.series.length") == 1 + 4  # x + one per component

    # Live screens of two envs walking the route
    for step, (group, room) in enumerate(ROUTE):
        await bus.publish_live(live_frame_subject("env-1"), frame(run_id, "env-1", 1000 + step, 0, 0x01))
        await bus.publish_live(live_frame_subject("env-0"), frame(run_id, "env-0", 100 * step, group, room))
    await expect(page.locator("#frame-step")).to_have_text(f"{100 * (len(ROUTE) - 1):,}")
    await expect(page.locator("#gs-group")).to_have_text("4")
    await expect(page.locator("#gs-room")).to_have_text("0x10 (row 1, col 0)")
    await expect(page.locator("#gs-health")).to_have_text("2.75 / 3 ♥")
    await expect(page.locator("#env-select option")).to_have_count(2)
    await expect(page.locator("#rooms-discovered")).to_have_text(str(len(ROUTE)))
    await expect(page.locator('.heat-grid[data-group="0"] .heat-cell')).to_have_count(16)  # 4x4, sized to rooms seen
    await expect(page.locator('.heat-grid[data-group="4"] .heat-cell')).to_have_count(2)  # 2 rows x 1 col
    assert await page.locator("#frame").get_attribute("src") is not None

    # Choosing the other env switches the screen to its frames
    await page.select_option("#env-select", "env-1")
    await expect(page.locator("#frame-step")).to_have_text("1,008")
    await page.select_option("#env-select", "env-0")
    await expect(page.locator("#frame-step")).to_have_text("800")

    # Judges, scores, dead letters, the reward model and guidance
    await publish_pipeline(bus, run_id, store_dir)
    await bus.publish(REWARD_MODEL_UPDATED, RewardModelUpdated(
        run_id=run_id, epoch=1, accepted=True, model_epoch=1, pairs=1275, validation_accuracy=0.784,
        trained_on_epochs=[0, 1]))
    await bus.publish_live(LIVE_GUIDANCE.subject, GuidanceSuggestion(
        run_id=run_id, env_id="env-0", step=812, source="vision", backend="openai", action="UP",
        reason="The cave entrance is just north; go up to explore a new room."))
    await expect(page.locator("#verdicts tbody tr")).to_have_count(6)
    await expect(page.locator("#verdicts")).to_contain_text("opened a chest")
    await expect(page.locator("#count-scored")).to_have_text("2")
    await expect(page.locator("#count-unjudged")).to_have_text("1")
    await expect(page.locator("#count-dead")).to_have_text("1")
    await expect(page.locator("#count-pending")).to_have_text("0")
    await expect(page.locator("#rm-accuracy")).to_have_text("78.4%")
    await expect(page.locator("#rm-model-epoch")).to_have_text("epoch 1")
    await expect(page.locator("#guidance")).to_contain_text("cave entrance")
    await expect(page.locator("#dead-letters")).to_contain_text("timed out")
    await expect(page.locator('#epochs tr[data-epoch="1"]')).to_contain_text("scores.jsonl")
    await page.locator('#epochs tr[data-epoch="1"]').click()
    await expect(page.locator("#epoch-detail")).to_contain_text("2 segments, mean combined 0.600")
    await page.screenshot(path=str(artifacts_dir / "hud.png"))

    # The server restarts: the page says so, reconnects by itself and shows new data again.
    port = hud.port
    hud.stop()
    await expect(page.locator("#conn")).to_have_attribute("data-state", "reconnecting")
    restarted = HudServer(hud_settings.model_copy(update={"port": port})).start()
    try:
        await expect(page.locator("#conn")).to_have_attribute("data-state", "connected", timeout=20_000)
        await restarted.wait_following()
        await expect(page.locator("#count-scored")).to_have_text("2")  # replayed from the stream
        await bus.publish_live(live_frame_subject("env-0"), frame(run_id, "env-0", 4242, 0, 0x23))
        await expect(page.locator("#frame-step")).to_have_text("4,242")
        await expect(page.locator("#rooms-discovered")).to_have_text("1")  # this HUD has seen one frame
        await page.evaluate("window.scrollTo(0, 0)")
        await page.screenshot(path=str(artifacts_dir / "hud-after-restart.png"))
    finally:
        restarted.stop()


async def test_page_with_an_access_token(browser: Browser, hud_settings: HudSettings) -> None:
    token = "browser-test-token-0123456789"
    server = HudServer(hud_settings.model_copy(update={"access_token": SecretStr(token)})).start()
    try:
        page = await browser.new_page()
        await page.goto(server.url)
        await expect(page.locator("#conn")).to_have_attribute("data-state", "unauthorized")
        await expect(page.locator("#conn-state")).to_contain_text("access token required")

        await page.goto(f"{server.url}/?token={token}")
        await expect(page.locator("#conn")).to_have_attribute("data-state", "connected")
        assert "token" not in page.url  # kept for the tab, not in the address bar
        async with page.expect_response(lambda r: "/api/epochs" in r.url) as epochs:
            await page.reload()  # still authorised after a reload, for the websocket and the REST calls
        assert (await epochs.value).status == 200
        await expect(page.locator("#conn")).to_have_attribute("data-state", "connected")
        await expect(page.locator("#run-id")).to_have_text(hud_settings.run_id or "")
    finally:
        server.stop()
