"""The service's settings refuse inconsistent values with the variable to fix."""

from __future__ import annotations

import pytest

from zelda_reward_model.settings import RewardModelSettings
from zelda_rlaif.errors import SettingsError
from zelda_rlaif.settings import load_settings


def test_defaults_load_and_record_only_training_settings() -> None:
    record = load_settings(RewardModelSettings).training_record()
    assert record["preference_margin"] == 0.002 and "nats" not in record and "store" not in record


def test_tie_band_must_be_below_the_margin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZELDA_REWARD_MODEL_TIE_BAND", "0.2")
    with pytest.raises(SettingsError, match=r"ZELDA_REWARD_MODEL_TIE_BAND .* ZELDA_REWARD_MODEL_PREFERENCE_MARGIN"):
        load_settings(RewardModelSettings)


def test_optimism_for_unseen_places_is_on_by_default_and_null_turns_it_off(monkeypatch: pytest.MonkeyPatch) -> None:
    assert load_settings(RewardModelSettings).training_record()["unseen_place_quantile"] == 0.99
    monkeypatch.setenv("ZELDA_REWARD_MODEL_UNSEEN_PLACE_QUANTILE", "null")
    settings = load_settings(RewardModelSettings)
    assert settings.unseen_place_quantile is None and "unseen_place_quantile" not in settings.training_record()


@pytest.mark.parametrize(("name", "value"), [("DEVICE", "tpu"), ("VALIDATION_FRACTION", "1.5"), ("PASSES", "0"),
                                             ("UNSEEN_PLACE_QUANTILE", "1.5")])
def test_bad_values_name_the_variable(monkeypatch: pytest.MonkeyPatch, name: str, value: str) -> None:
    monkeypatch.setenv(f"ZELDA_REWARD_MODEL_{name}", value)
    with pytest.raises(SettingsError, match=f"ZELDA_REWARD_MODEL_{name}"):
        load_settings(RewardModelSettings)
