"""``TrainingVectorEnv``: the emulators of one env runner, stepped in one call.

RLlib builds it through its ``VECTOR_ENTRY_POINT`` mode (see ``algorithm.py``). Gymnasium's ``SyncVectorEnv``
would do the same job, but through ``gym.make`` wrappers on every sub-env (order enforcing, the passive env
checker), a deep copy of the observations and a merge of every sub-env's info dict on every step: at the
step rates of this project those cost about as much as our whole env step. This class does only what RLlib's
env runner needs: batched observations, ``NEXT_STEP`` autoreset (the step after an episode ends resets that
env and returns its first observation, which RLlib records as the new episode's start), and sparse infos.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from zelda_trainer.env_config import TrainingEnvConfig
from zelda_trainer.training_env import TrainingEnv

ENV_NAME = "zelda-rlaif-training"


class TrainingVectorEnv(gym.vector.VectorEnv[Any, Any, Any]):
    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(self, config: TrainingEnvConfig, num_envs: int) -> None:
        self.num_envs = num_envs
        self.envs: list[TrainingEnv] = []  # filled one by one so that close() frees them if one fails to build
        for _ in range(self.num_envs):
            self.envs.append(TrainingEnv(config))
        single = self.envs[0].observation_space
        if not isinstance(single, spaces.Box):
            raise ValueError("training uses the 128-D vector observation: turn pixel_observation off")
        self.single_observation_space = single
        self.single_action_space = self.envs[0].action_space
        self.observation_space = batch_space(single, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._episode_over = np.zeros(self.num_envs, dtype=bool)

    def attach(self, worker_index: int) -> None:
        """Called by ``ZeldaCallbacks.on_environment_created``: in VECTOR_ENTRY_POINT mode RLlib hands the env
        creator a plain dict, not its ``EnvContext``, so the worker index (which names segments and picks the live
        env) comes here."""
        for vector_index, env in enumerate(self.envs):
            env.attach(worker_index, vector_index)

    def reset(self, *, seed: int | list[int | None] | None = None,
              options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        # The same per-env seeds as Gymnasium's vector envs: seed, seed + 1, ...
        seeds = [seed + i for i in range(self.num_envs)] if isinstance(seed, int) else seed or [None] * self.num_envs
        observations = self._new_observations()
        infos: dict[str, Any] = {}
        for index, (env, env_seed) in enumerate(zip(self.envs, seeds, strict=True)):
            observations[index], info = env.reset(seed=env_seed, options=options)
            self._note_info(infos, index, info)
        self._episode_over[:] = False
        return observations, infos

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        # Fresh arrays every step: RLlib keeps views of these rows in its episodes.
        observations = self._new_observations()
        rewards = np.zeros(self.num_envs, dtype=np.float64)
        terminated = np.zeros(self.num_envs, dtype=bool)
        truncated = np.zeros(self.num_envs, dtype=bool)
        infos: dict[str, Any] = {}
        for index, env in enumerate(self.envs):
            if self._episode_over[index]:
                observations[index], info = env.reset()  # NEXT_STEP autoreset: this step's action is not used
            else:
                observations[index], rewards[index], terminated[index], truncated[index], info = env.step(
                    int(actions[index]))
            if info:
                self._note_info(infos, index, info)
        np.logical_or(terminated, truncated, out=self._episode_over)
        return observations, rewards, terminated, truncated, infos

    def close_extras(self, **kwargs: Any) -> None:
        for env in self.envs:
            env.close()

    def _new_observations(self) -> np.ndarray:
        shape = self.single_observation_space.shape
        assert shape is not None
        return np.empty((self.num_envs, *shape), dtype=self.single_observation_space.dtype)

    def _note_info(self, infos: dict[str, Any], index: int, info: dict[str, Any]) -> None:
        """Gymnasium's vector info layout: ``infos[key][i]`` is env i's value where ``infos["_" + key][i]``."""
        for key, value in info.items():
            if key not in infos:
                infos[key] = np.full(self.num_envs, None, dtype=object)
                infos["_" + key] = np.zeros(self.num_envs, dtype=bool)
            infos[key][index] = value
            infos["_" + key][index] = True


def make_training_vector_env(env_context: dict[str, Any]) -> TrainingVectorEnv:
    """The env creator registered with Ray: in VECTOR_ENTRY_POINT mode RLlib calls it with the env config dict
    plus its own ``num_envs`` (how many envs the runner wants)."""
    return TrainingVectorEnv(TrainingEnvConfig.from_env_context(env_context), num_envs=int(env_context["num_envs"]))
