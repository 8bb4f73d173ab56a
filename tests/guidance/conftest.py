"""Guidance fixtures: the OpenAI-protocol test server and its answers (the guided test world, `make_env`, is in
tests/conftest.py, which the real-server tests share)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.support.openai_server import OpenAIServer
from zelda_rlaif.game.env import ZeldaEnv
from zelda_rlaif.game.guidance.runtime import GuidanceRuntime


class Answers:
    """The test server's answers: a fixed action and reason, changeable mid-test."""

    def __init__(self) -> None:
        self.action = "right"

    def __call__(self, body: dict[str, Any], index: int, seed: int | None) -> str:
        return json.dumps({"action": self.action, "reason": f"the test server says {self.action}"})


@pytest.fixture
def answers() -> Answers:
    return Answers()


@pytest.fixture
def llm(answers: Answers, openai_server: Callable[..., OpenAIServer]) -> OpenAIServer:
    return openai_server(responder=answers, hang_s=5.0)


def llm_settings(server: OpenAIServer, **overrides: Any) -> dict[str, Any]:
    """Guidance settings for the openai backend on the test server (text requests on every step)."""
    values: dict[str, Any] = {"backend": "openai", "llm_url": server.url, "llm_model": server.model,
                              "text_probability": 1.0, "vision_probability": 0.0, "per_env_rate_per_s": 1000.0,
                              "global_rate_per_s": 1000.0, "burst": 1000, "timeout_s": 5.0}
    return {**values, **overrides}


def runtime(env: ZeldaEnv) -> GuidanceRuntime:
    assert env.guidance is not None
    return env.guidance
