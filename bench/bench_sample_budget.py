"""The env runners' shared sample budget against equal shares, paired in one trainer process.

    python bench/bench_sample_budget.py [--pairs 40] [--overlap]

Whole-training rates move by tens of percent between the fresh processes of ``bench_peers.py`` on a small shared
host, more than the budget changes. Here one algorithm (the trainer's defaults, 2 env runners x 8 emulators,
export and live frames off) runs pairs of PPO iterations, one with the budget armed and one without (each runner then
plays its own share, as with ``ZELDA_TRAINER_SHARED_SAMPLE_BUDGET=false``), in alternating order, and prints the
median of the paired ratios of their wall times with its quartiles. With ``--overlap`` (sampling while learning) each
setting first plays an iteration untimed, so the timed one learns on a batch sampled under that setting.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("RAY_AUTH_MODE", "disabled")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=40)
    parser.add_argument("--overlap", action="store_true", help="sampling while learning (overlap_sampling)")
    args = parser.parse_args()

    import ray

    from zelda_trainer.algorithm import build_config, set_learner_threads
    from zelda_trainer.sample_budget import SharedBudgetPPO
    from zelda_trainer.settings import TrainerSettings
    from zelda_trainer.training import init_ray

    settings = TrainerSettings(run_id="bench-budget", export_fraction=0.0, live_frames=False, ray_num_cpus=2,
                               tensorboard_dir=None, overlap_sampling=args.overlap, shared_sample_budget=True)
    init_ray(settings)
    set_learner_threads(settings)
    algo = build_config(settings, "testworld", 0).build_algo()
    assert isinstance(algo, SharedBudgetPPO) and algo.sample_budget is not None
    for _ in range(3):  # warm-up: actor start, first compilation, first resets
        algo.train()
    seconds: dict[bool, list[float]] = {True: [], False: []}
    ratios = []
    for pair in range(args.pairs):
        timed = {}
        for shared in (True, False) if pair % 2 else (False, True):
            algo.share_samples = shared
            if args.overlap:
                algo.train()  # samples the next batch under this setting
            started = time.perf_counter()
            algo.train()
            timed[shared] = time.perf_counter() - started
            seconds[shared].append(timed[shared])
        ratios.append(timed[True] / timed[False])
    algo.stop()
    ray.shutdown()

    low, median, high = statistics.quantiles(ratios, n=4)
    print(f"{args.pairs} pairs of PPO iterations (batch 2048, 2 env runners x 8 emulators"
          f"{', sampling while learning' if args.overlap else ''}), alternating order")
    print(f"median iteration: shared budget {statistics.median(seconds[True]) * 1000:.0f} ms, equal shares "
          f"{statistics.median(seconds[False]) * 1000:.0f} ms")
    print(f"shared budget / equal shares, per pair: median {median:.3f} (quartiles {low:.3f}-{high:.3f})")


if __name__ == "__main__":
    main()
