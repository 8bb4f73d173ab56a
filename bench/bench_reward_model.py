"""Reward-model benchmark: Bradley-Terry training time for 100,000 pairs, and the cost of Phi per env step.

Run from the repository root::

    .venv/bin/python bench/bench_reward_model.py            # full size (about a minute on 2 cores)
    .venv/bin/python bench/bench_reward_model.py --quick    # smaller, for a smoke run

Prints, measured side by side in one run on this CPU with one torch thread:
- training: 100,000 training pairs over 640 segments of 300 states (a window of about three epochs) with the
  service's settings (defaults: five passes, minibatches of 1024 pairs, 16 sampled states per segment and
  step; ``ZELDA_REWARD_MODEL_*`` variables apply); validation accuracy; and the cost per step of exact means
  over all 300 states instead, to show what the sampling buys;
- Phi for one observation: the shared numpy ``Potential.phi`` against a ``torch.no_grad()`` forward of the
  same network, the same with optimism for unseen places (the place lookup added to every call), and the
  per-observation cost inside a batch of 64.
Target (issue 6): five passes over 100,000 pairs in under 10 s.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from dataclasses import replace

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
import torch

from zelda_reward_model.bradley_terry import TrainingConfig, train_bradley_terry
from zelda_reward_model.preferences import PreferenceSplit, build_preferences
from zelda_reward_model.settings import RewardModelSettings
from zelda_reward_model.update import training_config
from zelda_rlaif.reward_model.model_file import RewardModelFile
from zelda_rlaif.reward_model.places import UnseenPlaces
from zelda_rlaif.reward_model.potential import Potential


def synthetic(segments: int, steps: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Random walks in an 8-D latent state seen through a fixed 128-D embedding; scores from a known reward."""
    rng = np.random.default_rng(seed)
    embedding = rng.standard_normal((8, 128)) / np.sqrt(8)
    latent = rng.standard_normal((segments, 1, 8)) + 0.15 * np.cumsum(rng.standard_normal((segments, steps, 8)), 1)
    observations = (np.tanh(latent @ embedding) + 0.05 * rng.standard_normal((segments, steps, 128))).astype(np.float32)
    reward = latent[..., 0] + 0.5 * np.sin(2 * latent[..., 1]) - 0.3 * latent[..., 2] ** 2
    return observations, 1 / (1 + np.exp(-reward.mean(axis=1)))


