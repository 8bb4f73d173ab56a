"""Retry-After on HTTP 429/503: the openai backend waits what the server asks, up to the configured cap."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from tests.judge.test_openai_backend import judge
from tests.support.openai_server import OpenAIServer
from zelda_judge.backends.openai import retry_after_s

NOW = datetime(2025, 3, 1, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(("header", "seconds"), [
    ("2", 2.0),
    (" 120 ", 120.0),
    ("1.5", 1.5),
    (format_datetime(NOW + timedelta(seconds=30), usegmt=True), 30.0),
    ("Sat, 01 Mar 2025 12:01:00 GMT", 60.0),
    (format_datetime(NOW - timedelta(hours=1), usegmt=True), 0.0),  # a date gone by: go ahead now
    (None, None),
    ("soon", None),
    ("-3", None),
    ("", None),
])
def test_retry_after_reads_seconds_and_http_dates(header: str | None, seconds: float | None) -> None:
    assert retry_after_s(header, NOW) == seconds


async def test_the_retry_waits_what_a_429_asks(llm: OpenAIServer) -> None:
    llm.retry_after = "1"
    llm.fail_next("http_429")
    result = await judge(llm, votes=1, llm_retries=2, llm_retry_after_max_s=30.0)
    first, second = llm.chat_requests()
    assert (first.fault, second.fault) == ("http_429", None)
    # The back-off alone is ~10 ms here: the gap the server saw is the second it asked for.
    assert second.received_at - first.received_at >= 0.99
    assert 0 <= result.scores["progress"] <= 1


async def test_a_retry_after_beyond_the_cap_waits_the_cap(llm: OpenAIServer, caplog: pytest.LogCaptureFixture) -> None:
    llm.retry_after = format_datetime(datetime.now(UTC) + timedelta(hours=1), usegmt=True)
    llm.fail_next("http_503")
    with caplog.at_level(logging.WARNING, logger="zelda_judge.backends.openai"):
        await judge(llm, votes=1, llm_retries=2, llm_retry_after_max_s=0.25)
    first, second = llm.chat_requests()
    assert (first.fault, second.fault) == ("http_503", None)
    assert second.received_at - first.received_at >= 0.24
    (capped,) = [r.getMessage() for r in caplog.records if "asked to wait" in r.getMessage()]
    assert "waiting 0.25s (ZELDA_JUDGE_LLM_RETRY_AFTER_MAX_S)" in capped
    assert any("retrying in 0.25s" in r.getMessage() for r in caplog.records)


async def test_without_retry_after_the_usual_back_off_applies(llm: OpenAIServer,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    llm.fail_next("http_429")
    with caplog.at_level(logging.WARNING, logger="zelda_judge.backends.openai"):
        await judge(llm, votes=1, llm_retries=2, llm_retry_after_max_s=30.0)
    assert [r.fault for r in llm.chat_requests()] == ["http_429", None]
    assert not any("asked to wait" in r.getMessage() for r in caplog.records)


async def test_a_retry_after_holds_back_the_replicas_other_requests(llm: OpenAIServer) -> None:
    """The server asked this client to wait: a vote queued behind the rate-limited one waits too."""
    llm.retry_after = "1"
    llm.fail_next("http_429")
    await judge(llm, votes=2, max_in_flight=1, llm_retries=2, llm_retry_after_max_s=30.0)
    first, *later = llm.chat_requests()
    assert first.fault == "http_429" and [r.fault for r in later] == [None, None]
    assert all(r.received_at - first.received_at >= 0.99 for r in later)
