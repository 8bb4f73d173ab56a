"""``ZeldaEnvRunner``: RLlib's single-agent env runner with a lean sampling loop for our one kind of policy.

RLlib's ``SingleAgentEnvRunner`` samples generically: every vector step runs the env-to-module connector
pipeline (episodes -> batch -> tensors), the RLModule, the module-to-env pipeline (distribution object, sample,
tensors -> numpy, un-batching, action clipping, listing) and several timers. For a 2 x 256 MLP over a 128-D
observation and 8 discrete actions that machinery costs about 280 µs per env step with 4 emulators per runner
(measured: ``docs/performance.md``), three times the emulator's own ~94 µs; it was the trainer's bottleneck.

This runner overrides only RLlib's public ``EnvRunner`` interface (``sample``, ``set_state``, ``make_env``) and
owns its rollout, for the case the trainer uses: sampling a number of timesteps with exploration. That loop
computes the module's policy logits and state values for the batch of observations (``policy_and_values``, in
NumPy), draws the actions from the logits (Gumbel-max: the same distribution as RLlib's ``TorchCategorical``) and
builds public ``SingleAgentEpisode`` chunks with the columns PPO's learner reads (actions, their logits and
log-probabilities, the values, the weights' sequence number; each chunk's bootstrap value in its ``custom_data``,
see ``ppo_batch.py``), cut and continued across samples the way RLlib's own loop does; with the driver's sample
budget a runner plays as many of a batch's steps as it claims before the batch is full, the faster runner more
(``sample_budget.py``). It logs the sampled-steps and episode metrics under RLlib's public metric names and calls
the config's episode callbacks (``on_episode_step`` only where one is configured: a call per env step costs several
percent of the loop). No
private member of an RLlib class is read, written or overridden, so an RLlib upgrade cannot change this loop's
behaviour unseen; ``tests/trainer/test_rllib_contract.py`` pins the RLlib behaviour it relies on. Anything else
(``num_episodes``, greedy evaluation, random actions, another RLModule) goes to RLlib's own ``sample``, after a
fresh reset, so the two loops never share half-built episodes. The lean loop assumes RLlib's default connector
pipelines (no observation filters or action transforms), which is how ``algorithm.py`` configures PPO.

Every runner also keeps the driver's ``EnvSync`` (epoch and reward model) and hands it to its envs, to envs it
rebuilds, and, through ``resync_restored_runners``, to runners that Ray restarted: those are rebuilt from the
algorithm's config, which knows only the epoch the run started in, no reward model and the initial weights.
RLlib restores a runner (weights, then that callback) only when a call to it failed; a runner process that died
while idle is restarted by Ray behind RLlib's back, so a restarted runner refuses to sample (``RunnerNotRestored``)
until it has both weights and sync: that failure sends it through RLlib's restore before the next iteration.
"""

from __future__ import annotations

import logging
import math
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import ray
from ray.rllib.callbacks.callbacks import RLlibCallback
from ray.rllib.callbacks.utils import make_callback
from ray.rllib.core import COMPONENT_RL_MODULE, DEFAULT_AGENT_ID, DEFAULT_MODULE_ID
from ray.rllib.core.columns import Columns
from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner
from ray.rllib.env.single_agent_episode import SingleAgentEpisode
from ray.rllib.utils import force_list
from ray.rllib.utils.metrics import (
    ENV_RESET_TIMER,
    ENV_STEP_TIMER,
    EPISODE_DURATION_SEC_MEAN,
    EPISODE_LEN_MAX,
    EPISODE_LEN_MEAN,
    EPISODE_LEN_MIN,
    EPISODE_RETURN_MAX,
    EPISODE_RETURN_MEAN,
    EPISODE_RETURN_MIN,
    NUM_AGENT_STEPS_SAMPLED,
    NUM_AGENT_STEPS_SAMPLED_LIFETIME,
    NUM_ENV_STEPS_SAMPLED,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    NUM_EPISODES,
    NUM_EPISODES_LIFETIME,
    NUM_MODULE_STEPS_SAMPLED,
    NUM_MODULE_STEPS_SAMPLED_LIFETIME,
    SAMPLE_TIMER,
    WEIGHTS_SEQ_NO,
)

