"""Live screens reach NATS from the env without the env ever waiting on the network."""

from __future__ import annotations

import asyncio

from nats.aio.msg import Msg

from zelda_rlaif.bus import Bus
from zelda_rlaif.events import LiveFrame
from zelda_rlaif.settings import NatsSettings
from zelda_rlaif.subjects import LIVE_FRAMES
from zelda_trainer.training_env import TrainingEnv


async def test_live_frames_are_published_as_pngs_with_state(bus: Bus, nats_settings: NatsSettings,
                                                            run_id: str) -> None:
    frames: list[LiveFrame] = []

    async def on_frame(msg: Msg) -> None:
        frame = LiveFrame.model_validate_json(msg.data)
        if frame.run_id == run_id:
            frames.append(frame)

    sub = await bus.subscribe_live(LIVE_FRAMES.subject, on_frame)
    env = TrainingEnv({"env": {"max_steps": 100_000}, "nats_url": nats_settings.url,
                       "live": {"run_id": run_id, "fps": 60, "worker_index": 0}})
    env.attach(worker_index=0, vector_index=0)
    env.reset(seed=0)

    async def play() -> None:
        for step in range(3000):
            env.step(4 if step % 50 < 25 else 3)  # right / left
            if step % 100 == 0:
                await asyncio.sleep(0.01)  # let the subscriber's callbacks run

    await play()
    for _ in range(100):
        if frames:
            break
        await asyncio.sleep(0.05)
    env.close()
    await sub.unsubscribe()
    assert frames, "no live frame arrived"
    first = frames[0]
    assert first.png.startswith(b"\x89PNG") and first.env_id == env.source_id
    assert {"room", "x", "y", "health", "menu_open"} <= set(first.state)
    assert [f.step for f in frames] == sorted(f.step for f in frames)
