"""The OpenAI-compatible test server itself: other suites rely on it behaving like a real server."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.support.openai_server import OpenAIServer

SCHEMA = {"type": "object", "properties": {"score": {"type": "number", "minimum": 0.2, "maximum": 0.4},
                                           "why": {"type": "string", "maxLength": 10}},
          "required": ["score", "why"], "additionalProperties": False}


def ask(llm: OpenAIServer, **body: Any) -> httpx.Response:
    payload = {"model": llm.model, "messages": [{"role": "user", "content": "rate this"}], **body}
    return httpx.post(f"{llm.url}/chat/completions", json=payload, timeout=5)


def contents(response: httpx.Response) -> list[str]:
    return [c["message"]["content"] for c in response.json()["choices"]]


def structured(**extra: Any) -> dict[str, Any]:
    return {"response_format": {"type": "json_schema", "json_schema": {"name": "v", "schema": SCHEMA,
                                                                        "strict": True}}, **extra}


def test_answers_follow_the_schema_and_honour_n(llm: OpenAIServer) -> None:
    response = ask(llm, n=3, seed=11, temperature=0.8, **structured())
    answers = [json.loads(c) for c in contents(response)]
    assert len(answers) == 3 and len({a["score"] for a in answers}) == 3
    assert all(0.2 <= a["score"] <= 0.4 and len(a["why"]) <= 10 and set(a) == {"score", "why"} for a in answers)
    assert response.json()["object"] == "chat.completion" and response.json()["usage"]["prompt_tokens"] > 0


def test_seed_reproduces_and_temperature_zero_ignores_it(llm: OpenAIServer) -> None:
    assert contents(ask(llm, seed=5, temperature=1, **structured())) == contents(ask(llm, seed=5, temperature=1,
                                                                                     **structured()))
    assert contents(ask(llm, seed=5, temperature=1, **structured())) != contents(ask(llm, seed=6, temperature=1,
                                                                                     **structured()))
    greedy = [contents(ask(llm, seed=s, temperature=0, **structured()))[0] for s in (1, 2, 3)]
    assert len(set(greedy)) == 1


def test_without_structured_output_it_answers_prose(llm: OpenAIServer) -> None:
    (text,) = contents(ask(llm, seed=1))
    with pytest.raises(ValueError):
        json.loads(text)


def test_faults_and_recorded_requests(llm: OpenAIServer) -> None:
    llm.fail_next("http_500")
    llm.fail_next("out_of_range")
    assert ask(llm, seed=1, **structured()).status_code == 500
    assert json.loads(contents(ask(llm, seed=1, **structured()))[0])["score"] > 0.4
    llm.fail_always("broken_json")
    with pytest.raises(ValueError):
        json.loads(contents(ask(llm, seed=1, **structured()))[0])
    llm.heal()
    assert 0.2 <= json.loads(contents(ask(llm, seed=1, **structured()))[0])["score"] <= 0.4
    assert [r.fault for r in llm.chat_requests()] == ["http_500", "out_of_range", "broken_json", None]
    assert llm.chat_requests()[0].body["seed"] == 1
    with pytest.raises(ValueError, match="unknown fault"):
        llm.fail_next("teapot")  # type: ignore[arg-type]


def test_timeout_fault_holds_the_request(llm: OpenAIServer) -> None:
    llm.fail_next("timeout")
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(f"{llm.url}/chat/completions", json={"model": "m", "messages": []}, timeout=0.3)
    assert ask(llm, seed=2, **structured()).status_code == 200


def test_models_and_api_key() -> None:
    with OpenAIServer(api_key="secret-123", model="judge-x") as llm:
        assert httpx.get(f"{llm.url}/models").status_code == 401
        listed = httpx.get(f"{llm.url}/models", headers={"Authorization": "Bearer secret-123"}).json()
        assert [m["id"] for m in listed["data"]] == ["judge-x"]
