"""The checks the deployment tests lean on must themselves catch mistakes."""

from __future__ import annotations

import pytest

from tests.deploy.contracts import check_command, known_env_vars


@pytest.mark.parametrize(
    "argv",
    [
        ["zelda-rlaif", "judges", "--kind", "state"],
        ["zelda-rlaif", "judge", "--kind", "sound"],
        ["zelda-rlaif", "trainer", "--ray-adress", "auto"],
        ["python", "-m", "zelda_rlaif", "hud"],
        ["zelda-rlaif"],
    ],
)
def test_a_wrong_command_is_caught(argv: list[str]) -> None:
    with pytest.raises(AssertionError):
        check_command(argv)


def test_known_variables_are_those_the_settings_read() -> None:
    known = known_env_vars()
    assert {"ZELDA_NATS_PASSWORD", "ZELDA_STORE_S3_SECRET_KEY", "ZELDA_LOG_FORMAT"} <= known
    pytest.importorskip("zelda_judge.settings")
    assert {"ZELDA_JUDGE_LLM_URL", "ZELDA_JUDGE_ENDPOINTS__STATE__LLM_MODEL", "ZELDA_JUDGE_RUBRIC__PROGRESS"} <= known
    unknown = {"ZELDA_JUDGE_LLM_URLS", "ZELDA_JUDGE_ENDPOINTS__SOUND__LLM_MODEL", "ZELDA_JUDGE_RUBRIC__SPEED"}
    assert unknown.isdisjoint(known)
