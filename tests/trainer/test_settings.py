"""Trainer settings that could never work are refused with the fix in the message."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from zelda_trainer.settings import TrainerSettings


def test_an_epoch_too_short_for_one_segment_per_emulator_is_refused() -> None:
    # 2 runners x 16 emulators share one 2048-step PPO iteration: 64 steps each, less than a 300-step segment.
    with pytest.raises(ValidationError, match="raise ZELDA_TRAINER_STEPS_PER_EPOCH to at least 9600"):
        TrainerSettings(envs_per_runner=16, steps_per_epoch=1024)
    # Epochs end after whole iterations: 16,384 steps give each of the 32 emulators 512.
    assert TrainerSettings(envs_per_runner=16, steps_per_epoch=16_384).steps_per_env_per_epoch == 512
    # Nothing is exported: no segment to fit.
    TrainerSettings(envs_per_runner=16, steps_per_epoch=1024, export_fraction=0.0)


def test_the_defaults_leave_room_for_segments() -> None:
    settings = TrainerSettings()
    assert settings.steps_per_env_per_epoch >= settings.segment_steps


def test_an_unknown_game_profile_is_refused_with_the_known_ones() -> None:
    with pytest.raises(ValidationError, match="unknown game profile; known profiles: testworld, oracle-of-seasons"):
        TrainerSettings(profile="zelda")
    assert TrainerSettings(profile="testworld").profile == "testworld"
