"""``TrainingVectorEnv``: what RLlib's env runner relies on (batched steps, NEXT_STEP autoreset, sparse infos)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from zelda_rlaif.game.config import EnvConfig
from zelda_rlaif.game.env import ZeldaEnv
from zelda_rlaif.game.rewards.config import RewardConfig
from zelda_trainer.env_config import TrainingEnvConfig
from zelda_trainer.vector_env import TrainingVectorEnv

EPISODE_STEPS = 6


def plain_config(env: EnvConfig) -> TrainingEnvConfig:
    """No export, no live view: the env alone."""
    return TrainingEnvConfig(env=env, epoch=0, export=None, live=None)


@pytest.fixture
def vector_env() -> Iterator[TrainingVectorEnv]:
    env = TrainingVectorEnv(plain_config(EnvConfig(max_steps=EPISODE_STEPS, rewards=RewardConfig(rnd=0.0))),
                            num_envs=3)
    env.attach(worker_index=1)
    yield env
    env.close()


def test_sub_envs_are_named_by_worker_and_slot_and_must_be_attached_first() -> None:
    env = TrainingVectorEnv(plain_config(EnvConfig(max_steps=10)), num_envs=2)
    with pytest.raises(RuntimeError, match="attach"):
        env.reset(seed=0)
    env.attach(worker_index=3)
    assert [sub.source_id for sub in env.envs] == ["w3v0", "w3v1"]
    env.close()


def test_steps_match_single_envs_seeded_like_gymnasium_vector_envs(vector_env: TrainingVectorEnv) -> None:
    singles = [ZeldaEnv(EnvConfig(max_steps=EPISODE_STEPS, rewards=RewardConfig(rnd=0.0))) for _ in range(3)]
    observations, _ = vector_env.reset(seed=7)
    for index, single in enumerate(singles):
        np.testing.assert_array_equal(observations[index], single.reset(seed=7 + index)[0])
    actions = np.array([4, 2, 5])
    for _ in range(EPISODE_STEPS - 1):
        observations, rewards, _, _, _ = vector_env.step(actions)
        for index, single in enumerate(singles):
            obs, reward, _, _, _ = single.step(int(actions[index]))
            np.testing.assert_array_equal(observations[index], obs)
            assert rewards[index] == pytest.approx(reward)
    for single in singles:
        single.close()


def test_episode_end_reports_totals_then_the_next_step_resets(vector_env: TrainingVectorEnv) -> None:
    vector_env.reset(seed=0)
    actions = np.zeros(3, dtype=np.int64)
    _, _, _, _, infos = vector_env.step(actions)
    # The first step reports the start room; most steps report nothing at all.
    assert infos["_new_rooms"].all() and all(len(rooms) == 1 for rooms in infos["new_rooms"])
    for _ in range(EPISODE_STEPS - 2):
        _, _, terminated, truncated, infos = vector_env.step(actions)
        assert not truncated.any() and "episode" not in infos
    _, _, terminated, truncated, infos = vector_env.step(actions)
    assert truncated.all() and not terminated.any()
    assert infos["_episode"].all()
    assert all("components" in totals for totals in infos["episode"])
    # Each env keeps the finished episode's record for the driver, who takes it once.
    for sub in vector_env.envs:
        [record] = sub.take_completed().episodes
        assert (record.steps, record.rooms_visited, record.milestones) == (EPISODE_STEPS, 1, [])
        assert record.env_return == pytest.approx(sub.zelda.episode_return) and record.reward_model_return == 0.0
        assert sub.take_completed().episodes == []
    # NEXT_STEP autoreset: this step's actions are ignored, each env starts a new episode.
    observations, rewards, terminated, truncated, infos = vector_env.step(np.full(3, 4))
    assert not (terminated.any() or truncated.any()) and not rewards.any() and infos == {}
    assert [sub.zelda.step_count for sub in vector_env.envs] == [0, 0, 0]
    assert observations.shape == (3, 128) and observations.dtype == np.float32
