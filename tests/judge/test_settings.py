"""JudgeSettings from the environment: defaults, per-kind overrides, and errors that name the variable."""

from __future__ import annotations

from datetime import timedelta

import pytest

from zelda_judge.rule_scores import RULES_MODEL
from zelda_judge.settings import JudgeSettings
from zelda_rlaif.errors import SettingsError
from zelda_rlaif.events import JudgeKind
from zelda_rlaif.settings import load_settings
from zelda_rlaif.subjects import judge_consumer


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for name in list(os.environ):
        if name.startswith("ZELDA_JUDGE_"):
            monkeypatch.delenv(name)


def test_defaults_are_the_rules_backend_with_three_votes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZELDA_JUDGE_KIND", "puzzle")
    settings = load_settings(JudgeSettings)
    assert settings.judge_kind is JudgeKind.PUZZLE and settings.backend == "rules" and settings.votes == 3
    assert settings.model_label() == RULES_MODEL and settings.llm_api_key is None
    assert settings.rubric.as_dict() == {"progress": 1.0, "dialog": 0.01, "puzzle": 0.01, "novelty": 0.01,
                                         "efficiency": 0.01}
    assert settings.consumer(judge_consumer(JudgeKind.PUZZLE)) == judge_consumer(JudgeKind.PUZZLE)


def test_missing_kind_says_how_to_set_it() -> None:
    with pytest.raises(SettingsError, match="ZELDA_JUDGE_KIND"):
        load_settings(JudgeSettings)


def test_openai_backend_needs_url_and_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZELDA_JUDGE_BACKEND", "openai")
    with pytest.raises(SettingsError, match=r"ZELDA_JUDGE_LLM_URL \(or ZELDA_JUDGE_ENDPOINTS__STATE__LLM_URL\)"):
        load_settings(JudgeSettings, kind="state")
    monkeypatch.setenv("ZELDA_JUDGE_LLM_URL", "http://vllm:8000/v1/chat/completions")
    with pytest.raises(SettingsError, match="ZELDA_JUDGE_LLM_MODEL"):
        load_settings(JudgeSettings, kind="state")


