"""The page in a real headless Chromium: live data on the real NATS shows up and survives a restart; a finished
run is served from its store with charts, epochs and segment replays; nothing overflows a 390 px wide screen.
Screenshots go to the test artifacts directory (hud*.png)."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from playwright.async_api import Browser, Page, async_playwright, expect
from pydantic import SecretStr

from tests.hud.conftest import HudServer, game_screen
from tests.hud.stored_run import MILESTONES, SEGMENTS_PER_EPOCH, write_finished_run, write_stored_epoch
from tests.support.waiting import free_port
from zelda_hud.settings import HudSettings
from zelda_rlaif.bus import Bus
from zelda_rlaif.episodes import EpisodeRecord, EpisodeStats
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
from zelda_rlaif.settings import NatsSettings, StoreSettings
from zelda_rlaif.storage import open_store
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
    """Iteration ``i``: ten per epoch; the first of each epoch has no finished episode yet."""
    finished = [EpisodeRecord(steps=300 + 10 * k, env_return=5 + 2.5 * i - (k % 3), reward_model_return=40 - 3 * i + k,
                              rooms_visited=3 + k % 4, tiles_visited=50 + 6 * i + k, milestones=MILESTONES[: k % 5])
                for k in range(i % 10)]
    return LiveMetrics(
        run_id=run_id, epoch=1 + i // 10, env_steps=4096 * (i + 1), env_steps_per_s=800 + 9 * i, emitted_at=at,
        episodes=EpisodeStats.of(finished, MILESTONES),
        reward_components={"new_room": 4 + i * 0.8, "coverage": 2 + i * 0.3, "rnd": 1.5 - 0.05 * i, "death": -1.0,
                           "shaping": 60 - 2 * i},
        rooms_visited=ROUTE[: 3 + i % 6],
    )


async def publish_pipeline(bus: Bus, run_id: str) -> None:
    """What the judges announce on the bus for epoch 1 (the store holds the epoch: ``write_stored_epoch``)."""
    await bus.publish(EPOCH_EXPORTED, EpochExported(run_id=run_id, epoch=1, segments_exported=3, env_steps=40960,
                                                    episodes=30))
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
        await bus.publish(SEGMENT_SCORED, SegmentScored(
            run_id=run_id, epoch=1, segment_id=segment, combined=0.55 + 0.1 * s,
            dimensions={"progress": 0.62, "novelty": 0.81, "puzzle": 0.3},
            weights={"progress": 0.4, "novelty": 0.1, "puzzle": 0.2}))
    letter = DeadLetter(original_subject=SEGMENT_EXPORTED.subject, stream=PIPELINE_STREAM, consumer="judge-vision",
                        stream_sequence=None, deliveries=5, reason="LLM endpoint timed out 5 times",
                        payload=b"{}", run_id=run_id, epoch=1, segment_id="ep0001-seg002")
    await bus.publish(DEAD_LETTER, letter, subject=dead_letter_subject(SEGMENT_EXPORTED.subject))
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

    # Training progress: one metrics point per iteration, ten iterations per epoch
    start = datetime.now(UTC) - timedelta(minutes=20)
    for i in range(20):
        await bus.publish_live(LIVE_METRICS.subject, metrics(run_id, i, start + timedelta(minutes=i)))
    await expect(page.locator("#stat-env-steps")).to_have_text(f"{4096 * 20:,}")
    await expect(page.locator("#stat-epoch")).to_have_text("2")
    latest = metrics(run_id, 19, start).episodes
    await expect(page.locator('#episode-stats [data-metric="episode/return_env_mean"] dd')).to_have_text(
        f"{latest.return_env_mean:.2f}")
    await expect(page.locator('#episode-stats [data-metric="milestone/take_key"]')).to_contain_text(
        f"{latest.milestones['take_key'] * 100:.1f}%")
    await expect(page.locator("#stat-tiles")).to_have_text(f"{latest.tiles_mean:.1f}")  # tiles per episode, not 0
    charts = await page.evaluate("window.hud.chartSeries()")
    returns = charts["chart-return"]
    assert returns["names"] == ["episode/return_env_mean", "episode/return_env_median",
                                "episode/return_reward_model_mean", "episode/return_reward_model_median"]
    assert returns["points"] == 18  # every iteration that had a finished episode, against env steps
    assert returns["scales"] == ["y", "y", "right", "right"]  # the reward model's on its own axis
    assert returns["axes"] == ["env steps", "env return per episode", "reward-model return per episode"]
    assert charts["chart-milestones"]["names"] == [f"milestone/{m}" for m in MILESTONES] + ["milestone/score"]
    components = charts["chart-components"]
    assert components["names"] == list(metrics(run_id, 0, start).reward_components)
    assert components["scales"][-1] == "right" and components["points"] == 20
    for chart in charts.values():
        assert len(set(chart["colors"])) == len(chart["colors"]), chart  # no two series share a colour
    # The next epoch's first iteration: nothing finished yet, and the page says so.
    await bus.publish_live(LIVE_METRICS.subject, metrics(run_id, 20, start + timedelta(minutes=20)))
    await expect(page.locator("#episodes-none")).to_contain_text("no episode finished yet in epoch 3")
    await expect(page.locator("#stat-tiles")).to_have_text("no episode finished yet")

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

    # Judges, scores, dead letters, the reward model and guidance; epoch 1 as stored
    write_stored_epoch(open_store(StoreSettings(url=store_dir.as_uri())), run_id, 1, episode_count=6)
    await publish_pipeline(bus, run_id)
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
    # The stored epoch: its row in the epoch table, a dot on the charts, its segments in the browser.
    await expect(page.locator('#epochs tr[data-epoch="1"]')).to_contain_text("4 / 1 / 5")
    assert (await page.evaluate("window.hud.chartSeries()"))["chart-judges"]["points"] == 1
    await page.locator('#epochs tr[data-epoch="1"]').click()
    await expect(page.locator("#segments tbody tr")).to_have_count(SEGMENTS_PER_EPOCH)
    await expect(page.locator("#segments-summary")).to_contain_text("epoch 1: 5 segments, 4 scored, 1 unjudged")
    await page.evaluate("window.scrollTo(0, 0)")
    await page.screenshot(path=str(artifacts_dir / "hud.png"), full_page=True)

    # The same live page on a phone: nothing wider than the screen.
    phone = await browser.new_page(viewport={"width": 390, "height": 844})
    await phone.goto(hud.url)
    await expect(phone.locator("#frame-step")).not_to_have_text(NO_VALUE)
    await expect(phone.locator("#epochs tbody tr")).to_have_count(1)
    assert await phone.evaluate("document.documentElement.scrollWidth") <= 390
    await phone.screenshot(path=str(artifacts_dir / "hud-live-390.png"), full_page=True)
    await phone.close()

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


FINISHED_TOKEN = "finished-run-token-0123456789"
FINISHED_EPOCHS = 5


@pytest.fixture
def finished_hud(tmp_path: Path) -> Iterator[HudServer]:
    """``zelda-rlaif hud --run-dir`` on a finished run of five epochs, behind an access token, with no NATS."""
    write_finished_run(tmp_path / "local", "finished-run", epochs=FINISHED_EPOCHS)
    server = HudServer(HudSettings(
        port=0, run_dir=tmp_path / "local", access_token=SecretStr(FINISHED_TOKEN),
        nats=NatsSettings(url=f"nats://127.0.0.1:{free_port()}"),
        store=StoreSettings(url=(tmp_path / "local" / "store").as_uri()))).start()
    yield server
    server.stop()


async def open_finished_run(browser: Browser, server: HudServer, width: int, height: int) -> Page:
    page = await browser.new_page(viewport={"width": width, "height": height})
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    await page.goto(f"{server.url}/?token={FINISHED_TOKEN}")
    await expect(page.locator("#nats-state")).to_have_text("finished run")
    await expect(page.locator("#epochs tbody tr")).to_have_count(FINISHED_EPOCHS)
    await expect(page.locator("#segments tbody tr")).to_have_count(SEGMENTS_PER_EPOCH)
    assert not errors
    return page


async def open_replay(page: Page) -> None:
    await page.locator("#segments tbody tr").first.click()
    await expect(page.locator("#replay-details")).to_contain_text("vote 1:")
    await expect(page.locator("#replay-gif")).to_be_visible(timeout=90_000)  # rendered on request
    assert await page.evaluate("document.getElementById('replay-gif').naturalWidth") > 0


async def test_a_finished_run(browser: Browser, finished_hud: HudServer, artifacts_dir: Path) -> None:
    page = await open_finished_run(browser, finished_hud, 1400, 1000)
    for panel in ("#screen-panel", "#exploration-panel", "#judges-panel", "#guidance-panel"):
        await expect(page.locator(panel)).to_be_hidden()  # no live feed: no live panels
    await expect(page.locator("#episode-stats")).to_contain_text("episodes of epoch 4 (the last stored)")
    await expect(page.locator('#epochs tr[data-epoch="0"]')).to_contain_text("no episode finished")
    charts = await page.evaluate("window.hud.chartSeries()")
    assert charts["chart-return"]["points"] == FINISHED_EPOCHS - 1  # epoch 0 finished no episode
    assert charts["chart-length"]["points"] == FINISHED_EPOCHS  # its env steps/s exists all the same
    assert charts["chart-judges"]["points"] == FINISHED_EPOCHS
    assert {"judge/combined", "judge/state/progress", "reward_model/accuracy"} <= set(charts["chart-judges"]["names"])
    assert "chart-components" not in charts  # reward components are live only
    await page.screenshot(path=str(artifacts_dir / "hud-finished-run.png"), full_page=True)

    await page.select_option("#segment-epoch", "2")
    await expect(page.locator("#segments-summary")).to_contain_text("epoch 2: 5 segments, 4 scored, 1 unjudged")
    await expect(page.locator("#segments tbody tr").last).to_contain_text("unjudged")
    await open_replay(page)
    await expect(page.locator('#replay-details .verdict[data-kind="state"]')).to_contain_text("state judge: Link")
    await page.locator("#replay-format button[data-format=mp4]").click()
    await expect(page.locator("#replay-mp4")).to_be_visible(timeout=90_000)
    await page.locator("#segments-panel").screenshot(path=str(artifacts_dir / "hud-finished-run-replay.png"))


async def test_a_finished_run_at_390px(browser: Browser, finished_hud: HudServer, artifacts_dir: Path) -> None:
    page = await open_finished_run(browser, finished_hud, 390, 844)
    assert await page.evaluate("document.documentElement.scrollWidth") <= 390
    await page.screenshot(path=str(artifacts_dir / "hud-finished-390.png"), full_page=True)
    await open_replay(page)
    assert await page.evaluate("document.documentElement.scrollWidth") <= 390
    await page.locator("#segments-panel").screenshot(path=str(artifacts_dir / "hud-finished-390-replay.png"))
