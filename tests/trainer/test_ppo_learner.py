"""The trainer's cheaper learner and sampling forward pass compute what RLlib's would."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from ray.rllib.core import ALL_MODULES, DEFAULT_MODULE_ID
from ray.rllib.core.columns import Columns

from zelda_rlaif.segments import OBSERVATION_SIZE
from zelda_trainer.algorithm import build_config
from zelda_trainer.ppo_learner import SKIPPED_METRIC
from zelda_trainer.rl_module import ZeldaMLPModule
from zelda_trainer.settings import PPOSettings, TrainerSettings


@pytest.fixture(scope="module")
def algorithm(ray_local: None) -> Iterator[Any]:
    settings = TrainerSettings(run_id="lean-learner-test", num_env_runners=0, envs_per_runner=2, export_fraction=0.0,
                               live_frames=False, episode_steps=50,
                               ppo=PPOSettings(train_batch_size=128, minibatch_size=64, num_epochs=1))
    algo = build_config(settings, "testworld", 0).build_algo()
    yield algo
    algo.stop()


def _step_with(learner: Any, fill: float) -> tuple[bool, float]:
    """Applies gradients that are all ``fill``; whether the weights moved, and the skipped-update count."""
    params = learner.get_parameters(learner.module[DEFAULT_MODULE_ID])
    before = [param.detach().clone() for param in params]
    learner.apply_gradients({learner.get_param_ref(param): torch.full_like(param, fill) for param in params})
    moved = any(not torch.equal(old, param.detach()) for old, param in zip(before, params, strict=True))
    skipped = learner.metrics.peek((ALL_MODULES, SKIPPED_METRIC), default=0)
    return moved, float(skipped)


def test_an_update_with_non_finite_gradients_is_skipped_and_counted(algorithm: Any) -> None:
    def check(learner: Any) -> tuple[tuple[bool, float], ...]:
        return _step_with(learner, float("nan")), _step_with(learner, float("inf")), _step_with(learner, 0.5)

    [result] = algorithm.learner_group.foreach_learner(check)
    nan, inf, finite = result.get()
    assert nan == (False, 1.0) and inf == (False, 2.0)  # the weights (and Adam's moments) are left as they were
    assert finite == (True, 2.0)


def test_the_optimizer_is_torchs_fused_adam(algorithm: Any) -> None:
    [result] = algorithm.learner_group.foreach_learner(
        lambda learner: learner.get_optimizer(DEFAULT_MODULE_ID).defaults)
    assert result.get()["fused"] is True


def test_the_sampling_logits_are_the_modules_and_follow_new_weights() -> None:
    """The env runners' NumPy forward pass against the module's own torch one, before and after new weights."""
    module = ZeldaMLPModule(observation_space=gym.spaces.Box(0.0, 1.0, (OBSERVATION_SIZE,), np.float32),
                            action_space=gym.spaces.Discrete(8), inference_only=True, model_config={"hidden": 64})
    observations = np.random.default_rng(0).random((8, OBSERVATION_SIZE), dtype=np.float32)

    def torch_logits() -> np.ndarray:
        with torch.inference_mode():
            return module.forward_inference({Columns.OBS: torch.from_numpy(observations)})[
                Columns.ACTION_DIST_INPUTS].numpy()

    np.testing.assert_allclose(module.action_logits(observations), torch_logits(), rtol=1e-5, atol=1e-6)
    module.set_state({name: value + 0.1 for name, value in module.get_state().items()})  # as a weight sync does
    np.testing.assert_allclose(module.action_logits(observations), torch_logits(), rtol=1e-5, atol=1e-6)
