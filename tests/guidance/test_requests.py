"""LLM requests through the real env and the OpenAI-protocol test server: what they carry, that env.step
never waits on them, and that every failure is counted without stopping play."""

from __future__ import annotations

import base64
import io

import numpy as np
import pytest
from PIL import Image

from tests.conftest import EnvFactory
from tests.guidance.conftest import Answers, llm_settings, runtime
from tests.support.openai_server import Fault, OpenAIServer
from zelda_rlaif.game.actions import ACTION_NAMES, Action
from zelda_rlaif.game.env import ZeldaEnv
from zelda_rlaif.game.guidance.planner import Plan, RulesPlanner
from zelda_rlaif.game.guidance.runtime import GuidanceRuntime
from zelda_rlaif.game.guidance.snapshot import Snapshot


def test_a_text_request_carries_the_state_summary_and_its_answer_becomes_the_live_suggestion(
    make_env: EnvFactory, llm: OpenAIServer, answers: Answers
) -> None:
    env = make_env(**llm_settings(llm))
    guide = runtime(env)
    env.step(Action.NOP)
    assert guide.counts.requests == 1 and guide.live is None  # asked; nothing has arrived yet
    assert not env.frame_available  # a text request needs no frame: nothing was rendered
    assert guide.settle()

    [request] = llm.chat_requests()
    body = request.body
    assert body["model"] == llm.model
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"]["properties"]["action"]["enum"] == list(ACTION_NAMES)
    summary = body["messages"][-1]["content"]
    assert isinstance(summary, str)
    assert "room 0x11" in summary and "x=80, y=72" in summary and "facing down" in summary
    assert "up: room 0x01 (not visited yet)" in summary
    assert "Health 12/12" in summary

    env.step(Action.NOP)
    assert guide.live is not None
    assert (guide.live.action, guide.live.source, guide.live.backend) == (Action.RIGHT, "text", "openai")
    assert guide.live.reason == "the test server says right"
    assert guide.counts.answers == 1 and guide.counts.failures == 0


def test_an_llm_told_to_follow_the_walkthrough_reads_its_next_objective_in_the_summary(
    make_env: EnvFactory, llm: OpenAIServer
) -> None:
    env = make_env(**llm_settings(llm), follow_walkthrough=True)
    guide = runtime(env)
    env.step(Action.NOP)
    assert guide.settle()
    [request] = llm.chat_requests()
    summary = request.body["messages"][-1]["content"]
    assert "Next objective of the game's walkthrough: take key in room 0x01; walk to (" in summary


def test_a_vision_request_carries_the_screen_of_its_step_as_a_png_data_url(
    make_env: EnvFactory, llm: OpenAIServer
) -> None:
    env = make_env(**llm_settings(llm, text_probability=0.0, vision_probability=1.0, vision_llm_model="test-vl"))
    guide = runtime(env)
    env.step(Action.UP)
    # The step that sends a vision request renders its frame; render_next was never set.
    assert env.frame_available
    screen = env.screen()
    assert guide.settle()

    [request] = llm.chat_requests()
    assert request.body["model"] == "test-vl"
    parts = request.body["messages"][-1]["content"]
    [image] = [p for p in parts if p["type"] == "image_url"]
    prefix = "data:image/png;base64,"
    assert image["image_url"]["url"].startswith(prefix)
    png = base64.b64decode(image["image_url"]["url"][len(prefix):])
    sent = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))
    assert sent.shape == (144, 160, 3)
    assert np.array_equal(sent, screen)
    [text] = [p for p in parts if p["type"] == "text"]
    assert "room 0x11" in text["text"]

    llm.fail_always("timeout")  # the next request hangs: the steps after it send nothing and render nothing
    env.step(Action.NOP)  # the answer arrives and this step sends the next vision request
    assert guide.live is not None and guide.live.source == "vision"
    assert env.frame_available and guide.in_flight == 1
    for _ in range(5):
        env.step(Action.NOP)
        assert not env.frame_available
    assert guide.counts.requests == 2 and guide.counts.limited == 5


def test_a_slow_answer_never_slows_the_env(make_env: EnvFactory, llm: OpenAIServer) -> None:
    llm.latency_s = 2.0
    env = make_env(**llm_settings(llm, max_delay_steps=10**9))
    guide = runtime(env)
    env.step(Action.NOP)
    assert guide.in_flight == 1
    steps_while_pending = 0
    while guide.counts.answers == 0 and steps_while_pending < 1_000_000:
        env.step(steps_while_pending % 5)
        steps_while_pending += 1
    # Hundreds of steps ran while the one request was pending (a blocking env would manage one).
    assert steps_while_pending >= 300
    # max_in_flight=1: every draw while the request was pending was refused; the step that took in the answer
    # sent the second request.
    assert guide.counts.limited == steps_while_pending - 1
    assert guide.counts.requests == 2
    assert guide.live is not None and guide.live.action == Action.RIGHT


