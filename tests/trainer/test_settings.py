"""Trainer settings that could never work are refused with the fix in the message."""

from __future__ import annotations

import os

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


def test_a_lead_that_would_leave_the_policy_no_step_is_refused() -> None:
    with pytest.raises(ValidationError, match="give it fewer steps than ZELDA_TRAINER_EPISODE_STEPS"):
        TrainerSettings(episode_steps=600, judged_start_lead_steps=600)
    assert TrainerSettings(episode_steps=600, judged_start_lead_steps=80).judged_start_lead_steps == 80
    # The default lead is left out of episodes no longer than it, not refused: nobody asked for it.
    assert TrainerSettings(episode_steps=50).judged_start_lead_steps == 0
    assert TrainerSettings().judged_start_lead_steps == 60
    with pytest.MonkeyPatch.context() as env:
        env.setenv("ZELDA_TRAINER_JUDGED_START_LEAD_STEPS", "50")
        with pytest.raises(ValidationError, match="give it fewer steps than ZELDA_TRAINER_EPISODE_STEPS"):
            TrainerSettings(episode_steps=50)


def test_an_unknown_game_profile_is_refused_with_the_known_ones() -> None:
    with pytest.raises(ValidationError, match="unknown game profile; known profiles: testworld, oracle-of-seasons"):
        TrainerSettings(profile="zelda")
    assert TrainerSettings(profile="testworld").profile == "testworld"


def test_a_local_ray_gets_an_object_store_sized_for_a_small_pod(monkeypatch: pytest.MonkeyPatch) -> None:
    from zelda_trainer.training import local_ray_options

    def object_store() -> int | None:
        options = local_ray_options(TrainerSettings())
        os.rmdir(options["_temp_dir"])
        return options["object_store_memory"]

    assert object_store() == 256 * 1024 * 1024  # not Ray's 30% of memory
    monkeypatch.setenv("ZELDA_TRAINER_RAY_OBJECT_STORE_BYTES", "1000000000")
    assert object_store() == 1_000_000_000
    monkeypatch.setenv("ZELDA_TRAINER_RAY_OBJECT_STORE_BYTES", "")
    assert object_store() is None  # empty: Ray's own default
    monkeypatch.setenv("ZELDA_TRAINER_RAY_OBJECT_STORE_BYTES", str(64 * 1024 * 1024))
    with pytest.raises(ValidationError, match="ray_object_store_bytes"):
        TrainerSettings()  # under Ray's 75 MiB minimum: refused here, not by ray.init mid-start
