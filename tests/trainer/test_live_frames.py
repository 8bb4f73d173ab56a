"""Live screens reach NATS from the env without the env ever waiting on the network, even while NATS is away."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.support.streams import catch_live
from tests.support.waiting import free_port, wait_until
from zelda_rlaif.bus import Bus, LivePublisher
from zelda_rlaif.embedded_nats import EmbeddedNats
from zelda_rlaif.episodes import EpisodeStats
from zelda_rlaif.events import LiveFrame, LiveMetrics
from zelda_rlaif.game.config import EnvConfig
from zelda_rlaif.settings import NatsSettings
from zelda_rlaif.subjects import LIVE_FRAMES, LIVE_METRICS
from zelda_trainer.env_config import LivePlan, TrainingEnvConfig
from zelda_trainer.training_env import TrainingEnv


async def test_live_frames_are_published_as_pngs_with_state(bus: Bus, nats_settings: NatsSettings,
                                                            run_id: str) -> None:
    caught = await catch_live(bus, LIVE_FRAMES, run_id)
    frames: list[LiveFrame] = caught.events
    env = TrainingEnv(TrainingEnvConfig(
        env=EnvConfig(max_steps=100_000), epoch=0, export=None,
        live=LivePlan(run_id=run_id, fps=60, worker_index=0, nats_url=nats_settings.url)))
    env.attach(worker_index=0, vector_index=0)
    env.reset(seed=0)

    async def play() -> None:
        for step in range(3000):
            env.step(4 if step % 50 < 25 else 3)  # right / left
            if step % 100 == 0:
                await asyncio.sleep(0.01)  # let the subscriber's callbacks run

    await play()
    await wait_until(lambda: frames, what="a live frame")
    env.close()
    await caught.close()
    first = frames[0]
    assert first.png.startswith(b"\x89PNG") and first.env_id == env.source_id
    assert {"room", "x", "y", "health", "menu_open"} <= set(first.state)
    assert [f.step for f in frames] == sorted(f.step for f in frames)


async def test_live_events_never_wait_on_nats_and_resume_when_it_comes_back(tmp_path: Path) -> None:
    port = free_port()
    publisher = LivePublisher(NatsSettings(url=f"nats://127.0.0.1:{port}", connect_timeout_s=0.2), "test-live",
                              retry_s=0.2)
    metrics = [LiveMetrics(run_id="away", epoch=0, env_steps=step, env_steps_per_s=0.0,
                           episodes=EpisodeStats.of([], [])) for step in range(2000)]
    for event in metrics:  # nobody to connect to: each offer returns at once and the oldest pending ones go
        publisher.publish_live(LIVE_METRICS.subject, event)

    with EmbeddedNats(tmp_path / "nats", port=port) as server:
        bus = await Bus.connect(NatsSettings(url=server.url), name="test-live-listener")
        caught = await catch_live(bus, LIVE_METRICS)
        received = caught.events
        for _ in range(100):  # offered until the retry after the failed connection gets through
            publisher.publish_live(LIVE_METRICS.subject, lambda: metrics[-1])  # built on the publisher's thread
            if received:
                break
            await asyncio.sleep(0.05)
        assert received and {m.env_steps for m in received} <= {1998, 1999}, "only the newest wait"
        publisher.close()
        await bus.close()