def test_per_kind_overrides_win(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZELDA_JUDGE_BACKEND", "openai")
    monkeypatch.setenv("ZELDA_JUDGE_LLM_URL", "http://llm:8000/v1/")
    monkeypatch.setenv("ZELDA_JUDGE_LLM_MODEL", "Qwen/Qwen2.5-7B-Instruct")
    monkeypatch.setenv("ZELDA_JUDGE_ENDPOINTS__VISION__LLM_URL", "http://vl:8000/v1")
    monkeypatch.setenv("ZELDA_JUDGE_ENDPOINTS__VISION__LLM_MODEL", "Qwen/Qwen2.5-VL-32B-Instruct")
    monkeypatch.setenv("ZELDA_JUDGE_ENDPOINTS__VISION__MAX_IN_FLIGHT", "4")
    monkeypatch.setenv("ZELDA_JUDGE_LLM_API_KEY", "sk-test-123456")
    state = load_settings(JudgeSettings, kind="state").endpoint()
    vision = load_settings(JudgeSettings, kind="vision").endpoint()
    assert (state.chat_completions_url, state.model, state.max_in_flight) == (
        "http://llm:8000/v1/chat/completions", "Qwen/Qwen2.5-7B-Instruct", 16)
    assert (vision.chat_completions_url, vision.model, vision.max_in_flight) == (
        "http://vl:8000/v1/chat/completions", "Qwen/Qwen2.5-VL-32B-Instruct", 4)
    assert vision.api_key is not None and vision.api_key.get_secret_value() == "sk-test-123456"
    assert "sk-test" not in repr(load_settings(JudgeSettings, kind="vision"))


def test_a_kind_of_its_own_needs_no_default_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZELDA_JUDGE_ENDPOINTS__PUZZLE__LLM_URL", "http://puzzle:8000/v1")
    monkeypatch.setenv("ZELDA_JUDGE_ENDPOINTS__PUZZLE__LLM_MODEL", "m")
    monkeypatch.setenv("ZELDA_JUDGE_ENDPOINTS__PUZZLE__LLM_TIMEOUT_S", "7.5")
    puzzle = load_settings(JudgeSettings, kind="puzzle", backend="openai").endpoint()
    assert (puzzle.url, puzzle.model, puzzle.timeout_s, puzzle.max_in_flight) == ("http://puzzle:8000/v1", "m", 7.5, 16)
    with pytest.raises(SettingsError, match=r"ZELDA_JUDGE_LLM_URL \(or ZELDA_JUDGE_ENDPOINTS__STATE__LLM_URL\)"):
        load_settings(JudgeSettings, kind="state", backend="openai")


def test_an_override_for_an_unknown_kind_is_refused_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZELDA_JUDGE_ENDPOINTS__SOUND__LLM_MODEL", "m")
    kinds = ", ".join(kind.value for kind in JudgeKind)
    with pytest.raises(SettingsError, match=rf"'sound' is not a judge kind \({kinds}\); rename or "
                                            "remove ZELDA_JUDGE_ENDPOINTS__SOUND__"):
        load_settings(JudgeSettings, kind="state")


def test_a_misspelt_override_names_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZELDA_JUDGE_ENDPOINTS__VISION__LLM_MODLE", "m")
    with pytest.raises(SettingsError, match="ZELDA_JUDGE_ENDPOINTS__VISION__LLM_MODLE: Extra inputs"):
        load_settings(JudgeSettings, kind="vision")
    monkeypatch.delenv("ZELDA_JUDGE_ENDPOINTS__VISION__LLM_MODLE")
    monkeypatch.setenv("ZELDA_JUDGE_ENDPOINTS__VISION__MAX_IN_FLIGHT", "0")
    with pytest.raises(SettingsError, match=r"ZELDA_JUDGE_ENDPOINTS__VISION__MAX_IN_FLIGHT: .* \(got '0'\)"):
        load_settings(JudgeSettings, kind="vision")


def test_placeholder_api_key_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZELDA_JUDGE_LLM_API_KEY", "changeme")
    with pytest.raises(SettingsError, match="ZELDA_JUDGE_LLM_API_KEY: is empty or a placeholder"):
        load_settings(JudgeSettings, kind="state")
    monkeypatch.delenv("ZELDA_JUDGE_LLM_API_KEY")
    monkeypatch.setenv("ZELDA_JUDGE_ENDPOINTS__VISION__LLM_API_KEY", "changeme")
    with pytest.raises(SettingsError, match="ZELDA_JUDGE_ENDPOINTS__VISION__LLM_API_KEY: is empty or a placeholder") \
            as caught:
        load_settings(JudgeSettings, kind="vision")
    assert "changeme" not in str(caught.value)  # a secret's value never appears in an error


def test_bad_url_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZELDA_JUDGE_ENDPOINTS__PUZZLE__LLM_URL", "10.0.0.7:8000")
    with pytest.raises(SettingsError, match=r"ZELDA_JUDGE_ENDPOINTS__PUZZLE__LLM_URL: .*not an http"):
        load_settings(JudgeSettings, kind="puzzle")


def test_zero_temperature_with_several_votes_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZELDA_JUDGE_TEMPERATURE", "0")
    with pytest.raises(SettingsError, match="TEMPERATURE > 0"):
        load_settings(JudgeSettings, kind="state", backend="openai", llm_url="http://x/v1", llm_model="m")


def test_rubric_and_consumer_tuning_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZELDA_JUDGE_RUBRIC__PROGRESS", "0.5")
    monkeypatch.setenv("ZELDA_JUDGE_RUBRIC__NOVELTY", "0")
    monkeypatch.setenv("ZELDA_JUDGE_ACK_WAIT_S", "2.5")
    monkeypatch.setenv("ZELDA_JUDGE_REDELIVERY_BACKOFF_S", "0.5, 2")
    settings = load_settings(JudgeSettings, kind="state")
    weights = settings.rubric.as_dict()
    assert weights["progress"] == 0.5 and weights["novelty"] == 0 and weights["dialog"] == 0.01
    spec = settings.consumer(judge_consumer(JudgeKind.STATE))
    assert spec.durable == "judge-state" and spec.ack_wait == timedelta(seconds=2.5)
    assert spec.backoff == (timedelta(seconds=0.5), timedelta(seconds=2))
    monkeypatch.setenv("ZELDA_JUDGE_RUBRIC", '{"progress": 1, "dialog": 0, "puzzle": 0, "novelty": 0, "efficiency": 0}')
    monkeypatch.delenv("ZELDA_JUDGE_RUBRIC__PROGRESS")
    monkeypatch.delenv("ZELDA_JUDGE_RUBRIC__NOVELTY")
    assert load_settings(JudgeSettings, kind="state").rubric.as_dict()["progress"] == 1


def test_bad_rubric_weights_name_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZELDA_JUDGE_RUBRIC__SPEED", "0.5")
    with pytest.raises(SettingsError, match="ZELDA_JUDGE_RUBRIC: no judge kind scores speed; the dimensions are"):
        load_settings(JudgeSettings, kind="state")
    monkeypatch.delenv("ZELDA_JUDGE_RUBRIC__SPEED")
    monkeypatch.setenv("ZELDA_JUDGE_RUBRIC__DIALOG", "-1")
    with pytest.raises(SettingsError, match=r"ZELDA_JUDGE_RUBRIC__DIALOG: .*greater than or equal to 0"):
        load_settings(JudgeSettings, kind="state")


def test_budget_below_the_minimum_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZELDA_JUDGE_TOKEN_BUDGET", "200")
    with pytest.raises(SettingsError, match="ZELDA_JUDGE_TOKEN_BUDGET"):
        load_settings(JudgeSettings, kind="state")
