"""Guidance fixtures: the real test-world env with guidance on, and the OpenAI-protocol test server."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.support.openai_server import OpenAIServer
from zelda_rlaif.game.config import EnvConfig
from zelda_rlaif.game.env import ZeldaEnv
from zelda_rlaif.game.guidance.config import GuidanceConfig
from zelda_rlaif.game.guidance.runtime import GuidanceRuntime
from zelda_rlaif.game.rewards.config import RewardConfig


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


EnvFactory = Callable[..., ZeldaEnv]


@pytest.fixture
def make_env() -> Iterator[EnvFactory]:
    """``make_env(**guidance)``: the test world without RND, guidance enabled with the given settings."""
    made: list[ZeldaEnv] = []

    def make(rewards: RewardConfig | None = None, enabled: bool = True, **guidance: Any) -> ZeldaEnv:
        config = EnvConfig(max_steps=100_000, start_jitter=0, rewards=rewards or RewardConfig(rnd=0.0),
                           guidance=GuidanceConfig(enabled=enabled, **guidance))
        env = ZeldaEnv(config)
        env.reset(seed=0)
        made.append(env)
        return env

    yield make
    for env in made:
        env.close()


def llm_settings(server: OpenAIServer, **overrides: Any) -> dict[str, Any]:
    """Guidance settings for the openai backend on the test server (text requests on every step)."""
    values: dict[str, Any] = {"backend": "openai", "llm_url": server.url, "llm_model": server.model,
                              "text_probability": 1.0, "vision_probability": 0.0, "per_env_rate_per_s": 1000.0,
                              "global_rate_per_s": 1000.0, "burst": 1000, "timeout_s": 5.0}
    return {**values, **overrides}


def runtime(env: ZeldaEnv) -> GuidanceRuntime:
    assert env.guidance is not None
    return env.guidance
