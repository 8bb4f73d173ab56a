"""``ZeldaEnvRunner``: its lean loop gives the learner what RLlib's own loop gives, and hands over to it cleanly."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import torch
from ray.rllib.core import COMPONENT_RL_MODULE
from ray.rllib.core.columns import Columns

from tests.trainer.local_runner import local_env_runner
from zelda_trainer.env_config import EnvSync
from zelda_trainer.env_runner import RunnerNotRestored, ZeldaEnvRunner, sample_categorical

ENVS = 3
EPISODE_STEPS = 40


@pytest.fixture(scope="module")
def runner() -> Iterator[ZeldaEnvRunner]:
    with local_env_runner("runner-test", ENVS, EPISODE_STEPS) as runner:
        yield runner


def test_sampled_actions_follow_the_softmax_with_their_log_probabilities() -> None:
    logits = np.tile(np.array([[2.0, 0.0, -1.0, 0.5, -3.0, 1.0, 0.0, -0.5]], dtype=np.float32), (200_000, 1))
    actions, logp = sample_categorical(logits, np.random.default_rng(0))
    expected = torch.softmax(torch.from_numpy(logits[0]), 0).numpy()
    frequencies = np.bincount(actions, minlength=8) / len(actions)
    np.testing.assert_allclose(frequencies, expected, atol=0.004)
    np.testing.assert_allclose(logp, np.log(expected)[actions], rtol=1e-5)
    assert logp.dtype == np.float32


def test_episodes_carry_what_ppo_needs_and_continue_across_samples(runner: ZeldaEnvRunner) -> None:
    first = runner.sample(num_timesteps=60)
    assert sum(len(episode) for episode in first) >= 60
    module = runner.module
    for episode in first:
        actions = episode.get_actions()
        logits = episode.get_extra_model_outputs(Columns.ACTION_DIST_INPUTS)
        logp = episode.get_extra_model_outputs(Columns.ACTION_LOGP)
        assert len(actions) == len(logits) == len(logp) == len(episode.get_rewards()) == len(episode)
        assert len(episode.get_observations()) == len(episode) + 1
        # The stored log-probabilities are those of the stored logits, which are the module's own.
        recomputed = torch.log_softmax(torch.from_numpy(logits), -1).numpy()[np.arange(len(actions)), actions]
        np.testing.assert_allclose(logp, recomputed, rtol=1e-4, atol=1e-5)
        with torch.inference_mode():
            module_logits, module_values = module.policy_and_values(  # type: ignore[union-attr]
                episode.get_observations()[:-1])
        np.testing.assert_allclose(logits, module_logits, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(episode.get_extra_model_outputs(Columns.VF_PREDS), module_values, rtol=1e-4,
                                   atol=1e-5)
    ongoing = {episode.id_: episode for episode in first if not episode.is_done}
    assert ongoing, "an episode of 40 steps cannot have finished within 20 steps per env"
    second = runner.sample(num_timesteps=60)
    continued = [episode for episode in second if episode.id_ in ongoing]
    assert continued, "the next sample continues the cut episodes"
    for episode in continued:
        assert episode.t_started == ongoing[episode.id_].t
        np.testing.assert_array_equal(episode.get_observations(0), ongoing[episode.id_].get_observations(-1))


def test_episode_ends_reset_the_env_and_start_new_episodes(runner: ZeldaEnvRunner) -> None:
    episodes = runner.sample(num_timesteps=ENVS * EPISODE_STEPS * 2)
    finished = [episode for episode in episodes if episode.is_done]
    assert len(finished) >= ENVS
    assert all(episode.is_truncated for episode in finished)
    metrics = runner.get_metrics()
    assert metrics["num_episodes"] >= ENVS


def test_the_room_heat_map_counts_every_first_entry_once_across_cut_episodes(runner: ZeldaEnvRunner) -> None:
    """The rooms are counted from each sample's chunks (no per-step callback): an entry reported at a chunk's
    boundary is counted in one chunk only."""
    envs = runner.env.unwrapped.envs  # type: ignore[union-attr]
    runner.sample(num_timesteps=ENVS, force_reset=True)  # every env one step into a new episode
    runner.get_metrics()  # what the reset reported is counted; start from here
    for env in envs:
        env.take_completed()
    rooms_before = sum(env.zelda.coverage.rooms_visited() for env in envs)
    # 24 more steps each, then 15 to the episodes' end and 10 into the next: episodes cut twice, ended once.
    for steps in (24, 25):
        runner.sample(num_timesteps=ENVS * steps)
    counted = sum(stats.peek() for key, stats in runner.get_metrics().items() if key.startswith("zelda/room/"))
    finished = [episode for env in envs for episode in env.take_completed().episodes]
    assert len(finished) == ENVS
    in_progress = sum(env.zelda.coverage.rooms_visited() for env in envs)
    assert counted == sum(episode.rooms_visited for episode in finished) - rooms_before + in_progress


def test_rllib_loop_takes_over_for_whole_episodes_then_the_lean_loop_resumes(runner: ZeldaEnvRunner) -> None:
    runner.sample(num_timesteps=30)
    whole = runner.sample(num_episodes=1)
    assert whole and whole[0].is_done and whole[0].t_started == 0
    again = runner.sample(num_timesteps=30)
    assert sum(len(episode) for episode in again) >= 30
    assert all(episode.t_started == 0 for episode in again), "a fresh reset after RLlib's loop"


def test_a_failed_env_step_rebuilds_the_envs_when_asked_and_the_sample_still_fills(
        runner: ZeldaEnvRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    """With ``restart_failed_sub_environments`` (RLlib's rule): rebuild the envs, reset every env, drop the
    half-built episodes and fill the sample from there."""
    runner.sample(num_timesteps=30)
    vector_env = runner.env
    assert vector_env is not None
    real_step = vector_env.step
    calls = 0

    def failing_once(actions: np.ndarray) -> Any:
        nonlocal calls
        calls += 1
        if calls == 3:
            raise OSError("an emulator died")
        return real_step(actions)

    monkeypatch.setattr(vector_env, "step", failing_once)
    monkeypatch.setattr(runner.config, "restart_failed_sub_environments", True)
    episodes = runner.sample(num_timesteps=30)
    assert runner.env is not vector_env, "the failed envs were rebuilt"
    assert sum(len(episode) for episode in episodes) >= 30
    assert all(episode.t_started == 0 for episode in episodes), "the half-built chunks were dropped with the reset"


def test_a_restarted_runner_samples_only_once_restored(runner: ZeldaEnvRunner) -> None:
    """A runner process that Ray restarted behind RLlib's back refuses to sample until RLlib restored its weights
    and the driver's epoch and reward model (the failure is what makes RLlib restore it)."""
    assert not runner._restarted, "a runner built in this process is no restarted actor"
    runner._restarted, runner._weights_set, runner.env_sync = True, False, None
    try:
        with pytest.raises(RunnerNotRestored, match="restarted by Ray"):
            runner.sample(num_timesteps=10)
        assert runner.module is not None
        runner.set_state({COMPONENT_RL_MODULE: runner.module.get_state(inference_only=True)})
        with pytest.raises(RunnerNotRestored, match="epoch and reward model: False"):
            runner.sample(num_timesteps=10)
        runner.apply_env_sync(EnvSync(epoch=5))
        assert runner.sample(num_timesteps=10)
        assert all(env.get_wrapper_attr("_epoch") == 5 for env in runner.env.unwrapped.envs)  # type: ignore[union-attr]
    finally:
        runner._restarted = False


def test_a_sample_whose_env_step_failed_is_followed_by_a_fresh_reset(runner: ZeldaEnvRunner) -> None:
    """The runner goes out of service and RLlib restores it in the same process: it must not carry on from envs
    left half-stepped (one env stepped, the others not) and episodes holding half a sample."""
    runner.sample(num_timesteps=30)
    env = runner.env.unwrapped.envs[0]  # type: ignore[union-attr]

    def unreachable_store(action: int) -> Any:
        raise OSError("the object store is unreachable")

    env.step = unreachable_store
    try:
        with pytest.raises(RuntimeError):
            runner.sample(num_timesteps=30)
    finally:
        del env.step
    episodes = runner.sample(num_timesteps=30)
    assert episodes and all(episode.t_started == 0 for episode in episodes)
