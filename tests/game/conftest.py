"""Game-layer fixtures: the bundled test world through the real environment and real PyBoy."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from zelda_rlaif.game.config import EnvConfig
from zelda_rlaif.game.env import ZeldaEnv
from zelda_rlaif.game.rewards.config import RewardConfig

# Oracle of Seasons is never bundled; set these to run its tests against your own copy.
OOS_ROM = os.environ.get("ZELDA_OOS_ROM")
OOS_STATE = os.environ.get("ZELDA_OOS_STATE")


@pytest.fixture
def env() -> Iterator[ZeldaEnv]:
    """The test world without RND, so every reward in a test comes from the scripted behaviour."""
    environment = ZeldaEnv(EnvConfig(max_steps=5000, start_jitter=0, rewards=RewardConfig(rnd=0.0)))
    environment.reset(seed=0)
    yield environment
    environment.close()


@pytest.fixture
def oracle_paths() -> tuple[Path, Path]:
    if not (OOS_ROM and OOS_STATE):
        pytest.skip("set ZELDA_OOS_ROM and ZELDA_OOS_STATE to test Oracle of Seasons (the ROM is not bundled)")
    return Path(OOS_ROM), Path(OOS_STATE)
