"""``PPOTrainBatch``: the train batch RLlib's PPO pipeline builds, from the env runners' values and without the
bootstrap rows."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import torch
from ray.rllib.connectors.learner import AddOneTsToEpisodesAndTruncate, GeneralAdvantageEstimation
from ray.rllib.core import DEFAULT_MODULE_ID
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
from ray.rllib.core.rl_module.rl_module import RLModuleSpec
from ray.rllib.env.single_agent_episode import SingleAgentEpisode
from ray.rllib.evaluation.postprocessing import Postprocessing
from ray.rllib.utils.metrics.metrics_logger import MetricsLogger

from tests.trainer.local_runner import local_env_runner
from zelda_trainer.env_runner import ZeldaEnvRunner
from zelda_trainer.ppo_batch import BOOTSTRAP_VALUE, PPOTrainBatch, gae_advantages
from zelda_trainer.rl_module import ZeldaMLPModule

ENVS = 2
EPISODE_STEPS = 30
GAMMA, LAMBDA = 0.99, 0.95


@pytest.fixture(scope="module")
def runner() -> Iterator[ZeldaEnvRunner]:
    with local_env_runner("ppo-batch-test", ENVS, EPISODE_STEPS) as runner:
        yield runner


@pytest.fixture(scope="module")
def episodes(runner: ZeldaEnvRunner) -> list[SingleAgentEpisode]:
    """Finished chunks (time limits) and ongoing ones, with the lean loop's values and bootstrap values."""
    sampled = runner.sample(num_timesteps=ENVS * (EPISODE_STEPS * 2 + 10), explore=True, force_reset=True)
    assert any(chunk.is_truncated for chunk in sampled) and any(not chunk.is_done for chunk in sampled)
    return sampled


@pytest.fixture(scope="module")
def learner_module(runner: ZeldaEnvRunner) -> Any:
    """A learner's module (multi-module, as connectors get it) holding the runner's weights."""
    env = runner.env
    assert env is not None
    spec = MultiRLModuleSpec(rl_module_specs={DEFAULT_MODULE_ID: RLModuleSpec(
        module_class=ZeldaMLPModule, observation_space=env.single_observation_space,
        action_space=env.single_action_space, model_config={"hidden": 256})})
    module: Any = spec.build()
    module[DEFAULT_MODULE_ID].set_state(runner.module.get_state())  # type: ignore[union-attr]
    return module


def _ours(module: Any, episodes: list[SingleAgentEpisode]) -> dict[str, np.ndarray]:
    batch = PPOTrainBatch(gamma=GAMMA, lambda_=LAMBDA)(rl_module=module, batch={}, episodes=episodes)
    return {name: column.numpy() for name, column in batch[DEFAULT_MODULE_ID].items()}


def _rllibs(runner: ZeldaEnvRunner, module: Any, episodes: list[Any]) -> dict[str, np.ndarray]:
    """RLlib's default PPO learner pipeline, as ``PPOLearner.build`` assembles it."""
    env = runner.env
    assert env is not None
    config = runner.config.copy(copy_frozen=False).learners(learner_connector=None,
                                                           add_default_connectors_to_learner_pipeline=True)
    pipeline: Any = config.build_learner_connector(env.single_observation_space, env.single_action_space)
    pipeline.prepend(AddOneTsToEpisodesAndTruncate())
    pipeline.append(GeneralAdvantageEstimation(gamma=GAMMA, lambda_=LAMBDA))
    batch = pipeline(rl_module=module, batch={}, episodes=copy.deepcopy(episodes), shared_data={},
                     metrics=MetricsLogger())
    return {name: column.detach().numpy() if isinstance(column, torch.Tensor) else np.asarray(column)
            for name, column in batch[DEFAULT_MODULE_ID].items()}


def test_the_batch_is_rllibs_ppo_batch_without_its_bootstrap_rows(runner: ZeldaEnvRunner, learner_module: Any,
                                                                    episodes: list[SingleAgentEpisode]) -> None:
    lengths = [len(chunk) for chunk in episodes]
    ours = _ours(learner_module, episodes)
    assert [len(chunk) for chunk in episodes] == lengths  # the episodes are left as they came
    rllib = _rllibs(runner, learner_module, episodes)
    kept = rllib[Columns.LOSS_MASK].astype(bool)
    assert set(ours) == {Columns.OBS, Columns.ACTIONS, Columns.ACTION_LOGP, Columns.ACTION_DIST_INPUTS,
                         Postprocessing.ADVANTAGES, Postprocessing.VALUE_TARGETS}
    assert len(ours[Columns.OBS]) == sum(lengths) == kept.sum() < len(kept)
    for column in (Columns.OBS, Columns.ACTIONS, Columns.ACTION_LOGP, Columns.ACTION_DIST_INPUTS):
        np.testing.assert_array_equal(ours[column], rllib[column][kept])
    # The env runners' values (NumPy, sampling weights) are the learner's (torch, the same weights).
    np.testing.assert_allclose(ours[Postprocessing.VALUE_TARGETS], rllib[Postprocessing.VALUE_TARGETS][kept],
                               rtol=1e-4, atol=1e-5)
    # The same advantages, standardised over the steps PPO learns on; RLlib's statistics also count its bootstrap
    # rows, so its advantages are these up to a scale and a shift.
    advantages = ours[Postprocessing.ADVANTAGES]
    assert advantages.mean() == pytest.approx(0.0, abs=1e-5) and advantages.std() == pytest.approx(1.0, rel=1e-4)
    assert np.corrcoef(advantages, rllib[Postprocessing.ADVANTAGES][kept])[0, 1] > 1 - 1e-6


def test_without_the_runners_values_the_learners_module_computes_them(learner_module: Any,
                                                                       episodes: list[SingleAgentEpisode]) -> None:
    """Episodes from RLlib's own sampling loop carry no values: the batch comes out the same."""
    bare = copy.deepcopy(episodes)
    for chunk in bare:
        del chunk.extra_model_outputs[Columns.VF_PREDS]
        del chunk.custom_data[BOOTSTRAP_VALUE]
    with_values, without = _ours(learner_module, episodes), _ours(learner_module, bare)
    for column in (Postprocessing.ADVANTAGES, Postprocessing.VALUE_TARGETS):
        np.testing.assert_allclose(with_values[column], without[column], rtol=1e-4, atol=1e-4)


def test_a_terminated_episode_is_not_bootstrapped(learner_module: Any) -> None:
    observations = np.random.default_rng(0).random((4, 128), dtype=np.float32)
    chunk = SingleAgentEpisode(
        observations=list(observations), actions=[0, 1, 2], rewards=[0.0, 0.0, 1.0], terminated=True,
        extra_model_outputs={Columns.ACTION_LOGP: [-2.0] * 3, Columns.ACTION_DIST_INPUTS: [np.zeros(8)] * 3},
        len_lookback_buffer=0).to_numpy()
    batch = _ours(learner_module, [chunk])
    assert batch[Postprocessing.VALUE_TARGETS][-1] == pytest.approx(1.0)  # the last reward, nothing after it


def test_gae_is_its_definition() -> None:
    rng = np.random.default_rng(1)
    rewards, values, bootstrap = rng.normal(size=50), rng.normal(size=50), 0.7
    expected, running = np.zeros(50), 0.0
    for t in reversed(range(50)):
        next_value = bootstrap if t == 49 else values[t + 1]
        running = rewards[t] + GAMMA * next_value - values[t] + GAMMA * LAMBDA * running
        expected[t] = running
    np.testing.assert_allclose(gae_advantages(rewards, values, bootstrap, GAMMA, LAMBDA), expected, rtol=1e-10)
