"""The judges' real code path (``zelda_judge.backends.openai``) against a real inference server, llama.cpp's
``llama-server``, on the tiny model made by ``tests/support/tiny_llm.py``.

What a real server proves that the project's own OpenAI-protocol test server cannot: the requests the judges build
(``response_format`` of type ``json_schema``, strict; a ``seed`` per vote; ``n``; image parts) are accepted and
answered by an independent implementation of the dialect vLLM speaks, the server enforces the schema's shape, and
what it cannot enforce (a number's range) is caught here, never turned into a score.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import httpx
import pytest

from tests.llm.conftest import MODEL_NAMES, Recorder, judge_settings, seen_by
from tests.support.llama_server import LlamaServer
from tests.support.tiny_llm import TinyModel
from zelda_judge.backends.base import JudgeBackendError
from zelda_judge.backends.openai import OpenAIJudge, segment_seed
from zelda_judge.kinds import KINDS
from zelda_judge.metrics import JudgeMetrics
from zelda_judge.segment_io import Segment
from zelda_judge.votes import InvalidVote, json_schema, parse_vote
from zelda_rlaif.events import JudgeKind


def assert_follows_schema(content: str, kind: JudgeKind) -> None:
    """The answer is the vote schema's object: every property in order, nothing else, numbers in range."""
    answer = json.loads(content)
    schema = json_schema(kind)
    assert list(answer) == schema["required"], answer
    for name, spec in schema["properties"].items():
        if spec["type"] == "number":
            assert isinstance(answer[name], int | float) and spec["minimum"] <= answer[name] <= spec["maximum"]
        else:
            assert isinstance(answer[name], str) and len(answer[name]) <= spec["maxLength"]


def outcomes(metrics: JudgeMetrics, kind: JudgeKind) -> dict[str, int]:
    names = ("ok", "invalid_json", "invalid_scores", "truncated", "http_error", "rejected", "timeout")
    counted = {name: metrics.registry.get_sample_value("zelda_judge_llm_requests_total",
                                                       {"kind": kind.value, "outcome": name}) for name in names}
    return {name: int(value) for name, value in counted.items() if value}


@pytest.mark.parametrize("kind", list(JudgeKind), ids=lambda kind: kind.value)
async def test_every_kind_gets_three_schema_valid_votes_with_distinct_seeds(
        real_llm: LlamaServer, segments: list[Segment], recorder: Recorder, kind: JudgeKind) -> None:
    segment = seen_by(segments[0], kind)
    metrics = JudgeMetrics(kind.value)
    judge = OpenAIJudge(kind, judge_settings(real_llm, kind), metrics, client=recorder.client())
    try:
        judgement = await judge.judge(segment)
    finally:
        await judge.aclose()

    base = segment_seed(segment.manifest.run_id, segment.manifest.segment_id, kind)
    assert [vote.seed for vote in judgement.votes] == [base, base + 1, base + 2]
    assert outcomes(metrics, kind) == {"ok": 3}
    # The exact requests the judge built, each answered by the server: structured output and one seed per vote.
    assert len(recorder.exchanges) == 3 and all(exchange.status == 200 for exchange in recorder.exchanges)
    assert sorted(exchange.body["seed"] for exchange in recorder.exchanges) == [base, base + 1, base + 2]
    for exchange in recorder.exchanges:
        assert exchange.body["response_format"]["type"] == "json_schema"
        assert exchange.body["model"] == real_llm.model_name
        user = exchange.body["messages"][1]["content"]
        assert isinstance(user, list) == KINDS[kind].sees_frames  # frames go as image parts, answered too
        assert exchange.answer["usage"]["prompt_tokens"] > 100
    contents = recorder.contents()
    for content in contents:
        assert_follows_schema(content, kind)
    assert len(set(contents)) == 3, "three seeds gave fewer than three distinct answers"
    for dimension in KINDS[kind].dimension_names:
        assert 0.0 <= judgement.scores[dimension] <= 1.0
        assert {vote.scores[dimension] for vote in judgement.votes} >= {judgement.scores[dimension]}
    assert judgement.rationale in {vote.rationale for vote in judgement.votes}


async def test_a_redelivered_segment_gets_the_same_votes(real_llm: LlamaServer, segments: list[Segment]) -> None:
    """Seeds derive from the segment and kind: judging it again asks the same questions and gets the same answers."""
    settings = judge_settings(real_llm, JudgeKind.STATE)
    first, second = OpenAIJudge(JudgeKind.STATE, settings), OpenAIJudge(JudgeKind.STATE, settings)
    try:
        votes = [(await judge.judge(seen_by(segments[1], JudgeKind.STATE))).votes for judge in (first, second)]
    finally:
        await first.aclose()
        await second.aclose()
    assert votes[0] == votes[1]


async def test_n_votes_in_one_request(real_llm: LlamaServer, segments: list[Segment], recorder: Recorder) -> None:
    judge = OpenAIJudge(JudgeKind.STATE, judge_settings(real_llm, JudgeKind.STATE, vote_mode="n"),
                        client=recorder.client())
    try:
        judgement = await judge.judge(seen_by(segments[2], JudgeKind.STATE))
    finally:
        await judge.aclose()
    [exchange] = recorder.exchanges
    assert exchange.body["n"] == 3 and len(exchange.answer["choices"]) == 3
    assert len(judgement.votes) == 3 and len(set(recorder.contents())) == 3