from zelda_rlaif.errors import ZeldaRlaifError
from zelda_trainer.env_config import EnvSync
from zelda_trainer.ppo_batch import set_bootstrap_value
from zelda_trainer.rl_module import ZeldaMLPModule
from zelda_trainer.sample_budget import SampleBudget, runner_budget

log = logging.getLogger(__name__)


class RunnerNotRestored(ZeldaRlaifError):
    """A runner that Ray restarted was asked to sample before RLlib restored it."""


@dataclass
class _EpisodeTally:
    """An episode's totals over the chunks already returned, for its metrics and ``on_episode_end``."""

    started: float = field(default_factory=time.perf_counter)
    length: int = 0
    total_return: float = 0.0
    chunks: list[SingleAgentEpisode] = field(default_factory=list)


@dataclass
class _Durations:
    total: float = 0.0
    count: int = 0

    def add(self, seconds: float) -> None:
        self.total += seconds
        self.count += 1

    def take_mean(self) -> float:
        mean, self.total, self.count = self.total / self.count, 0.0, 0
        return mean


@dataclass
class _Rollout:
    """The lean loop's state between samples: one episode per env and the observations to act on."""

    observations: np.ndarray
    episodes: list[SingleAgentEpisode]
    tallies: dict[str, _EpisodeTally] = field(default_factory=dict)  # by episode id, from its creation


