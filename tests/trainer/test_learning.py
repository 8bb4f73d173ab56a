"""Learning is real: after a CI-sized PPO budget the policy explores more rooms than a uniformly random one."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from ray.rllib.core.columns import Columns

from zelda_rlaif.game.config import EnvConfig
from zelda_rlaif.game.env import ZeldaEnv
from zelda_trainer import metrics
from zelda_trainer.algorithm import build_config
from zelda_trainer.settings import TrainerSettings

pytestmark = pytest.mark.slow

TRAIN_STEPS = 16_000
EPISODE_STEPS = 300
EVAL_SEEDS = (0, 1, 2, 3)


def rooms_visited(choose_action, seed: int) -> int:  # type: ignore[no-untyped-def]
    env = ZeldaEnv(EnvConfig(max_steps=EPISODE_STEPS))
    obs, _ = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    rooms = set()
    for _ in range(EPISODE_STEPS):
        obs, _, _, _, info = env.step(choose_action(obs, rng))
        rooms.add((info["state"]["group"], info["state"]["room"]))
    env.close()
    return len(rooms)


def test_trained_policy_explores_more_rooms_than_random(ray_local: None) -> None:
    settings = TrainerSettings(run_id="learning", episode_steps=EPISODE_STEPS, export_fraction=0.0,
                               live_frames=False, num_env_runners=2, seed=0)
    algo = build_config(settings, "testworld", 0).build_algo()
    try:
        while metrics.lifetime_env_steps(algo.train()) < TRAIN_STEPS:
            pass
        module = algo.get_module()
        assert module is not None
    finally:
        algo.stop()

    def trained(obs: np.ndarray, rng: np.random.Generator) -> int:
        with torch.no_grad():
            logits = module.forward_inference({Columns.OBS: torch.from_numpy(obs[None])})[Columns.ACTION_DIST_INPUTS]
        probabilities = torch.softmax(logits[0], -1).double().numpy()
        return int(rng.choice(8, p=probabilities / probabilities.sum()))

    def uniform(obs: np.ndarray, rng: np.random.Generator) -> int:
        return int(rng.integers(0, 8))

    trained_rooms = sum(rooms_visited(trained, seed) for seed in EVAL_SEEDS)
    random_rooms = sum(rooms_visited(uniform, seed) for seed in EVAL_SEEDS)
    print(f"\nrooms visited in {len(EVAL_SEEDS)} x {EPISODE_STEPS} steps after {TRAIN_STEPS} training steps: "
          f"trained policy {trained_rooms}, uniformly random policy {random_rooms}")
    assert trained_rooms > random_rooms