async def test_out_of_range_votes_from_a_real_model_are_invalid_never_scores(
        unruly_llm: LlamaServer, segments: list[Segment], recorder: Recorder) -> None:
    """llama.cpp enforces the schema's shape but not a number's minimum/maximum: a model that scores out of 10
    gets its votes through. Each is an invalid vote, retried with a fresh seed, and the segment ends unjudged (the
    bus redelivers it, then dead-letters it): no score is made up."""
    metrics = JudgeMetrics("puzzle")
    judge = OpenAIJudge(JudgeKind.PUZZLE, judge_settings(unruly_llm, JudgeKind.PUZZLE, votes=1, llm_retries=2),
                        metrics, client=recorder.client())
    try:
        with pytest.raises(JudgeBackendError, match="got no valid vote") as failure:
            await judge.judge(seen_by(segments[3], JudgeKind.PUZZLE))
    finally:
        await judge.aclose()
    assert "less than or equal to 1" in str(failure.value)
    assert outcomes(metrics, JudgeKind.PUZZLE) == {"invalid_scores": 3}
    seeds = [exchange.body["seed"] for exchange in recorder.exchanges]
    assert len(set(seeds)) == 3  # every retry asked with a fresh seed
    for content in recorder.contents():
        answer = json.loads(content)  # well-formed JSON of the schema's shape ...
        assert set(answer) == {"puzzle", "rationale"} and answer["puzzle"] > 1  # ... out of range
        with pytest.raises(InvalidVote, match="out of range"):
            parse_vote(JudgeKind.PUZZLE, content)


async def test_answers_cut_at_max_tokens_are_invalid_never_scores(
        real_llm: LlamaServer, segments: list[Segment], recorder: Recorder) -> None:
    metrics = JudgeMetrics("state")
    settings = judge_settings(real_llm, JudgeKind.STATE, votes=1, llm_retries=1, llm_max_tokens=32)
    judge = OpenAIJudge(JudgeKind.STATE, settings, metrics, client=recorder.client())
    try:
        with pytest.raises(JudgeBackendError, match="cut at max_tokens"):
            await judge.judge(seen_by(segments[4], JudgeKind.STATE))
    finally:
        await judge.aclose()
    assert outcomes(metrics, JudgeKind.STATE) == {"truncated": 2}
    for exchange in recorder.exchanges:
        [choice] = exchange.answer["choices"]
        assert choice["finish_reason"] == "length"
        with pytest.raises(InvalidVote):  # the cut answer is not JSON: unparsable, whatever the check order
            parse_vote(JudgeKind.STATE, choice["message"]["content"])


async def test_the_probe_finds_every_name_the_server_answers_to(real_llm: LlamaServer,
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    """llama-server lists one id per model and the other names (``--alias``) under ``aliases``."""
    for name in (*MODEL_NAMES, "missing"):
        judge = OpenAIJudge(JudgeKind.STATE, judge_settings(real_llm, JudgeKind.STATE, llm_model=name))
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="zelda_judge.backends.openai"):
            await judge.probe()
        await judge.aclose()
        warned = [r.getMessage() for r in caplog.records if "the LLM server serves" in r.getMessage()]
        assert bool(warned) == (name == "missing"), (name, warned)


async def test_image_parts_are_read_by_the_projector(llama_server_bin: Path, tiny_model: TinyModel,
                                                     real_llm: LlamaServer, segments: list[Segment],
                                                     recorder: Recorder, tmp_path: Path) -> None:
    """Without a multimodal projector llama-server refuses image parts; with the tiny one every frame becomes image
    tokens of the prompt (4 per frame: a 32x32 image in 16x16 patches)."""
    segment = seen_by(segments[0], JudgeKind.VISION)
    assert len(segment.frames) == 2
    with LlamaServer(llama_server_bin, tiny_model.model, log=tmp_path / "text-only.log") as text_only:
        judge = OpenAIJudge(JudgeKind.VISION, judge_settings(text_only, JudgeKind.VISION, votes=1, llm_retries=0))
        try:
            with pytest.raises(JudgeBackendError, match=r"HTTP 500.*image input is not supported"):
                await judge.judge(segment)
        finally:
            await judge.aclose()

    judge = OpenAIJudge(JudgeKind.VISION, judge_settings(real_llm, JudgeKind.VISION, votes=1),
                        client=recorder.client())
    try:
        await judge.judge(segment)
    finally:
        await judge.aclose()
    [exchange] = recorder.exchanges
    body = exchange.body
    text_only_body = {**body, "messages": [body["messages"][0], {"role": "user", "content": [
        part for part in body["messages"][1]["content"] if part["type"] == "text"]}]}
    async with httpx.AsyncClient(timeout=60) as client:
        answer = (await client.post(real_llm.url + "/chat/completions", json=text_only_body)).json()
    images = len(body["messages"][1]["content"]) - 1
    assert images == 2
    assert exchange.answer["usage"]["prompt_tokens"] - answer["usage"]["prompt_tokens"] == images * 4


async def test_a_server_slower_than_the_timeout_leaves_the_segment_unjudged(real_llm: LlamaServer,
                                                                            segments: list[Segment]) -> None:
    metrics = JudgeMetrics("state")
    settings = judge_settings(real_llm, JudgeKind.STATE, votes=1, llm_retries=1, llm_timeout_s=0.005)
    judge = OpenAIJudge(JudgeKind.STATE, settings, metrics)
    try:
        with pytest.raises(JudgeBackendError, match="no answer within"):
            await judge.judge(seen_by(segments[0], JudgeKind.STATE))
    finally:
        await judge.aclose()
    assert outcomes(metrics, JudgeKind.STATE) == {"timeout": 2}
