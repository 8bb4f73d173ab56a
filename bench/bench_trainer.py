"""Training throughput against the raw emulator limit on the same cores, in one run.

    python bench/bench_trainer.py [--runners 2] [--iterations 6]

1. Raw limit: R processes, each ticking PyBoy (``tick(frame_skip, False)``) on the test world as fast as it
   can, side by side: the most env steps/s these cores can emulate.
2. Training: PPO on Ray RLlib with R env runners (k emulators each) sampling *and* training; env steps/s
   measured over iterations after a warm-up iteration.
3. Sampling alone: the same env runners sampling as many steps with no learner update in between.
Prints both, the ratio (target >= 0.5) and the per-emulator rate against the original design's ~15 steps/s.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import time
from collections.abc import Callable

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("RAY_AUTH_MODE", "disabled")

ORIGINAL_STEPS_PER_S_PER_EMULATOR = 15.0


def raw_worker(seconds: float, frame_skip: int, out: mp.Queue) -> None:
    from zelda_rlaif.game.emulator import Emulator

    emulator = Emulator()
    emulator.boot_to_gameplay()
    steps, deadline = 0, time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        for _ in range(100):
            emulator.pyboy.tick(frame_skip, False)
        steps += 100
    out.put(steps / seconds)


def raw_limit(processes: int, seconds: float, frame_skip: int) -> float:
    queue: mp.Queue = mp.Queue()
    workers = [mp.Process(target=raw_worker, args=(seconds, frame_skip, queue)) for _ in range(processes)]
    for worker in workers:
        worker.start()
    rates = [queue.get() for _ in workers]
    for worker in workers:
        worker.join()
    return sum(rates)


PROBED_ITERATIONS = 2  # untimed iterations after the timed ones, each followed by ``on_iteration``


def training_rate(runners: int, envs_per_runner: int, iterations: int, ppo_overrides: dict[str, int],
                  on_iteration: Callable[[], None] | None = None, overlap: bool = False, shared_budget: bool = True,
                  window: tuple[Callable[[], None], Callable[[], None]] | None = None,
                  learner_precision: str | None = None) -> tuple[float, float]:
    """Env steps/s trained (sampling and learning in turn, or at once with ``overlap``), then sampled alone by the
    same env runners. ``window``: called as the timed iterations start and as they end (bench_peers.py meters the
    CPU there). ``on_iteration`` is called after each of ``PROBED_ITERATIONS`` more iterations that are not timed
    (bench_peers.py reads Ray's object store there): with overlap the env runners sample on while it runs, so a probe
    inside the timed window would hand them time the clock does not count. ``learner_precision``:
    ``ZELDA_TRAINER_LEARNER_PRECISION``, None for the trainer's default."""
    import ray

    from zelda_trainer import metrics
    from zelda_trainer.algorithm import build_config, set_learner_threads
    from zelda_trainer.overlap import AHEAD_TAG
    from zelda_trainer.sample_budget import SharedBudgetPPO
    from zelda_trainer.settings import PPOSettings, TrainerSettings
    from zelda_trainer.training import init_ray

    settings = TrainerSettings(run_id="bench", num_env_runners=runners, envs_per_runner=envs_per_runner,
                               export_fraction=0.0, live_frames=False, ray_num_cpus=runners, overlap_sampling=overlap,
                               shared_sample_budget=shared_budget, ppo=PPOSettings.model_validate(ppo_overrides),
                               # None: the trainer's own default
                               **({} if learner_precision is None else {"learner_precision": learner_precision}))
    init_ray(settings)  # as the trainer does: its object store size too
    set_learner_threads(settings)  # as the trainer does
    algo = build_config(settings, "testworld", 0).build_algo()
    assert isinstance(algo, SharedBudgetPPO)  # the trainer's algorithm, with or without overlap
    runner_group, config = algo.env_runner_group, algo.config
    assert runner_group is not None and config is not None  # a built Algorithm has both
    algo.train()  # warm-up: actor start, first compilation of everything
    start_steps = metrics.lifetime_env_steps(algo.train())
    if window is not None:
        window[0]()
    started = time.perf_counter()
    for _ in range(iterations):
        result = algo.train()
    elapsed = time.perf_counter() - started
    if window is not None:
        window[1]()
    steps = metrics.lifetime_env_steps(result) - start_steps
    if on_iteration is not None:
        for _ in range(PROBED_ITERATIONS):
            algo.train()
            on_iteration()
    # With overlap the timed iterations start and end with a batch in flight (a steady state); it is not timed.
    runner_group.fetch_ready_async_reqs(tags=AHEAD_TAG, timeout_seconds=None)
    # The same env runners sampling the same number of steps with no learner update in between: the rate a
    # learner on its own device (a GPU) could approach, since PPO samples and learns in turn.
    # Each runner's default sample is its share of a batch; with a shared budget, armed as an iteration arms it.
    batch = config.train_batch_size_per_learner
    started = time.perf_counter()
    for _ in range(iterations):
        algo.arm_sample_budget(batch)
        runner_group.foreach_env_runner(lambda runner: runner.sample(), local_env_runner=False)
    sampled = iterations * batch / (time.perf_counter() - started)
    algo.stop()
    ray.shutdown()
    return steps / elapsed, sampled


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runners", type=int, default=2)
    parser.add_argument("--envs-per-runner", type=int, help="emulators per runner (default: the trainer's)")
    parser.add_argument("--iterations", type=int, default=6)
    parser.add_argument("--raw-seconds", type=float, default=10.0)
    for name in ("train_batch_size", "minibatch_size", "num_epochs"):  # unset: the trainer's defaults
        parser.add_argument(f"--{name.replace('_', '-')}", type=int, dest=name)
    args = parser.parse_args()
    ppo = {name: getattr(args, name) for name in ("train_batch_size", "minibatch_size", "num_epochs")
           if getattr(args, name) is not None}

    limit = raw_limit(args.runners, args.raw_seconds, frame_skip=4)
    from zelda_trainer.settings import TrainerSettings

    envs = args.envs_per_runner or TrainerSettings.model_fields["envs_per_runner"].default
    trained, sampled = training_rate(args.runners, envs, args.iterations, ppo)
    per_emulator = trained / (args.runners * envs)
    print(f"cores/env runners: {args.runners}, {envs} emulators per runner, frame_skip 4, test world, "
          f"PPO overrides: {ppo or 'none'}")
    print(f"  raw PyBoy limit (R processes side by side)  {limit:>9.0f} env steps/s")
    print(f"  PPO sample + train (wall clock)             {trained:>9.0f} env steps/s")
    print(f"  env runners sampling alone (no learner)     {sampled:>9.0f} env steps/s")
    print(f"ratio training / raw limit                    {trained / limit:.2f}  (target >= 0.5)")
    print(f"ratio sampling alone / raw limit              {sampled / limit:.2f}  (bound with the learner elsewhere)")
    print(f"per emulator {per_emulator:.0f} steps/s = {per_emulator / ORIGINAL_STEPS_PER_S_PER_EMULATOR:.0f}x "
          f"the original design's ~{ORIGINAL_STEPS_PER_S_PER_EMULATOR:.0f} steps/s (target > 10x)")


if __name__ == "__main__":
    main()
