"""The env config: built and validated in the driver, shipped through Ray as JSON, with no secret in it."""

from __future__ import annotations

import pytest

from zelda_rlaif.errors import SettingsError
from zelda_rlaif.settings import NatsSettings, StoreSettings
from zelda_trainer.env_config import ENV_CONTEXT_KEY, TrainingEnvConfig, training_env_config
from zelda_trainer.settings import TrainerSettings
from zelda_trainer.vector_env import make_training_vector_env


def test_the_env_creator_gets_back_the_config_the_driver_built(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZELDA_STORE_S3_ACCESS_KEY", "access-key-of-the-test")
    monkeypatch.setenv("ZELDA_STORE_S3_SECRET_KEY", "secret-key-of-the-test")
    monkeypatch.setenv("ZELDA_NATS_PASSWORD", "nats-password-of-the-test")
    settings = TrainerSettings(run_id="typed", episode_steps=50, num_env_runners=0, envs_per_runner=2,
                               store=StoreSettings(url="s3://bucket/prefix", s3_endpoint="http://minio:9000"),
                               nats=NatsSettings(url="nats://nats:4222", user="trainer"))
    config = training_env_config(settings, "testworld", epoch=3)
    assert config.env.max_steps == 50 and config.epoch == 3
    assert config.export is not None and config.export.store.s3_endpoint == "http://minio:9000"
    assert config.live is not None and config.live.worker_index == 0  # the driver's runner samples

    context = config.to_env_context()
    assert list(context) == [ENV_CONTEXT_KEY]
    for secret in ("access-key-of-the-test", "secret-key-of-the-test", "nats-password-of-the-test"):
        assert secret not in context[ENV_CONTEXT_KEY]  # Ray ships and logs it: credentials stay in the environment
    assert TrainingEnvConfig.from_env_context({**context, "num_envs": 2}) == config
    # Each runner reads the credentials from its own environment.
    assert config.export.store.settings().s3_secret_key is not None


def test_settings_that_make_an_invalid_env_config_fail_in_the_driver_naming_the_field() -> None:
    with pytest.raises(SettingsError, match=r"ExportPlan\.run_id"):
        training_env_config(TrainerSettings(run_id="no/slashes"), "testworld", epoch=0)
    with pytest.raises(SettingsError, match=r"ExportPlan\.profile"):
        training_env_config(TrainerSettings(), "", epoch=0)


def test_the_env_creator_refuses_a_config_it_cannot_read() -> None:
    with pytest.raises(SettingsError, match="build_config"):
        make_training_vector_env({"env": {}, "num_envs": 1})
    config = training_env_config(TrainerSettings(), "testworld", epoch=0).to_env_context()
    tampered = config[ENV_CONTEXT_KEY].replace('"epoch":0', '"epoch":0,"surprise":1')
    with pytest.raises(ValueError, match="surprise"):
        make_training_vector_env({ENV_CONTEXT_KEY: tampered, "num_envs": 1})