class ZeldaEnvRunner(SingleAgentEnvRunner):
    # The driver's epoch and reward model, set by apply_env_sync (a class default: make_env runs inside __init__).
    env_sync: EnvSync | None = None
    _seed_next_reset = True  # like RLlib, the first reset after the envs were (re)built is seeded

    def __init__(self, *, config: Any, **kwargs: Any) -> None:
        super().__init__(config=config, **kwargs)
        # The batch's steps, shared with the other runners on this machine (sample_budget.py); the driver's own
        # runner never samples a batch while remote ones exist.
        self.sample_budget = runner_budget(self.config.env_config) if self.worker_index else None
        self.budget_round = 0  # the budget's last round this runner sampled in
        seed = getattr(config, "seed", None)
        # Envs are seeded on their first reset and actions drawn from this generator, both per runner like RLlib
        # seeds its own loop (config seed plus worker index); unseeded when the run has no seed.
        self._env_seed = None if seed is None else int(seed) + int(self.worker_index or 0)
        self._action_rng = np.random.default_rng(None if seed is None else [int(seed), int(self.worker_index or 0)])
        # The config's callbacks, our own instances (RLlib's loop keeps its own; ours only observe and log).
        self._episode_callbacks = [cls() for cls in force_list(self.config.callbacks_class)]
        # Whether any callback reads every env step: a call per step costs the loop several percent, so it is
        # made only when the config has such a callback (the trainer's own read their news per sample).
        self._per_step_callbacks = getattr(self.config, "callbacks_on_episode_step", None) is not None or any(
            type(callback).on_episode_step is not RLlibCallback.on_episode_step for callback in self._episode_callbacks)
        self._rollout: _Rollout | None = None  # while the lean loop owns the envs
        self._env_step_time = _Durations()  # the vector env's steps in the sample being played
        self._weights_seq_no_seen = 0  # the WEIGHTS_SEQ_NO of the weights the module holds
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
        self._rollout = None  # new envs start new episodes
        self._seed_next_reset = True
        if self.env_sync is not None:  # envs rebuilt after a failed step carry on in the driver's epoch
            for env in self._training_envs():
                env.apply_sync(self.env_sync)

    def set_state(self, state: dict[str, Any]) -> None:
        super().set_state(state)
        if COMPONENT_RL_MODULE in state:
            self._weights_set = True
            self._weights_seq_no_seen = max(self._weights_seq_no_seen, int(state.get(WEIGHTS_SEQ_NO, 0) or 0))

    def _training_envs(self) -> list[Any]:
        vector_env = getattr(self, "env", None)
        return [] if vector_env is None else list(vector_env.unwrapped.envs)

    def sample(self, *, num_timesteps: int | None = None,  # type: ignore[override]  # EnvRunner's is **kwargs
               num_episodes: int | None = None, explore: bool | None = None, random_actions: bool = False,
               force_reset: bool = False) -> list[SingleAgentEpisode]:
        if self._restarted and (self.env_sync is None or not self._weights_set):
            raise RunnerNotRestored(
                f"env runner {self.worker_index} was restarted by Ray and has not been restored yet (weights: "
                f"{self._weights_set}, epoch and reward model: {self.env_sync is not None}); RLlib restores it "
                "before the next iteration, nothing to do")
        explore = self.config.explore if explore is None else explore
        budget = None  # the runners' shared budget, for a runner's default sample: its share of a batch
        if num_timesteps is None and num_episodes is None and self.config.batch_mode == "truncate_episodes":
            num_timesteps = self.config.get_rollout_fragment_length(self.worker_index) * self.num_envs
            budget = self.sample_budget
        if num_timesteps is None or not explore or random_actions or not isinstance(self.module, ZeldaMLPModule):
            # RLlib's loop keeps its own episodes: start it from a fresh reset, and ours after it.
            lean_was_running, self._rollout = self._rollout is not None, None
            return super().sample(  # RLlib annotates its optional counts as plain ``int = None``
                num_timesteps=num_timesteps, num_episodes=num_episodes,  # type: ignore[arg-type]
                explore=explore, random_actions=random_actions, force_reset=force_reset or lean_was_running)
        self.metrics.log_value(WEIGHTS_SEQ_NO, self._weights_seq_no_seen, window=1)
        with self.metrics.log_time(SAMPLE_TIMER):
            try:
                samples = self._sample_timesteps(num_timesteps, force_reset, budget)
            except Exception:
                # The sample fails and RLlib takes this runner out of service until it restores it, in this same
                # process: its next sample starts from a fresh reset, not from envs left half-stepped.
                self._rollout = None
                raise
            self._callback("on_sample_end", env_runner=self, metrics_logger=self.metrics, samples=samples)
        return samples

    def _sample_timesteps(self, num_timesteps: int, force_reset: bool,
                          budget: SampleBudget | None = None) -> list[SingleAgentEpisode]:
        """``num_timesteps`` env steps, or with a ``budget`` as many as this runner claims of it; when its first claim
        finds the batch full, none if it is late to a new round, else its own ``num_timesteps``."""
        module = self.module
        assert isinstance(module, ZeldaMLPModule)
        if force_reset or self._rollout is None:
            self._rollout = self._reset_all()
        rollout = self._rollout
        done_episodes: list[SingleAgentEpisode] = []
        steps = 0
        claimed = False
        if budget is not None:
            round_number, claimed = budget.join(self.num_envs)
            if not claimed and round_number not in (0, self.budget_round):
                # Late to a round the other runners filled: nothing to play (see sample_budget.py).
                self.budget_round = round_number
                return []
            if not claimed:  # never armed, or asked again in the same round: this runner's own share
                budget = None
            self.budget_round = round_number
        while claimed if budget is not None else steps < num_timesteps:
            logits, values = module.policy_and_values(rollout.observations)
            actions, logp = sample_categorical(logits, self._action_rng)
            results = self._step_envs(actions)
            if results is None:
                # RLlib's rule (the failed env was rebuilt): reset every env, drop the half-built episodes, keep the
                # finished ones and count this sample's steps again from zero.
                if budget is not None:  # this vector step's claim and the dropped steps go back to the others
                    claimed = budget.claim(self.num_envs, unused=self.num_envs + steps)
                rollout, steps = self._reset_all(), 0
                self._rollout = rollout
                continue
            observations, rewards, terminateds, truncateds, infos = results
            steps_before = steps
            for index, episode in enumerate(rollout.episodes):
                if not episode.is_reset:  # NEXT_STEP autoreset: this step only reset the env
                    episode.add_env_reset(observation=observations[index], infos=infos[index])
                    self._episode_callback("on_episode_start", rollout, index)
                    continue
                steps += 1
                episode.add_env_step(
                    observation=observations[index], action=actions[index], reward=rewards[index],
                    infos=infos[index], terminated=terminateds[index], truncated=truncateds[index],
                    extra_model_outputs={Columns.ACTION_DIST_INPUTS: logits[index], Columns.ACTION_LOGP: logp[index],
                                         Columns.VF_PREDS: values[index], WEIGHTS_SEQ_NO: self._weights_seq_no_seen})
                if self._per_step_callbacks:
                    self._episode_callback("on_episode_step", rollout, index)
                if episode.is_done:
                    # A time limit's last observation has a value to bootstrap from; a terminal one has none.
                    set_bootstrap_value(episode, 0.0 if terminateds[index] else
                                        module.policy_and_values(observations[index:index + 1])[1][0])
                    self._episode_callback("on_episode_end", rollout, index)
                    self._log_episode(rollout.tallies.pop(episode.id_), episode)
                    done_episodes.append(episode.to_numpy() if self.episodes_to_numpy else episode)
                    rollout.episodes[index] = self._new_episode_for(rollout, index)
            rollout.observations = observations
            if budget is not None:  # envs that only reset played no step of their claim
                claimed = budget.claim(self.num_envs, unused=self.num_envs - (steps - steps_before))
        return done_episodes + self._cut_ongoing(rollout, steps, len(done_episodes))

    def _step_envs(self, actions: np.ndarray) -> tuple[Any, ...] | None:
        """One vector step; ``None`` when it failed and the config asks for failed envs to be rebuilt (RLlib's
        ``restart_failed_sub_environments``), else the step's error as a ``RuntimeError``, as RLlib raises it."""
        try:
            started = time.perf_counter()
            results = tuple(self.env.step(actions))  # type: ignore[union-attr]
            # Summed here and logged once per sample (_cut_ongoing): the metrics logger's timer costs ~2 us per
            # env step, more than the sampling loop's own bookkeeping.
            self._env_step_time.add(time.perf_counter() - started)
            return results
        except Exception as error:
            if not self.config.restart_failed_sub_environments:
                raise RuntimeError(f"env runner {self.worker_index}: an env step failed: {error!r}") from error
            log.exception("env runner %s: an env step failed; rebuilding its envs", self.worker_index)
            self.make_env()
            return None

    def _reset_all(self) -> _Rollout:
        """New episodes on every env (their callbacks, seeding on the first reset of this runner's envs)."""
        rollout = _Rollout(observations=np.empty(0), episodes=[])
        rollout.episodes = [self._new_episode_for(rollout, index) for index in range(self.num_envs)]
        seed = self._env_seed if self._seed_next_reset else None  # later resets continue each env's stream
        self._seed_next_reset = False
        with self.metrics.log_time(ENV_RESET_TIMER):
            observations, infos = cast(tuple[Any, Any], self.env.reset(seed=seed))  # type: ignore[union-attr]
        for index, episode in enumerate(rollout.episodes):
            episode.add_env_reset(observation=observations[index], infos=infos[index])
        for index in range(self.num_envs):
            self._episode_callback("on_episode_start", rollout, index)
        rollout.observations = np.asarray(observations)
        return rollout

    def _new_episode_for(self, rollout: _Rollout, index: int) -> SingleAgentEpisode:
        assert self.env is not None
        episode = SingleAgentEpisode(observation_space=self.env.single_observation_space,
                                     action_space=self.env.single_action_space)
        rollout.tallies[episode.id_] = _EpisodeTally()
        self._callback("on_episode_created", episode=episode, env_runner=self, metrics_logger=self.metrics,
                       env=self.env.unwrapped, rl_module=self.module, env_index=index)
        return episode

    def _cut_ongoing(self, rollout: _Rollout, steps: int, episodes_done: int) -> list[SingleAgentEpisode]:
        """What a timestep sample ends with: the ongoing episodes' chunks are returned and their continuations
        go on collecting; the sampled-steps metrics count the sample."""
        ongoing: list[SingleAgentEpisode] = []
        continuations = [episode.cut(len_lookback_buffer=self.config.episode_lookback_horizon)
                         for episode in rollout.episodes]
        assert isinstance(self.module, ZeldaMLPModule)
        _, next_values = self.module.policy_and_values(rollout.observations)  # each chunk's bootstrap value
        for episode, next_value in zip(rollout.episodes, next_values, strict=True):
            if episode.t == 0:  # just reset: no data yet
                continue
            set_bootstrap_value(episode, next_value)
            episode.validate()
            tally = rollout.tallies[episode.id_]
            tally.length += len(episode)
            tally.total_return += episode.get_return()
            tally.chunks.append(episode)
            ongoing.append(episode.to_numpy() if self.episodes_to_numpy else episode)
        rollout.episodes = continuations
        self._log_sampled(steps, episodes_done)
        if self._env_step_time.count:  # the mean vector step of this sample, smoothed as RLlib's own timer is
            self.metrics.log_value(ENV_STEP_TIMER, self._env_step_time.take_mean(), reduce="ema")
        return ongoing

    def _episode_callback(self, which: str, rollout: _Rollout, index: int) -> None:
        episode = rollout.episodes[index]
        extra = {"prev_episode_chunks": rollout.tallies[episode.id_].chunks} if which == "on_episode_end" else {}
        self._callback(which, episode=episode, env_runner=self, metrics_logger=self.metrics,
                       env=self.env.unwrapped, rl_module=self.module, env_index=index, **extra)  # type: ignore[union-attr]

    def _callback(self, which: str, **kwargs: Any) -> None:
        make_callback(which, callbacks_objects=self._episode_callbacks,
                      callbacks_functions=getattr(self.config, f"callbacks_{which}", None), kwargs=kwargs)

    def _log_sampled(self, steps: int, episodes_done: int) -> None:
        """The sampled-steps counters, under the names RLlib's algorithms and the trainer's report read."""
        self.metrics.log_value(NUM_ENV_STEPS_SAMPLED, steps, reduce="sum")
        self.metrics.log_value((NUM_AGENT_STEPS_SAMPLED, DEFAULT_AGENT_ID), steps, reduce="sum")
        self.metrics.log_value((NUM_MODULE_STEPS_SAMPLED, DEFAULT_MODULE_ID), steps, reduce="sum")
        self.metrics.log_value(NUM_EPISODES, episodes_done, reduce="sum")
        self.metrics.log_value(NUM_ENV_STEPS_SAMPLED_LIFETIME, steps, reduce="lifetime_sum", with_throughput=True)
        self.metrics.log_value((NUM_AGENT_STEPS_SAMPLED_LIFETIME, DEFAULT_AGENT_ID), steps, reduce="lifetime_sum")
        self.metrics.log_value((NUM_MODULE_STEPS_SAMPLED_LIFETIME, DEFAULT_MODULE_ID), steps, reduce="lifetime_sum")
        self.metrics.log_value(NUM_EPISODES_LIFETIME, episodes_done, reduce="lifetime_sum")

    def _log_episode(self, tally: _EpisodeTally, last_chunk: SingleAgentEpisode) -> None:
        """A finished episode's length, return and duration over all its chunks. Each runner keeps its share of
        the smoothing window, as the driver merges every runner's values."""
        length = tally.length + len(last_chunk)
        total_return = tally.total_return + float(last_chunk.get_return())
        duration = time.perf_counter() - tally.started
        window = max(1, math.ceil(self.config.metrics_num_episodes_for_smoothing / (self.config.num_env_runners or 1)))
        for key, value in ((EPISODE_LEN_MEAN, length), (EPISODE_RETURN_MEAN, total_return),
                           (EPISODE_DURATION_SEC_MEAN, duration),
                           (("agent_episode_return_mean", DEFAULT_AGENT_ID), total_return),
                           (("module_episode_return_mean", DEFAULT_MODULE_ID), total_return)):
            self.metrics.log_value(key, value, window=window)
        for key, value, reduce in ((EPISODE_LEN_MIN, length, "min"), (EPISODE_LEN_MAX, length, "max"),
                                   (EPISODE_RETURN_MIN, total_return, "min"),
                                   (EPISODE_RETURN_MAX, total_return, "max")):
            self.metrics.log_value(key, value, reduce=reduce, window=window)


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