@pytest.mark.parametrize("fault", ["http_500", "prose", "broken_json", "timeout"])
def test_failed_requests_are_counted_and_play_goes_on(make_env: EnvFactory, llm: OpenAIServer,
                                                      fault: Fault) -> None:
    llm.fail_always(fault)
    env = make_env(**llm_settings(llm, timeout_s=0.3, max_in_flight=1))
    guide = runtime(env)
    for _ in range(3):
        env.step(Action.NOP)
        assert guide.settle()
    env.step(Action.NOP)  # takes in the third failure (and sends a fourth request)
    assert (guide.counts.failures, guide.counts.requests) == (3, 4)
    assert guide.counts.answers == 0 and guide.live is None
    expected = {"http_500": "HTTP 500", "prose": "instead of JSON", "broken_json": "instead of JSON",
                "timeout": "no answer"}
    assert guide.last_failure is not None and expected[fault] in guide.last_failure
    _, _, _, _, info = env.step(Action.NOP)
    assert not any(name.startswith("guidance") for name in info["components"])


def test_an_answer_outside_the_schema_is_a_failure_not_a_suggestion(make_env: EnvFactory, llm: OpenAIServer,
                                                                   answers: Answers) -> None:
    answers.action = "jump"
    env = make_env(**llm_settings(llm))
    guide = runtime(env)
    env.step(Action.NOP)
    assert guide.settle()
    env.step(Action.NOP)
    assert guide.counts.failures == 1 and guide.live is None
    assert guide.last_failure is not None and "'jump' is not one of" in guide.last_failure


def test_an_unreachable_server_and_a_refused_key_are_failures(make_env: EnvFactory, llm: OpenAIServer,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    guide = ask_once(make_env(**llm_settings(llm, llm_url="http://127.0.0.1:9/v1")))
    assert guide.counts.failures == 1 and guide.last_failure is not None and "unreachable" in guide.last_failure

    llm.api_key = "test-guidance-key"
    refused = ask_once(make_env(**llm_settings(llm)))
    assert refused.counts.failures == 1 and refused.last_failure is not None
    assert "HTTP 401" in refused.last_failure and "ZELDA_GUIDANCE_LLM_API_KEY" in refused.last_failure

    monkeypatch.setenv("ZELDA_GUIDANCE_LLM_API_KEY", "test-guidance-key")
    assert ask_once(make_env(**llm_settings(llm))).counts.answers == 1
    assert llm.chat_requests()[-1].headers["Authorization"] == "Bearer test-guidance-key"


def ask_once(env: ZeldaEnv) -> GuidanceRuntime:
    """One request, its outcome taken in on the next step."""
    guide = runtime(env)
    env.step(Action.NOP)
    assert guide.settle()
    env.step(Action.NOP)
    return guide


def test_answers_that_arrive_too_late_or_in_another_episode_are_stale(make_env: EnvFactory,
                                                                      llm: OpenAIServer) -> None:
    env = make_env(**llm_settings(llm))
    guide = runtime(env)
    env.step(Action.NOP)
    env.reset()  # a new episode: the pending answer describes a situation that is gone
    assert guide.settle()
    env.step(Action.NOP)
    assert guide.counts.stale == 1 and guide.counts.answers == 0 and guide.live is None

    llm.latency_s = 0.5
    late = make_env(**llm_settings(llm, max_delay_steps=10))
    late_guide = runtime(late)
    late.step(Action.NOP)
    steps = 0
    while late_guide.counts.stale + late_guide.counts.answers == 0 and steps < 1_000_000:
        late.step(Action.NOP)
        steps += 1
    assert late_guide.counts.stale == 1 and late_guide.live is None


def test_an_answer_about_a_room_the_player_has_left_is_stale(make_env: EnvFactory, llm: OpenAIServer) -> None:
    llm.latency_s = 0.5
    env = make_env(**llm_settings(llm, max_delay_steps=10**9))
    guide = runtime(env)
    env.step(Action.NOP)  # asks about the start room
    start = env._info({})["state"]["room"]
    while env._info({})["state"]["room"] == start:  # ~15 steps: far quicker than the answer
        env.step(Action.UP)
    assert guide.counts.stale + guide.counts.answers == 0
    assert guide.settle()
    env.step(Action.NOP)
    assert guide.counts.stale == 1 and guide.counts.answers == 0 and guide.live is None


def test_a_failing_rules_planner_is_a_counted_failure_not_a_crash(make_env: EnvFactory) -> None:
    class BrokenPlanner(RulesPlanner):
        def suggest(self, s: Snapshot) -> Plan:
            raise KeyError("direction")

    env = make_env(text_probability=1.0)
    guide = runtime(env)
    guide.planner = BrokenPlanner()
    for _ in range(5):
        env.step(Action.NOP)
    assert guide.counts.failures == 4 and guide.counts.answers == 0 and guide.live is None
    assert guide.last_failure is not None and "the rules planner failed" in guide.last_failure
