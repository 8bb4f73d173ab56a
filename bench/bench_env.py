"""Environment throughput: raw PyBoy against ``env.step`` on the bundled test world, in one run.

    OMP_NUM_THREADS=1 python bench/bench_env.py [--steps 20000]

Prints steps/s for
- raw PyBoy: ``tick(frame_skip, False)`` with no input (the issue's baseline),
- raw PyBoy with the same button presses as the env (walking makes the game do more work per frame),
- ``env.step`` with the default rewards, and without RND,
and the ratios env/raw. Numbers vary with the machine; the ratios are what to compare.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np

from zelda_rlaif.game.config import EnvConfig
from zelda_rlaif.game.env import ZeldaEnv
from zelda_rlaif.game.rewards.config import RewardConfig


def rate(fn, steps: int) -> float:  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    fn(steps)
    return steps / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20_000)
    args = parser.parse_args()
    actions = [int(a) for a in np.random.default_rng(0).integers(0, 8, args.steps)]

    def make(rnd: float) -> ZeldaEnv:
        env = ZeldaEnv(EnvConfig(max_steps=10**9, rewards=RewardConfig(rnd=rnd)))
        env.reset(seed=0)
        return env

    env, env_no_rnd = make(RewardConfig().rnd), make(0.0)
    frame_skip, press = env.config.frame_skip, env.config.press_frames
    emulator = env.emulator

    def raw_idle(n: int) -> None:
        for _ in range(n):
            emulator.pyboy.tick(frame_skip, False)

    def raw_same_inputs(n: int) -> None:
        for a in actions[:n]:
            emulator.act(a, frame_skip, press)

    def steps_of(environment: ZeldaEnv):  # type: ignore[no-untyped-def]
        def run(n: int) -> None:
            for a in actions[:n]:
                environment.step(a)
        return run

    results: dict[str, list[float]] = {"raw idle": [], "raw same inputs": [], "env.step": [], "env.step no RND": []}
    for _ in range(3):  # interleaved rounds, best of three: fair under background load
        env.reset(seed=0)
        results["raw idle"].append(rate(raw_idle, args.steps))
        env.reset(seed=0)
        results["raw same inputs"].append(rate(raw_same_inputs, args.steps))
        env.reset(seed=0)
        results["env.step"].append(rate(steps_of(env), args.steps))
        env_no_rnd.reset(seed=0)
        results["env.step no RND"].append(rate(steps_of(env_no_rnd), args.steps))
    best = {name: max(values) for name, values in results.items()}
    print(f"frame_skip={frame_skip}, {args.steps} steps per measurement, best of 3 interleaved rounds")
    for name, value in best.items():
        print(f"  {name:<18} {value:>9.0f} steps/s  ({value * frame_skip:>8.0f} frames/s)")
    print(f"ratio env.step / raw idle          {best['env.step'] / best['raw idle']:.2f}")
    print(f"ratio env.step / raw same inputs   {best['env.step'] / best['raw same inputs']:.2f}")
    print(f"ratio env.step no RND / raw same   {best['env.step no RND'] / best['raw same inputs']:.2f}")
    env.close()
    env_no_rnd.close()


if __name__ == "__main__":
    main()
