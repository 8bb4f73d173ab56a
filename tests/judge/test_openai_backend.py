"""The openai backend against a real HTTP server speaking the chat-completions protocol."""

from __future__ import annotations

import json
import statistics
from typing import Any

import pytest

from tests.support.openai_server import FAULTS, Fault, OpenAIServer
from tests.support.segments import build_steps, frame_png
from zelda_judge.backends import JudgeBackendError
from zelda_judge.backends.openai import OpenAIJudge, segment_seed
from zelda_judge.metrics import JudgeMetrics
from zelda_judge.prompts import estimate_tokens
from zelda_judge.segment_io import Segment, select_key_frames
from zelda_judge.settings import JudgeSettings
from zelda_judge.summary import summarize
from zelda_rlaif.events import JudgeKind, SegmentExported


def settings_for(llm: OpenAIServer, kind: JudgeKind = JudgeKind.STATE, **overrides: Any) -> JudgeSettings:
    values: dict[str, Any] = {"kind": kind, "backend": "openai", "llm_url": llm.url, "llm_model": llm.model,
                              "llm_timeout_s": 0.3, "llm_retries": 2, "llm_backoff_s": 0.01,
                              "llm_backoff_max_s": 0.02}
    values.update(overrides)
    return JudgeSettings(**values)


def segment(steps: int = 120, scenario: str = "explore", frames: int = 0) -> Segment:
    records = build_steps(steps=steps, scenario=scenario, seed=3)  # type: ignore[arg-type]
    summary = summarize(records)
    frame_steps = list(range(0, steps, 20))
    manifest = SegmentExported(run_id="run-x", epoch=2, episode_id="ep", segment_id="seg-7", profile="testworld",
                               step_start=0, step_end=steps, num_steps=steps, frame_every=20, frame_steps=frame_steps,
                               total_reward=0.0, reward_components={}, rooms_visited=[], reward_model_epoch=1)
    chosen = select_key_frames(frame_steps, summary, frames)
    return Segment(manifest, records, summary, {s: frame_png(records[s].state) for s in chosen})


async def judge(llm: OpenAIServer, seg: Segment | None = None, **overrides: Any) -> Any:
    settings = settings_for(llm, **overrides)
    backend = OpenAIJudge(settings.judge_kind, settings, JudgeMetrics(settings.judge_kind.value))
    try:
        return await backend.judge(seg or segment())
    finally:
        await backend.aclose()


async def test_three_votes_with_distinct_seeds_and_structured_output(llm: OpenAIServer) -> None:
    result = await judge(llm)
    requests = llm.chat_requests()
    assert len(requests) == 3
    base = segment_seed("run-x", "seg-7", JudgeKind.STATE)
    assert sorted(r.body["seed"] for r in requests) == [base, base + 1, base + 2]
    for request in requests:
        body = request.body
        assert body["model"] == llm.model and body["temperature"] > 0 and "n" not in body
        assert "guided_json" not in body and "guided_json" not in body.get("extra_body", {})
        fmt = body["response_format"]
        assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
        assert set(fmt["json_schema"]["schema"]["required"]) == {"progress", "dialog", "efficiency", "rationale"}
        assert estimate_tokens(json.dumps(body["messages"])) < 3000
    assert len(result.votes) == 3 and set(result.scores) == {"progress", "dialog", "efficiency"}


async def test_verdict_is_the_median_of_the_votes(llm: OpenAIServer) -> None:
    answers = {0: (0.1, 0.9), 1: (0.5, 0.8), 2: (0.7, 0.2)}
    base = segment_seed("run-x", "seg-7", JudgeKind.PUZZLE)

    def responder(body: dict[str, Any], index: int, seed: int | None) -> str:
        assert seed is not None
        puzzle, _ = answers[seed - base]
        return json.dumps({"puzzle": puzzle, "rationale": f"vote {seed - base}"})

    llm.responder = responder
    result = await judge(llm, kind=JudgeKind.PUZZLE)
    assert result.scores == {"puzzle": statistics.median([0.1, 0.5, 0.7])}
    assert result.agreement == pytest.approx(1 - 0.6)
    assert result.rationale == "vote 1"
    # Every vote is kept (the verdict record stores them for replays), in the order they were asked for.
    assert [(v.scores, v.rationale, v.seed) for v in result.votes] == [
        ({"puzzle": answers[i][0]}, f"vote {i}", base + i) for i in range(3)]


async def test_n_mode_asks_once_for_n_choices(llm: OpenAIServer) -> None:
    result = await judge(llm, vote_mode="n", votes=5)
    (request,) = llm.chat_requests()
    assert request.body["n"] == 5 and isinstance(request.body["seed"], int)
    assert len(result.votes) == 5


