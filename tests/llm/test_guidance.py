"""Online guidance's real code path against llama.cpp's ``llama-server`` on the tiny model: the client's requests
(structured output with an ``enum`` of buttons, a seed per request, the screen as an image part) are answered with
suggestions the env takes in, text and vision alike."""

from __future__ import annotations

from typing import Any

import pytest

from tests.llm.conftest import Recorder
from tests.support.llama_server import LlamaServer
from zelda_rlaif.game.actions import ACTION_NAMES, Action
from zelda_rlaif.game.guidance.client import GuidanceClient
from zelda_rlaif.game.guidance.config import GuidanceConfig


def guidance(server: LlamaServer, **overrides: Any) -> GuidanceConfig:
    values: dict[str, Any] = {"enabled": True, "backend": "openai", "llm_url": server.url,
                              "llm_model": server.model_name, "text_probability": 1.0, "vision_probability": 0.0,
                              "per_env_rate_per_s": 1000.0, "global_rate_per_s": 1000.0, "burst": 1000,
                              "timeout_s": 30.0, "max_delay_steps": 100_000}
    return GuidanceConfig(**{**values, **overrides})


async def test_the_client_gets_a_button_and_a_reason_per_seed(real_llm: LlamaServer, recorder: Recorder) -> None:
    client = GuidanceClient(guidance(real_llm), api_key=None)
    client._client = recorder.client()  # the client's own pool, with the recorder's hook
    summary = ("Room 0x11 (group 0) at x=80, y=72, facing down. Health 12/12. Neighbours: up: room 0x01 (not "
               "visited yet), left: room 0x10 (visited 2 times). No text box; menu closed.")
    try:
        answers = [await client.ask("text", summary, None, seed) for seed in range(6)]
    finally:
        await client.aclose()
    assert all(0 <= action < len(ACTION_NAMES) and reason for action, reason in answers)
    assert len(set(answers)) >= 3, f"six seeds gave {len(set(answers))} distinct suggestions"
    bodies = [exchange.body for exchange in recorder.exchanges]
    assert [body["seed"] for body in bodies] == list(range(6))
    assert all(body["response_format"]["json_schema"]["schema"]["properties"]["action"]["enum"] == list(ACTION_NAMES)
               for body in bodies)


@pytest.mark.parametrize("source", ["text", "vision"])
def test_the_env_takes_in_suggestions_from_the_real_server(real_llm: LlamaServer, make_env: Any, source: str) -> None:
    vision = source == "vision"
    env = make_env(**guidance(real_llm, text_probability=0.0 if vision else 1.0,
                              vision_probability=float(vision)).model_dump())
    guide = env.guidance
    assert guide is not None
    for _ in range(3):
        env.step(Action.NOP)
        assert guide.settle(timeout_s=60.0)
    env.step(Action.NOP)  # takes in the last answer
    assert guide.counts.failures == 0, guide.counts
    assert guide.counts.answers >= 3
    assert guide.live is not None and guide.live.backend == "openai" and guide.live.source == source
    assert guide.live.action_name in ACTION_NAMES and guide.live.reason

