"""``ZeldaEnvRunner``: RLlib's single-agent env runner with a lean sampling loop for our one kind of policy.

RLlib's ``SingleAgentEnvRunner._sample`` is generic: every vector step runs the env-to-module connector
pipeline (episodes -> batch -> tensors), the RLModule, the module-to-env pipeline (distribution object, sample,
tensors -> numpy, un-batching, action clipping, listing) and several timers. For a 2 x 256 MLP over a 128-D
observation and 8 discrete actions that machinery costs about 280 µs per env step with 4 emulators per runner
(measured: ``docs/performance.md``), three times the emulator's own ~94 µs; it was the trainer's bottleneck.

This runner keeps everything RLlib relies on (``SingleAgentEpisode`` chunks with the same columns, the
episode callbacks, the cut-and-continue of ongoing episodes, the sampled-steps metrics, weight sync, state,
checkpoints) and replaces only the per-step work for the case the trainer uses: sampling a number of timesteps
with exploration. That loop runs the module's trunk and policy head on the batch of observations and draws
the actions in NumPy (Gumbel-max: the same distribution as RLlib's ``TorchCategorical``). Anything else
(``num_episodes``, greedy evaluation, random actions, another RLModule) goes to RLlib's own loop, after a
fresh reset so the two loops never share half-built episodes. The lean loop assumes RLlib's default connector
pipelines (no observation filters or action transforms), which is how ``algorithm.py`` configures PPO.

Every runner also keeps the driver's ``EnvSync`` (epoch and reward model) and hands it to its envs, to envs it
rebuilds, and, through ``resync_restored_runners``, to runners that Ray restarted: those are rebuilt from the
algorithm's config, which knows only the epoch the run started in, no reward model and the initial weights.
RLlib restores a runner (weights, then that callback) only when a call to it failed; a runner process that died
while idle is restarted by Ray behind RLlib's back, so a restarted runner refuses to sample (``RunnerNotRestored``)
until it has both weights and sync: that failure sends it through RLlib's restore before the next iteration.
"""

from __future__ import annotations

import warnings
from typing import Any, cast

import numpy as np
import ray
from ray.rllib.core import COMPONENT_RL_MODULE
from ray.rllib.core.columns import Columns
from ray.rllib.env.env_runner import ENV_STEP_FAILURE
from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner
from ray.rllib.env.single_agent_episode import SingleAgentEpisode
from ray.rllib.utils.metrics import WEIGHTS_SEQ_NO

from zelda_rlaif.errors import ZeldaRlaifError
from zelda_trainer.env_config import EnvSync
from zelda_trainer.rl_module import ZeldaMLPModule


class RunnerNotRestored(ZeldaRlaifError):
    """A runner that Ray restarted was asked to sample before RLlib restored it."""