@pytest.mark.parametrize("fault", FAULTS)
async def test_transient_faults_are_retried(llm: OpenAIServer, fault: Fault) -> None:
    llm.fail_next(fault, times=2)
    result = await judge(llm, votes=1, llm_retries=2)
    requests = llm.chat_requests()
    assert [r.fault for r in requests] == [fault, fault, None]
    assert len({r.body["seed"] for r in requests}) == 3  # a retry asks with a fresh seed
    assert 0 <= result.scores["progress"] <= 1


@pytest.mark.parametrize("fault", FAULTS)
async def test_persistent_garbage_never_becomes_a_score(llm: OpenAIServer, fault: Fault) -> None:
    llm.fail_always(fault)
    with pytest.raises(JudgeBackendError, match="no valid vote") as caught:
        await judge(llm, votes=1, llm_retries=2)
    assert len(llm.chat_requests()) == 3
    assert "redelivered" in str(caught.value)


async def test_one_failing_vote_fails_the_verdict(llm: OpenAIServer) -> None:
    # Two good votes and one that stays garbage: no verdict from a partial vote.
    base = segment_seed("run-x", "seg-7", JudgeKind.VISION)

    def responder(body: dict[str, Any], index: int, seed: int | None) -> str:
        assert seed is not None
        return "no idea" if (seed - base) % 3 == 2 else json.dumps({"novelty": 0.5, "rationale": "ok"})

    llm.responder = responder
    with pytest.raises(JudgeBackendError, match="prose"):
        await judge(llm, kind=JudgeKind.VISION, llm_retries=1)


async def test_rejected_request_is_not_retried_and_says_what_to_check() -> None:
    with OpenAIServer(api_key="right-key-123") as llm:
        with pytest.raises(JudgeBackendError, match=r"HTTP 401.*ZELDA_JUDGE_LLM_API_KEY"):
            await judge(llm, votes=1, llm_api_key="wrong-key-456")
        assert len(llm.chat_requests()) == 1
        result = await judge(llm, votes=1, llm_api_key="right-key-123")
        assert llm.chat_requests()[-1].headers["Authorization"] == "Bearer right-key-123"
        assert len(result.votes) == 1


async def test_vision_judge_sends_key_frames_as_data_urls(llm: OpenAIServer) -> None:
    result = await judge(llm, segment(frames=3), kind=JudgeKind.VISION, key_frames=3)
    for request in llm.chat_requests():
        parts = request.body["messages"][1]["content"]
        images = [p["image_url"]["url"] for p in parts if p["type"] == "image_url"]
        assert len(images) == 3 and all(url.startswith("data:image/png;base64,") for url in images)
        assert parts[0]["type"] == "text" and "Attached frames" in parts[0]["text"]
    assert set(result.scores) == {"novelty"}


async def test_requests_in_flight_are_capped(llm: OpenAIServer) -> None:
    import asyncio

    llm.latency_s = 0.1
    settings = settings_for(llm, votes=3, max_in_flight=2)
    backend = OpenAIJudge(JudgeKind.STATE, settings)
    try:
        await asyncio.gather(*(backend.judge(segment()) for _ in range(3)))
    finally:
        await backend.aclose()
    assert len(llm.chat_requests()) == 9
    assert llm.peak_in_flight == 2


@pytest.mark.parametrize("score", [True, "0.5", None], ids=["bool", "string", "missing"])
async def test_a_vote_that_is_not_a_number_is_retried_then_never_scored(llm: OpenAIServer, score: Any) -> None:
    def responder(body: dict[str, Any], index: int, seed: int | None) -> str:
        vote: dict[str, Any] = {"progress": 0.5, "dialog": 0.5, "efficiency": 0.5, "rationale": "looks fine"}
        if score is None:
            del vote["progress"]
        else:
            vote["progress"] = score
        return json.dumps(vote)

    llm.responder = responder
    metrics = JudgeMetrics("state")
    settings = settings_for(llm, votes=1, llm_retries=2)
    backend = OpenAIJudge(settings.judge_kind, settings, metrics)
    try:
        with pytest.raises(JudgeBackendError, match="scores missing, not numbers or out of range"):
            await backend.judge(segment())
    finally:
        await backend.aclose()
    assert len(llm.chat_requests()) == 3  # retried, each time with a fresh seed, and never became a score
    assert 'zelda_judge_llm_requests_total{kind="state",outcome="invalid_scores"} 3.0' in metrics.render().decode()
