"""The alignment bonus: added exactly on the steps whose action matches the live suggestion, never after it
expires, never across episodes; agreements are counted the same way."""

from __future__ import annotations

import pytest

from tests.conftest import EnvFactory
from tests.guidance.conftest import Answers, llm_settings, runtime
from tests.support.openai_server import OpenAIServer
from zelda_rlaif.game.actions import Action
from zelda_rlaif.game.rewards.config import RewardConfig
from zelda_rlaif.game.rewards.guidance import GuidanceBonus

# One request in the whole test: a bucket of one token that never refills.
ONE_REQUEST = {"burst": 1, "per_env_rate_per_s": 1e-9, "global_rate_per_s": 1e-9}


@pytest.mark.parametrize(("source", "probabilities"), [("text", {"text_probability": 1.0}),
                                                        ("vision", {"vision_probability": 1.0,
                                                                    "text_probability": 0.0})])
def test_the_bonus_is_paid_exactly_on_matching_steps_until_expiry(
    make_env: EnvFactory, llm: OpenAIServer, answers: Answers, source: str, probabilities: dict[str, float]
) -> None:
    answers.action = "right"
    env = make_env(**llm_settings(llm, **{**ONE_REQUEST, **probabilities}, expiry_steps=5))
    guide = runtime(env)
    _, _, _, _, info = env.step(Action.RIGHT)  # sends the request; nothing is live yet, so no bonus
    assert not any(name.startswith("guidance") for name in info["components"])
    assert guide.settle()

    # The suggestion arrives at the start of the next step and applies to 5 steps; then it has expired.
    actions = [Action.RIGHT, Action.LEFT, Action.RIGHT, Action.NOP, Action.RIGHT, Action.RIGHT, Action.RIGHT]
    paid = [True, False, True, False, True, False, False]
    weight = getattr(RewardConfig(), f"guidance_{source}")
    for action, expect_bonus in zip(actions, paid, strict=True):
        _, reward, _, _, info = env.step(action)
        components = info["components"]
        bonuses = {name for name in components if name.startswith("guidance")}
        assert bonuses == ({f"guidance_{source}"} if expect_bonus else set())
        if expect_bonus:
            assert components[f"guidance_{source}"] == weight
        assert reward == pytest.approx(sum(components.values()))
    assert guide.live is None
    counts = guide.counts
    assert (counts.requests, counts.answers, counts.guided_steps, counts.agreements) == (1, 1, 5, 3)
    assert counts.agreement_rate == pytest.approx(3 / 5)


def test_weights_come_from_the_reward_config(make_env: EnvFactory, llm: OpenAIServer) -> None:
    env = make_env(rewards=RewardConfig(rnd=0.0, guidance_text=0.5), **llm_settings(llm, **ONE_REQUEST))
    env.step(Action.NOP)
    assert runtime(env).settle()
    _, _, _, _, info = env.step(Action.RIGHT)
    assert info["components"]["guidance_text"] == 0.5


def test_a_new_episode_drops_the_live_suggestion(make_env: EnvFactory, llm: OpenAIServer) -> None:
    env = make_env(**llm_settings(llm, **ONE_REQUEST, expiry_steps=50))
    guide = runtime(env)
    env.step(Action.NOP)
    assert guide.settle()
    env.step(Action.RIGHT)
    assert guide.live is not None
    env.reset()
    assert guide.live is None
    _, _, _, _, info = env.step(Action.RIGHT)
    assert "guidance_text" not in info["components"]


def test_rules_guidance_is_deterministic_for_a_seed(make_env: EnvFactory) -> None:
    def play() -> list[tuple[int, str, float]]:
        env = make_env(text_probability=0.1)
        trace = []
        for step in range(400):
            live = runtime(env).live
            action = live.action if live is not None and step % 3 else step % 5
            _, reward, _, _, _ = env.step(action)
            if live is not None:
                trace.append((step, live.reason, reward))
        env.close()
        return trace

    first, second = play(), play()
    assert first == second and len(first) > 100


def test_guidance_off_changes_nothing(make_env: EnvFactory) -> None:
    env = make_env(enabled=False)
    assert env.guidance is None
    assert not any(isinstance(component, GuidanceBonus) for component in env.components)
