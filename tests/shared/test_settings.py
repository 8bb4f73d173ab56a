"""Settings fail at start with a message that names the environment variable to fix."""

from __future__ import annotations

import pytest

from zelda_rlaif.errors import SettingsError
from zelda_rlaif.settings import LogSettings, NatsSettings, StoreSettings, load_settings


def test_invalid_value_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZELDA_NATS_URL", "http://localhost:4222")
    with pytest.raises(SettingsError, match=r"ZELDA_NATS_URL: .*not a NATS URL"):
        load_settings(NatsSettings)
    monkeypatch.setenv("ZELDA_NATS_CONNECT_TIMEOUT_S", "-3")
    monkeypatch.setenv("ZELDA_NATS_URL", "nats://localhost:4222")
    with pytest.raises(SettingsError, match="ZELDA_NATS_CONNECT_TIMEOUT_S"):
        load_settings(NatsSettings)


def test_placeholder_secret_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZELDA_STORE_URL", "s3://bucket")
    monkeypatch.setenv("ZELDA_STORE_S3_ACCESS_KEY", "admin")
    monkeypatch.setenv("ZELDA_STORE_S3_SECRET_KEY", "changeme")
    with pytest.raises(SettingsError, match=r"ZELDA_STORE_S3_SECRET_KEY: .*placeholder"):
        load_settings(StoreSettings)


def test_a_rejected_secret_is_not_echoed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZELDA_NATS_URL", "nats://localhost:4222")
    monkeypatch.setenv("ZELDA_NATS_TOKEN", "<my-real-token>")
    with pytest.raises(SettingsError, match="ZELDA_NATS_TOKEN") as caught:
        load_settings(NatsSettings)
    assert "my-real-token" not in str(caught.value)


def test_secrets_are_never_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZELDA_STORE_URL", "s3://bucket")
    monkeypatch.setenv("ZELDA_STORE_S3_ACCESS_KEY", "AKIAREALKEY")
    monkeypatch.setenv("ZELDA_STORE_S3_SECRET_KEY", "very-secret-value")
    settings = load_settings(StoreSettings)
    assert "very-secret-value" not in repr(settings)


def test_log_level_is_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZELDA_LOG_LEVEL", "LOUD")
    with pytest.raises(SettingsError, match="ZELDA_LOG_LEVEL"):
        load_settings(LogSettings)