def timed_training(
    observations: np.ndarray, split: PreferenceSplit, config: TrainingConfig
) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds of this process (what an idle machine's wall time would be), accuracy."""
    n, steps, _ = observations.shape
    lengths = np.full(n, steps, dtype=np.int64)
    offsets = np.arange(n, dtype=np.int64) * steps
    wall, cpu = time.perf_counter(), time.process_time()
    trained = train_bradley_terry(observations.reshape(-1, 128), offsets, lengths, split, config)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    accuracy = trained.curve[-1].validation.accuracy
    return wall, cpu, float("nan") if accuracy is None else accuracy


def per_call_us(fn: Callable[[], object], calls: int) -> float:
    """CPU microseconds per call (CPU time, so other work on a busy machine does not count)."""
    for _ in range(min(calls, 1000)):
        fn()
    started = time.process_time()
    for _ in range(calls):
        fn()
    return (time.process_time() - started) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="10,000 pairs instead of 100,000")
    args = parser.parse_args()
    torch.set_num_threads(1)

    pairs_wanted = 10_000 if args.quick else 100_000
    segments = 200 if args.quick else 640
    observations, combined = synthetic(segments, 300)
    split = build_preferences(combined, margin=0.02, tie_band=0.0, validation_fraction=0.2, max_pairs=pairs_wanted,
                              rng=np.random.default_rng(0))
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs; torch threads {torch.get_num_threads()}")
    print(f"data: {segments} segments x 300 states, {len(split.train):,} training pairs, "
          f"{split.validation.decisive_count:,} decisive validation pairs")

    config = training_config(RewardModelSettings())
    passes = config.passes_for(len(split.train))
    steps = passes * -(-len(split.train) // config.batch_size)
    seconds, cpu, accuracy = timed_training(observations, split, config)
    print(f"\ntraining, {passes} passes x {len(split.train):,} pairs = {steps} steps (batch {config.batch_size}, "
          f"{config.states_per_segment} sampled states per segment): {seconds:.2f} s wall, {cpu:.2f} s CPU "
          f"({passes * len(split.train) / seconds:,.0f} pairs/s wall), validation accuracy {accuracy:.3f}"
          f"  [target < 10 s: {'met' if min(seconds, cpu) < 10 else 'MISSED'}"
          f"{' on CPU time; the machine is busy' if seconds >= 10 > cpu else ''}]")

    # Exact means over every state for the same number of pairs in one pass over a tenth of them: the cost
    # per step is what differs, so the ratio of per-step times compares the two side by side.
    sampled_step = cpu / steps
    tenth = PreferenceSplit(split.train.subset(np.arange(len(split.train) // 10)), split.validation, split.held_out)
    one_pass = replace(config, passes=1, min_steps=0)
    _, exact_cpu, _ = timed_training(observations, tenth, replace(one_pass, states_per_segment=0))
    exact_step = exact_cpu / -(-len(tenth.train) // config.batch_size)
    print(f"exact means over all 300 states: {exact_step * 1e3:.0f} ms CPU per step vs {sampled_step * 1e3:.0f} ms "
          f"sampled ({exact_step / sampled_step:.1f}x); the same {steps} steps would take about "
          f"{exact_step * steps:.0f} s")

    # Phi per env step.
    torch.manual_seed(0)
    lengths = np.full(segments, 300, dtype=np.int64)
    trained = train_bradley_terry(observations.reshape(-1, 128), np.arange(segments, dtype=np.int64) * 300, lengths,
                                  tenth, one_pass)
    model = RewardModelFile.from_net(trained.net, trained.normalization, run_id="bench", epoch=0)
    blob = model.to_bytes()
    load_us = per_call_us(lambda: Potential.from_bytes(blob), 200)
    potential = Potential.from_bytes(blob)
    net = model.build_net()
    mean, std = torch.tensor(model.normalization.input_mean), torch.tensor(model.normalization.input_std)
    clip = model.normalization.input_clip
    obs = observations[0, 0].astype(np.float64)  # what an env hands over

    def torch_phi() -> float:
        with torch.no_grad():
            x = torch.as_tensor(obs, dtype=torch.float32)
            return float(net(((x - mean) / std).clamp(-clip, clip)))

    calls = 20_000 if args.quick else 100_000
    numpy_us = per_call_us(lambda: potential.phi(obs), calls)
    torch_us = per_call_us(torch_phi, calls // 4)
    batch = observations[1, :64]
    batch_us = per_call_us(lambda: potential.phi_batch(batch), calls // 20) / 64
    assert abs(torch_phi() - potential.phi(obs)) < 1e-4
    flat = observations.reshape(-1, 128)
    optimistic = Potential(model.with_unseen_places(UnseenPlaces.fit(flat, potential.phi_batch(flat), 0.99)))
    optimistic_us = per_call_us(lambda: optimistic.phi(obs), calls)
    print(f"\nPhi of one observation: numpy Potential.phi {numpy_us:.1f} us, torch no_grad {torch_us:.1f} us "
          f"({torch_us / numpy_us:.1f}x slower); in a batch of 64: {batch_us:.2f} us per observation; with "
          f"optimism for unseen places {optimistic_us:.1f} us ({optimistic_us / numpy_us:.2f}x)")
    print(f"loading rm.pt ({len(blob) / 1024:.0f} KiB) into a Potential: {load_us / 1e3:.2f} ms")


if __name__ == "__main__":
    main()
