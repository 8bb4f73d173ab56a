"""The RLlib behaviour ``ZeldaEnvRunner`` relies on, pinned: an RLlib upgrade that changes it fails here, not in a
long run.

The runner owns its rollout through RLlib's public interface only (``env_runner.py``); what it must match is what
RLlib's own loop hands the learner and the metrics, so these tests run both loops on the same runner and compare.
``OverlappingPPO`` (``overlap.py``) likewise builds its training step from public calls only,
``SharedBudgetPPO`` (``sample_budget.py``) extends PPO through ``setup``, ``training_step`` and ``cleanup``, the
learners (``ppo_learner.py``, ``self_imitation/learner.py``) override only the ``Learner``'s public methods, and the
learner connector (``ppo_batch.py``) is a ``ConnectorV2`` of RLlib's public API.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from ray.rllib.algorithms import algorithm as rllib_algorithm
from ray.rllib.algorithms.ppo import PPO
from ray.rllib.algorithms.ppo import ppo as rllib_ppo
from ray.rllib.algorithms.ppo.torch import ppo_torch_learner as rllib_ppo_torch_learner
from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner
from ray.rllib.connectors import connector_v2 as rllib_connector_v2
from ray.rllib.connectors.connector_v2 import ConnectorV2
from ray.rllib.core.columns import Columns
from ray.rllib.core.learner import learner as rllib_learner
from ray.rllib.core.learner.torch import torch_learner as rllib_torch_learner
from ray.rllib.env import env_runner as rllib_env_runner
from ray.rllib.env import single_agent_env_runner as rllib_single_agent_env_runner
from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner
from ray.rllib.env.single_agent_episode import SingleAgentEpisode

from tests.trainer.local_runner import local_env_runner
from zelda_trainer import env_runner as our_env_runner
from zelda_trainer import overlap as our_overlap
from zelda_trainer import ppo_batch as our_ppo_batch
from zelda_trainer import ppo_learner as our_ppo_learner
from zelda_trainer import sample_budget as our_sample_budget
from zelda_trainer.env_runner import ZeldaEnvRunner
from zelda_trainer.self_imitation import learner as our_self_imitation_learner

ENVS = 2
EPISODE_STEPS = 30


@pytest.fixture(scope="module")
def runner() -> Iterator[ZeldaEnvRunner]:
    with local_env_runner("contract-test", ENVS, EPISODE_STEPS) as runner:
        yield runner


def _self_attributes(source_file: str) -> set[str]:
    """Every ``self._name`` read or written, and every ``_name`` method defined, in a module."""
    tree = ast.parse(Path(source_file).read_text())
    names = {node.attr for node in ast.walk(tree)
             if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"}
    names |= {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
    return {name for name in names if name.startswith("_") and not name.startswith("__")}


@pytest.mark.parametrize(("ours", "rllib_modules", "rllib_class"), [
    (our_env_runner, (rllib_env_runner, rllib_single_agent_env_runner), SingleAgentEnvRunner),
    (our_overlap, (rllib_algorithm, rllib_ppo), PPO),
    (our_sample_budget, (rllib_algorithm, rllib_ppo), PPO),
    (our_ppo_learner, (rllib_learner, rllib_torch_learner, rllib_ppo_torch_learner), PPOTorchLearner),
    (our_self_imitation_learner, (rllib_learner, rllib_torch_learner, rllib_ppo_torch_learner), PPOTorchLearner),
    (our_ppo_batch, (rllib_connector_v2,), ConnectorV2),
], ids=["env_runner", "overlap", "sample_budget", "ppo_learner", "self_imitation_learner", "ppo_batch"])
def test_our_subclasses_touch_no_private_member_of_rllib(ours: ModuleType, rllib_modules: tuple[ModuleType, ...],
                                                        rllib_class: type) -> None:
    rllib_private = set()
    for module in rllib_modules:
        assert module.__file__ is not None
        rllib_private |= _self_attributes(module.__file__)
    for cls in rllib_class.__mro__:
        rllib_private |= {name for name in vars(cls) if name.startswith("_") and not name.startswith("__")}
    assert ours.__file__ is not None
    shared = _self_attributes(ours.__file__) & rllib_private
    assert not shared, f"{Path(ours.__file__).name} uses RLlib's private members {sorted(shared)}: use a public API"


def test_sample_keeps_the_signature_the_algorithms_call() -> None:
    rllib = inspect.signature(SingleAgentEnvRunner.sample).parameters
    ours = inspect.signature(ZeldaEnvRunner.sample).parameters
    # (Ray adds a tracing parameter to actor methods once an actor class was made in the process: not compared.)
    for name in ("num_timesteps", "num_episodes", "explore", "random_actions", "force_reset"):
        assert rllib[name].kind is ours[name].kind is inspect.Parameter.KEYWORD_ONLY, name
        assert rllib[name].default == ours[name].default, name


def test_a_cut_episode_continues_under_the_same_id_from_its_last_observation() -> None:
    import gymnasium as gym
    import numpy as np

    episode = SingleAgentEpisode(observation_space=gym.spaces.Box(-1, 1, (2,)), action_space=gym.spaces.Discrete(3))
    episode.add_env_reset(observation=np.zeros(2, np.float32), infos={})
    for step in range(3):
        episode.add_env_step(observation=np.full(2, step / 10, np.float32), action=1, reward=1.0, infos={},
                             extra_model_outputs={"action_logp": np.float32(-1.0)})
    continuation = episode.cut(len_lookback_buffer=1)
    assert continuation.id_ == episode.id_ and continuation.t_started == episode.t == 3
    np.testing.assert_array_equal(continuation.get_observations(-1), episode.get_observations(-1))
    assert len(episode.to_numpy()) == 3 and episode.get_return() == 3.0


def test_a_chunks_custom_data_travels_with_it_to_the_learner() -> None:
    """The env runners leave each chunk's bootstrap value in its ``custom_data`` (ppo_batch.py): it must survive
    ``to_numpy`` and the pickling that ships episodes from a runner to the learner."""
    import pickle

    import numpy as np

    episode = SingleAgentEpisode(observations=[np.zeros(2, np.float32)] * 3, actions=[0, 1], rewards=[0.0, 1.0],
                                 len_lookback_buffer=0)
    episode.custom_data["bootstrap"] = 0.5
    shipped = pickle.loads(pickle.dumps(episode.to_numpy()))
    assert shipped.custom_data == {"bootstrap": 0.5} and len(shipped) == 2


def test_the_lean_loop_hands_the_learner_and_metrics_what_rllibs_loop_does(runner: ZeldaEnvRunner) -> None:
    steps = ENVS * (EPISODE_STEPS * 2 + 10)  # every env finishes two episodes and starts a third
    runner.get_metrics()  # start both measurements from empty metrics
    lean = runner.sample(num_timesteps=steps, explore=True, force_reset=True)
    lean_metrics = runner.get_metrics()
    # RLlib's own loop on the same runner: the base class's sample, bypassing the lean one.
    rllib = SingleAgentEnvRunner.sample(runner, num_timesteps=steps, explore=True, force_reset=True)
    rllib_metrics = runner.get_metrics()

    def columns(episodes: list[SingleAgentEpisode]) -> set[str]:
        return {key for episode in episodes for key in episode.extra_model_outputs}

    # The lean loop also keeps the values it computed with the logits, for the trainer's learner connector.
    assert columns(lean) == columns(rllib) | {Columns.VF_PREDS}
    assert {type(episode) for episode in lean} == {type(episode) for episode in rllib}
    for episodes in (lean, rllib):
        assert any(episode.is_done for episode in episodes) and any(not episode.is_done for episode in episodes)
        assert sum(len(episode) for episode in episodes) >= steps
    # The timers of the connector pipelines and of RLlib's forward pass measure machinery the lean loop does not run.
    pipeline_timers = {"env_to_module_connector", "env_to_module_sum_episodes_length_in",
                       "env_to_module_sum_episodes_length_out", "module_to_env_connector", "rlmodule_inference_timer"}
    missing = set(rllib_metrics) - set(lean_metrics) - pipeline_timers
    assert not missing, f"RLlib's loop reports {sorted(missing)}, the lean loop does not"
    def value(metric: Any) -> float:  # a runner's metrics are RLlib Stats, merged later by the driver
        return float(metric.peek() if hasattr(metric, "peek") else metric)

    for key in ("num_env_steps_sampled", "num_episodes"):
        assert value(lean_metrics[key]) > 0 and value(rllib_metrics[key]) > 0, key
    assert value(lean_metrics["episode_len_mean"]) == value(rllib_metrics["episode_len_mean"]) == EPISODE_STEPS
