"""The Gymnasium environment on the bundled test world: API conformance, determinism, observations."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
from gymnasium.utils.env_checker import check_env

from zelda_rlaif.game import ENV_ID
from zelda_rlaif.game.actions import Action
from zelda_rlaif.game.config import EnvConfig
from zelda_rlaif.game.env import ZeldaEnv
from zelda_rlaif.segments import GameState


def test_check_env_on_the_test_world() -> None:
    env = ZeldaEnv()
    check_env(env, skip_render_check=True)
    env.close()


def test_check_env_on_oracle_of_seasons(oracle_paths: tuple[Path, Path]) -> None:
    rom, state = oracle_paths
    env = ZeldaEnv(EnvConfig(rom=rom, state=state))
    check_env(env, skip_render_check=True)
    env.close()


def test_registered_with_gymnasium() -> None:
    env = gym.make(ENV_ID, config=EnvConfig(max_steps=5))
    obs, _ = env.reset(seed=3)
    assert obs.shape == (128,) and obs.dtype == np.float32
    for _ in range(5):
        obs, _, terminated, truncated, _ = env.step(env.action_space.sample())
    assert truncated and not terminated
    env.close()


def test_seeded_reset_is_deterministic() -> None:
    actions = np.random.default_rng(7).integers(0, 8, 200)

    def play(seed: int) -> np.ndarray:
        env = ZeldaEnv(EnvConfig(start_jitter=8))
        observations = [env.reset(seed=seed)[0]]
        observations += [env.step(int(a))[0] for a in actions]
        env.close()
        return np.stack(observations)

    assert np.array_equal(play(11), play(11))


def test_info_carries_state_record_and_reward_components(env: ZeldaEnv) -> None:
    _, reward, _, _, info = env.step(Action.START)
    state = GameState(**{k: v for k, v in info["state"].items() if k in GameState.model_fields})
    assert state.menu_open and (state.group, state.room) == (0, 0x11)
    assert info["components"]["start_press"] < 0
    assert reward == sum(info["components"].values())


def test_observation_stays_in_bounds_over_random_play() -> None:
    env = ZeldaEnv(EnvConfig(max_steps=3000))
    obs, _ = env.reset(seed=5)
    rng = np.random.default_rng(5)
    for _ in range(3000):
        obs, _, _, truncated, _ = env.step(int(rng.integers(0, 8)))
        assert env.observation_space.contains(obs)
        if truncated:
            break
    env.close()


def test_rendering_only_when_asked(env: ZeldaEnv) -> None:
    env.step(Action.RIGHT)
    assert not env.frame_available
    env.render_next = True
    env.step(Action.RIGHT)
    assert env.frame_available
    screen = env.screen()
    assert screen.shape == (144, 160, 3) and screen.std() > 0
    assert np.array_equal(screen, env.emulator.pyboy.screen.ndarray[:, :, :3])  # PyBoy's RGBA, alpha dropped
