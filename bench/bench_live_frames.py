"""Live frames for the HUD cost the env almost nothing: env steps/s with and without them, side by side.

    OMP_NUM_THREADS=1 python bench/bench_live_frames.py [--seconds 5]

Runs the trainer's ``TrainingEnv`` (no export) for the same wall time with the live-frame publisher off and
on (15 frames/s to an embedded nats-server, with a subscriber counting what arrives), in alternating rounds,
and prints steps/s for both, the ratio, and the frames/s delivered.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

from nats.aio.msg import Msg

from zelda_rlaif.bus import Bus
from zelda_rlaif.embedded_nats import EmbeddedNats
from zelda_rlaif.game.config import EnvConfig
from zelda_rlaif.settings import NatsSettings
from zelda_rlaif.subjects import LIVE_FRAMES
from zelda_trainer.env_config import LivePlan, TrainingEnvConfig
from zelda_trainer.training_env import TrainingEnv


def steps_per_s(env: TrainingEnv, seconds: float) -> float:
    env.reset(seed=0)
    steps, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        for step in range(200):
            env.step(4 if (steps + step) % 60 < 30 else 3)
        steps += 200
    return steps / (time.perf_counter() - started)


async def main(seconds: float) -> None:
    nats = EmbeddedNats(Path(tempfile.mkdtemp(prefix="bench-nats-")))
    url = nats.start()
    bus = await Bus.connect(NatsSettings(url=url), name="bench")
    received = 0

    async def count(msg: Msg) -> None:
        nonlocal received
        received += 1

    await bus.subscribe_live(LIVE_FRAMES.subject, count)
    # The first env of a process is the one that streams (as in an env runner), so build it first.
    env = EnvConfig(max_steps=10**9)
    live = TrainingEnv(TrainingEnvConfig(env=env, epoch=0, export=None,
                                          live=LivePlan(run_id="bench", fps=15, worker_index=0, nats_url=url)))
    plain = TrainingEnv(TrainingEnvConfig(env=env, epoch=0, export=None, live=None))
    live.attach(worker_index=0, vector_index=0)
    plain.attach(worker_index=0, vector_index=1)
    rates: dict[str, list[float]] = {"off": [], "on": []}
    live_time = 0.0
    for _ in range(3):
        rates["off"].append(await asyncio.to_thread(steps_per_s, plain, seconds))
        before = received
        started = time.perf_counter()
        rates["on"].append(await asyncio.to_thread(steps_per_s, live, seconds))
        await asyncio.sleep(0.3)  # frames in flight
        live_time += time.perf_counter() - started
        print(f"  round: live frames delivered {received - before}")
    off, on = max(rates["off"]), max(rates["on"])
    print(f"env steps/s without live frames {off:9.0f}")
    print(f"env steps/s with live frames    {on:9.0f}   ratio {on / off:.3f}")
    print(f"live frames delivered           {received / live_time:9.1f} frames/s (target >= 10)")
    plain.close()
    live.close()
    await bus.close()
    nats.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    asyncio.run(main(parser.parse_args().seconds))
