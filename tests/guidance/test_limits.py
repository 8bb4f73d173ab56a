"""Rate limits: the token bucket, each env's share of the global budget, the in-flight cap, and settings."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from tests.conftest import EnvFactory
from tests.guidance.conftest import llm_settings, runtime
from tests.support.openai_server import OpenAIServer
from zelda_rlaif.game.actions import Action
from zelda_rlaif.game.guidance.config import GuidanceConfig
from zelda_rlaif.game.guidance.limits import TokenBucket


class ManualClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_bucket_allows_a_burst_then_the_rate() -> None:
    clock = ManualClock()
    bucket = TokenBucket(rate_per_s=2.0, burst=3, clock=clock)
    assert [bucket.try_take() for _ in range(4)] == [True, True, True, False]
    clock.now += 0.4
    assert not bucket.try_take()  # 0.8 of a token
    clock.now += 0.1
    assert bucket.try_take() and not bucket.try_take()
    clock.now += 100.0  # a long pause refills only up to the burst
    assert sum(bucket.try_take() for _ in range(10)) == 3


def test_the_bucket_never_exceeds_burst_plus_rate_times_time() -> None:
    clock = ManualClock()
    bucket = TokenBucket(rate_per_s=5.0, burst=2, clock=clock)
    taken = 0
    for _ in range(20_000):  # 200 s of attempts every 10 ms
        clock.now += 0.01
        taken += bucket.try_take()
    assert taken <= 2 + 5.0 * 200.0
    assert taken >= 5.0 * 200.0 - 1


def test_each_env_takes_its_share_of_the_global_budget() -> None:
    assert GuidanceConfig(per_env_rate_per_s=0.5, global_rate_per_s=8.0, num_envs=4).rate_per_s == 0.5
    assert GuidanceConfig(per_env_rate_per_s=0.5, global_rate_per_s=8.0, num_envs=64).rate_per_s == 0.125
    # The shares of all envs add up to at most the global budget.
    config = GuidanceConfig(per_env_rate_per_s=10.0, global_rate_per_s=6.0, num_envs=9)
    assert config.rate_per_s * config.num_envs == pytest.approx(6.0)


def test_the_env_sends_no_more_than_its_bucket_allows(make_env: EnvFactory, llm: OpenAIServer) -> None:
    env = make_env(**llm_settings(llm, burst=3, per_env_rate_per_s=1e-9, max_in_flight=16))
    guide = runtime(env)
    for step in range(300):
        env.step(step % 5)
    assert guide.settle()
    assert guide.counts.requests == 3 and guide.counts.limited == 297
    assert len(llm.chat_requests()) == 3


def test_the_in_flight_cap_holds_while_the_server_hangs(make_env: EnvFactory, llm: OpenAIServer) -> None:
    llm.fail_always("timeout")  # hold every request
    env = make_env(**llm_settings(llm, max_in_flight=2))
    guide = runtime(env)
    for _ in range(200):
        env.step(Action.NOP)
    assert guide.counts.requests == 2 and guide.in_flight == 2 and guide.counts.limited == 198
    assert llm.peak_in_flight <= 2


def test_the_rules_backend_is_not_rate_limited(make_env: EnvFactory) -> None:
    env = make_env(text_probability=1.0, burst=1, per_env_rate_per_s=1e-9)
    for _ in range(50):
        env.step(Action.NOP)
    assert runtime(env).counts.requests == 50 and runtime(env).counts.limited == 0


@pytest.mark.parametrize(("values", "message"), [
    ({"enabled": True, "backend": "openai", "llm_model": "m"}, "needs llm_url"),
    ({"enabled": True, "backend": "openai", "llm_url": "http://llm:8000/v1"}, "needs llm_model"),
    ({"llm_url": "vllm:8000"}, r"not an http\(s\) URL"),
    ({"backend": "openai", "text_probability": 0.6, "vision_probability": 0.6}, "cannot exceed 1"),
    ({"expiry_steps": 0}, "greater than or equal to 1"),
])
def test_bad_settings_say_what_to_fix(values: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        GuidanceConfig.model_validate(values)


def test_the_api_base_is_normalised() -> None:
    config = GuidanceConfig(llm_url="http://vllm:8000/v1/chat/completions/")
    assert config.llm_url == "http://vllm:8000/v1"
