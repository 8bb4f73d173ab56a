"""One trainer lever on against off, paired iteration by iteration in one trainer process.

    python bench/bench_paired.py [--lever shared-budget|bf16] [--pairs 40] [--overlap]

Whole-training rates move by tens of percent between the fresh processes of ``bench_peers.py`` on a small shared
host, more than one lever changes. Here one algorithm (the trainer's defaults, 2 env runners x 8 emulators, export
and live frames off) runs pairs of PPO iterations, one with the lever on and one with it off, in alternating order,
and prints the median of the paired ratios of their wall times with its quartiles, and the learner's update timed
apart. The levers:

- ``shared-budget``: the env runners' shared sample budget, armed or not (each runner then plays its own share, as
  with ``ZELDA_TRAINER_SHARED_SAMPLE_BUDGET=false``).
- ``bf16``: the learner's trunk in bfloat16 or float32 (``ZELDA_TRAINER_LEARNER_PRECISION`` bf16 / fp32, switched on
  the CPU learner's module between iterations).

With ``--overlap`` (sampling while learning) each setting first plays an iteration untimed, so the timed one learns
on a batch sampled under that setting.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("RAY_AUTH_MODE", "disabled")

LEVERS = ("shared-budget", "bf16")


def lever_switch(lever: str, algo: Any) -> Callable[[bool], None]:
    """A function that turns ``lever`` on or off in the built ``algo``."""
    from ray.rllib.core import DEFAULT_MODULE_ID

    from zelda_trainer.sample_budget import SharedBudgetPPO
    from zelda_trainer.settings import LearnerPrecision

    if lever == "shared-budget":
        assert isinstance(algo, SharedBudgetPPO) and algo.sample_budget is not None

        def share(on: bool) -> None:
            algo.share_samples = on

        return share

    def precision(on: bool) -> None:
        chosen = LearnerPrecision.BF16 if on else LearnerPrecision.FP32

        def set_precision(learner: Any) -> None:
            learner.module[DEFAULT_MODULE_ID].unwrapped().learner_precision = chosen

        assert algo.learner_group is not None  # a built Algorithm has one
        algo.learner_group.foreach_learner(set_precision)

    return precision


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lever", choices=LEVERS, default="shared-budget")
    parser.add_argument("--pairs", type=int, default=40)
    parser.add_argument("--overlap", action="store_true", help="sampling while learning (overlap_sampling)")
    args = parser.parse_args()

    import ray

    from zelda_trainer.algorithm import build_config, set_learner_threads
    from zelda_trainer.settings import TrainerSettings
    from zelda_trainer.training import init_ray

    settings = TrainerSettings(run_id="bench-paired", export_fraction=0.0, live_frames=False, ray_num_cpus=2,
                               tensorboard_dir=None, overlap_sampling=args.overlap, shared_sample_budget=True)
    init_ray(settings)
    set_learner_threads(settings)
    algo = build_config(settings, "testworld", 0).build_algo()
    switch = lever_switch(args.lever, algo)
    learners = algo.learner_group
    assert learners is not None  # a built Algorithm has one
    update_seconds: list[float] = []
    update = learners.update

    def timed_update(*update_args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return update(*update_args, **kwargs)
        finally:
            update_seconds.append(time.perf_counter() - started)

    learners.update = timed_update  # type: ignore[method-assign]  # a clock around the learner's update
    for _ in range(3):  # warm-up: actor start, first compilation, first resets
        algo.train()
    seconds: dict[bool, list[float]] = {True: [], False: []}
    updates: dict[bool, list[float]] = {True: [], False: []}
    ratios = []
    for pair in range(args.pairs):
        timed = {}
        for on in (True, False) if pair % 2 else (False, True):
            switch(on)
            if args.overlap:
                algo.train()  # samples the next batch under this setting
            started = time.perf_counter()
            algo.train()
            timed[on] = time.perf_counter() - started
            seconds[on].append(timed[on])
            updates[on].append(update_seconds[-1])
        ratios.append(timed[True] / timed[False])
    algo.stop()
    ray.shutdown()

    low, median, high = statistics.quantiles(ratios, n=4)
    print(f"{args.pairs} pairs of PPO iterations (batch 2048, 2 env runners x 8 emulators"
          f"{', sampling while learning' if args.overlap else ''}), {args.lever} on and off in alternating order")
    for on in (True, False):
        print(f"{args.lever} {'on' if on else 'off'}: median iteration {statistics.median(seconds[on]) * 1000:.1f} ms, "
              f"the learner's update {statistics.median(updates[on]) * 1000:.1f} ms")
    print(f"{args.lever} on / off, per pair: median {median:.3f} (quartiles {low:.3f}-{high:.3f})")


if __name__ == "__main__":
    main()