class ZeldaEnvRunner(SingleAgentEnvRunner):
    # The driver's epoch and reward model, set by apply_env_sync (a class default: make_env runs inside __init__).
    env_sync: EnvSync | None = None

    def __init__(self, *, config: Any, **kwargs: Any) -> None:
        super().__init__(config=config, **kwargs)
        # Action sampling draws from this generator: seeded per runner like RLlib seeds its own (config seed plus
        # worker index), unseeded when the run has no seed.
        seed = getattr(config, "seed", None)
        self._action_rng = np.random.default_rng(None if seed is None else [int(seed), int(self.worker_index or 0)])
        self._lean_observations: np.ndarray | None = None  # the last observations, while the lean loop owns them
        self._restarted = _restarted_by_ray()
        self._weights_set = False  # by RLlib (a restore, or the sync after each update) since this process began

    def apply_env_sync(self, sync: EnvSync) -> None:
        """Called by the driver on every runner, its own local one included (which keeps it for the runners Ray
        restarts), between iterations."""
        self.env_sync = sync
        for env in self._training_envs():
            env.apply_sync(sync)

    def make_env(self) -> None:
        super().make_env()
        if self.env_sync is not None:  # envs rebuilt after a failed step carry on in the driver's epoch
            for env in self._training_envs():
                env.apply_sync(self.env_sync)

    def set_state(self, state: dict[str, Any]) -> None:
        super().set_state(state)
        if COMPONENT_RL_MODULE in state:
            self._weights_set = True

    def _training_envs(self) -> list[Any]:
        vector_env = getattr(self, "env", None)
        return [] if vector_env is None else list(vector_env.unwrapped.envs)

    def _sample(self, *, num_timesteps: int | None = None, num_episodes: int | None = None, explore: bool,
                random_actions: bool = False, force_reset: bool = False) -> list[SingleAgentEpisode]:
        if self._restarted and (self.env_sync is None or not self._weights_set):
            raise RunnerNotRestored(
                f"env runner {self.worker_index} was restarted by Ray and has not been restored yet (weights: "
                f"{self._weights_set}, epoch and reward model: {self.env_sync is not None}); RLlib restores it "
                "before the next iteration, nothing to do")
        if num_timesteps is None or not explore or random_actions or not isinstance(self.module, ZeldaMLPModule):
            # RLlib's loop keeps its own cache of the last observations: start it from a fresh reset.
            lean_was_running = self._lean_observations is not None
            self._lean_observations = None
            return super()._sample(num_timesteps=num_timesteps, num_episodes=num_episodes, explore=explore,
                                   random_actions=random_actions, force_reset=force_reset or lean_was_running)
        return self._sample_timesteps(num_timesteps, force_reset)

    @property
    def _episodes(self) -> list[SingleAgentEpisode]:
        # RLlib types the slots as optional; after a reset every slot holds an episode, always replaced, never None.
        return cast(list[SingleAgentEpisode], self._ongoing_episodes)

    def _sample_timesteps(self, num_timesteps: int, force_reset: bool) -> list[SingleAgentEpisode]:
        module = self.module
        assert isinstance(module, ZeldaMLPModule)
        if force_reset or self._needs_initial_reset or self._lean_observations is None:
            self._lean_observations = self._reset_all()
        observations = self._lean_observations
        episodes = self._episodes
        done_episodes: list[SingleAgentEpisode] = []
        steps = 0
        while steps < num_timesteps:
            logits = module.action_logits(observations)
            actions, logp = sample_categorical(logits, self._action_rng)
            try:
                results = self._try_env_step(actions)
            except Exception:
                # The sample fails and RLlib takes this runner out of service until it restores it, in this same
                # process: its next sample starts from a fresh reset, not from envs left half-stepped.
                self._lean_observations = None
                raise
            if results == ENV_STEP_FAILURE:
                # RLlib's rule (it rebuilt the failed env): reset every env, drop the half-built episodes, keep the
                # finished ones and count this sample's steps again from zero.
                observations, episodes, steps = self._reset_all(), self._episodes, 0
                continue
            observations, rewards, terminateds, truncateds, infos = results
            for index, episode in enumerate(episodes):
                if not episode.is_reset:  # NEXT_STEP autoreset: this step only reset the env
                    episode.add_env_reset(observation=observations[index], infos=infos[index])
                    self._make_on_episode_callback("on_episode_start", index, episodes)
                    continue
                steps += 1
                episode.add_env_step(
                    observation=observations[index], action=actions[index], reward=rewards[index],
                    infos=infos[index], terminated=terminateds[index], truncated=truncateds[index],
                    extra_model_outputs={Columns.ACTION_DIST_INPUTS: logits[index], Columns.ACTION_LOGP: logp[index],
                                         WEIGHTS_SEQ_NO: self._weights_seq_no})
                self._make_on_episode_callback("on_episode_step", index, episodes)
                if episode.is_done:
                    self._make_on_episode_callback("on_episode_end", index, episodes)
                    done_episodes.append(episode.to_numpy() if self.episodes_to_numpy else episode)
                    self._new_episode(index, episodes)
        self._lean_observations = observations
        return self._finish_sample(steps, done_episodes)

    def _reset_all(self) -> np.ndarray:
        """RLlib's reset (new episodes, their callbacks, seeding on the first one); returns the observations."""
        self._reset_envs_and_episodes(explore=True)
        return np.stack([episode.get_observations(-1) for episode in self._episodes])

    def _finish_sample(self, steps: int, done_episodes: list[SingleAgentEpisode]) -> list[SingleAgentEpisode]:
        """What RLlib does at the end of a timestep sample: cut the ongoing episodes (the continuations go on
        collecting), keep chunks for the episode metrics, count the steps."""
        self._done_episodes_for_metrics.extend(done_episodes)
        ongoing: list[SingleAgentEpisode] = []
        continuations = [episode.cut(len_lookback_buffer=self.config.episode_lookback_horizon)
                         for episode in self._episodes]
        for episode in self._episodes:
            if episode.t == 0:  # just reset: no data yet
                continue
            episode.validate()
            self._ongoing_episodes_for_metrics[episode.id_].append(episode)
            ongoing.append(episode.to_numpy() if self.episodes_to_numpy else episode)
        self._ongoing_episodes = cast(list[SingleAgentEpisode | None], continuations)
        self._log_env_steps(metric=self._metrics_num_env_steps_sampled, num_steps=steps)
        self._increase_sampled_metrics(steps, len(done_episodes))
        return done_episodes + ongoing


def _restarted_by_ray() -> bool:
    """Whether this process is a restarted incarnation of its Ray actor (never for a runner in the driver)."""
    if not ray.is_initialized():
        return False
    context = ray.get_runtime_context()
    if context.get_actor_id() is None:
        return False
    with warnings.catch_warnings():  # the property reads Ray's own deprecated actor_id: not ours to fix
        warnings.simplefilter("ignore", DeprecationWarning)
        return bool(context.was_current_actor_reconstructed)


def resync_restored_runners(*, env_runner_group: Any, env_runner_indices: list[int], **kwargs: Any) -> None:
    """RLlib's ``on_env_runners_recreated`` callback, run in the driver right after RLlib brought failed runners
    back and synced their weights, before they sample: hands them the current ``EnvSync``, which the driver's
    local runner holds. Without it a runner that Ray restarted would export into the run's first epoch with no
    reward model until the next epoch or model."""
    local = env_runner_group.local_env_runner
    sync = getattr(local, "env_sync", None)
    if sync is None:  # nothing synced yet (or an evaluation group): the config's epoch is the current one
        return
    env_runner_group.foreach_env_runner(lambda runner: runner.apply_env_sync(sync),
                                        remote_worker_ids=env_runner_indices, local_env_runner=False)


def sample_categorical(logits: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """One action per row from ``softmax(logits)`` and its log-probability. Gumbel-max: the argmax of the logits
    plus Gumbel noise is distributed as the softmax, with no cumulative sums or per-row loops."""
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_normalizer = np.log(np.exp(shifted).sum(axis=1))
    # float64 uniforms never reach 1; the tiny offset keeps a drawn 0 from logging a divide-by-zero warning.
    gumbel = -np.log(-np.log(rng.random(shifted.shape) + np.finfo(np.float64).tiny))
    actions = np.argmax(shifted + gumbel, axis=1)
    logp = shifted[np.arange(len(actions)), actions] - log_normalizer
    return actions, logp.astype(logits.dtype, copy=False)
