"""``openai``: M votes from any OpenAI-compatible chat-completions server (vLLM, llm-d, Ollama, OpenAI).

Per segment:
- one prompt within the token budget (``zelda_judge.prompts``); a kind that sees frames (``zelda_judge.kinds``)
  attaches key frames as ``image_url`` data URLs;
- M votes with ``temperature > 0`` and distinct seeds: M requests (``vote_mode=requests``, works everywhere)
  or one request with ``n=M`` (``vote_mode=n``, vLLM); seeds derive from the segment and kind, so a
  redelivered segment asks exactly the same questions;
- structured output through ``response_format`` of type ``json_schema`` (strict); each answer is validated
  again (``zelda_judge.votes``);
- a timeout, transport error, HTTP 408/429/5xx, prose, broken JSON, truncation or an out-of-range number is
  retried with exponential back-off and jitter, each retry with a fresh seed; when the retries are spent
  ``JudgeBackendError`` is raised and the bus redelivers the segment later, then dead-letters it. Other 4xx
  answers (bad model name, bad key) are not retried here: they need an operator, not another attempt.
- a 429 or 503 with ``Retry-After`` (seconds or an HTTP-date) is honoured, capped at
  ``LLM_RETRY_AFTER_MAX_S``: the retry waits at least that long, and so does every other request of the replica
  (the server asked this client, not this one request, to hold back).
- median per dimension, agreement = 1 - mean spread.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import random
import re
import time
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, Literal

import httpx

from zelda_judge.backends.base import JudgeBackendError, Judgement
from zelda_judge.kinds import KINDS
from zelda_judge.metrics import JudgeMetrics
from zelda_judge.prompts import build_prompt
from zelda_judge.segment_io import Segment
from zelda_judge.settings import JudgeSettings, LlmEndpoint
from zelda_judge.votes import InvalidVote, aggregate, parse_vote, response_format
from zelda_rlaif.events import JudgeKind
from zelda_rlaif.verdicts import Vote

log = logging.getLogger(__name__)

RETRYABLE_STATUS = frozenset({408, 409, 425, 429}) | frozenset(range(500, 600))
# The statuses whose Retry-After says when the server takes requests again (RFC 9110, section 10.2.3).
RETRY_AFTER_STATUS = frozenset({429, 503})
_DELAY_SECONDS = re.compile(r"\d+(?:\.\d+)?")


class _Retryable(Exception):
    """One attempt failed in a way another attempt may fix."""

    def __init__(self, outcome: str, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.outcome = outcome
        self.retry_after_s = retry_after_s  # the wait a Retry-After asked for, capped; None if it asked none


def retry_after_s(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds a ``Retry-After`` header asks to wait: delay-seconds or an HTTP-date (a past date is 0).

    None when absent or unreadable: then the usual back-off applies.
    """
    if value is None:
        return None
    text = value.strip()
    if _DELAY_SECONDS.fullmatch(text):
        return float(text)
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:  # an HTTP-date is always GMT
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def segment_seed(run_id: str, segment_id: str, kind: JudgeKind) -> int:
    """A stable base seed per segment and kind: redeliveries repeat the same requests."""
    digest = hashlib.sha256(f"{run_id}/{segment_id}/{kind.value}".encode()).digest()
    return int.from_bytes(digest[:4], "big") % 1_000_000_007


class OpenAIJudge:
    name: Literal["openai"] = "openai"

    def __init__(self, kind: JudgeKind, settings: JudgeSettings, metrics: JudgeMetrics | None = None,
                 client: httpx.AsyncClient | None = None) -> None:
        self.kind = kind
        self.endpoint: LlmEndpoint = settings.endpoint()
        self.model = self.endpoint.model
        self.settings = settings
        self.metrics = metrics or JudgeMetrics(kind.value)
        self._slots = asyncio.Semaphore(self.endpoint.max_in_flight)
        key = self.endpoint.api_key
        headers = {"Authorization": f"Bearer {key.get_secret_value()}"} if key else {}
        self._client = client or httpx.AsyncClient(
            timeout=httpx.Timeout(self.endpoint.timeout_s, connect=min(10.0, self.endpoint.timeout_s)),
            limits=httpx.Limits(max_connections=self.endpoint.max_in_flight,
                                max_keepalive_connections=self.endpoint.max_in_flight),
            headers=headers,
        )
        self._random = random.Random()
        self._resume_at = 0.0  # time.monotonic() before which a Retry-After asked us to send nothing

    @property
    def key_frames(self) -> int:
        return self.settings.key_frames if KINDS[self.kind].sees_frames else 0

    @property
    def requests_per_segment(self) -> int:
        return 1 if self.settings.vote_mode == "n" else self.settings.votes

    async def aclose(self) -> None:
        await self._client.aclose()

    async def probe(self) -> None:
        """Log whether the server answers and serves the model; never fatal (the LLM may start later)."""
        url = self.endpoint.url.rstrip("/") + "/models"
        try:
            response = await self._client.get(url)
            models = response.json().get("data", []) if response.status_code == 200 else None
            # llama-server lists one id per model and its other names under "aliases" (--alias a,b,c).
            served = None if models is None else [name for m in models
                                                  for name in (m.get("id"), *(m.get("aliases") or ()))]
        except (httpx.HTTPError, ValueError, AttributeError, TypeError) as exc:
            log.warning("LLM server at %s not reachable yet (%s); segments wait for it", self.endpoint.url, exc)
            return
        if served is None:
            log.warning("GET %s answered HTTP %d; check ZELDA_JUDGE_LLM_URL and the API key", url,
                        response.status_code)
        elif self.model not in served:
            log.warning("the LLM server serves %s, not %r: check ZELDA_JUDGE_LLM_MODEL", served, self.model)

    async def judge(self, segment: Segment) -> Judgement:
        prompt = build_prompt(self.kind, segment.manifest, segment.summary, token_budget=self.settings.token_budget,
                              frames=segment.frames)
        base = segment_seed(segment.manifest.run_id, segment.manifest.segment_id, self.kind)
        votes = await self._collect(prompt.messages, base)
        result = aggregate(votes, KINDS[self.kind].dimension_names)
        self.metrics.agreement(result.agreement)
        return Judgement(scores=result.scores, agreement=result.agreement, rationale=result.rationale,
                         votes=tuple(votes))

    async def _collect(self, messages: list[dict[str, Any]], base: int) -> list[Vote]:
        m = self.settings.votes
        if self.settings.vote_mode == "n":
            return await self._with_retries(messages, base, n=m, stride=m)
        try:
            async with asyncio.TaskGroup() as group:
                # Vote i on attempt k uses seed base + i + k*M: distinct across votes and attempts.
                tasks = [group.create_task(self._with_retries(messages, base + i, n=1, stride=m)) for i in range(m)]
        except ExceptionGroup as failures:
            # One vote that stays invalid fails the verdict (the other votes were cancelled): report it plainly.
            raise failures.exceptions[0] from None
        return [vote for task in tasks for vote in task.result()]

    async def _with_retries(self, messages: list[dict[str, Any]], seed: int, *, n: int, stride: int) -> list[Vote]:
        attempts = self.settings.llm_retries + 1
        problem = ""
        for attempt in range(attempts):
            try:
                return await self._ask(messages, seed + attempt * stride, n)
            except _Retryable as exc:
                problem = str(exc)
                if attempt + 1 < attempts:
                    delay = self._retry_delay(attempt, exc.retry_after_s)
                    log.warning("LLM attempt %d/%d failed (%s); retrying in %.2fs", attempt + 1, attempts, exc, delay)
                    await asyncio.sleep(delay)
        raise JudgeBackendError(
            f"{self.kind.value} judge got no valid vote from {self.endpoint.chat_completions_url} (model "
            f"{self.model}) in {attempts} attempts; last problem: {problem}. The segment will be redelivered; "
            "check the LLM server if this persists"
        )

    def _backoff(self, attempt: int) -> float:
        ceiling = min(self.settings.llm_backoff_max_s, self.settings.llm_backoff_s * 2**attempt)
        return ceiling / 2 + self._random.uniform(0, ceiling / 2)  # "equal jitter": never zero, never in step

    def _retry_delay(self, attempt: int, retry_after_s: float | None) -> float:
        """The back-off, or the honoured Retry-After when that is longer."""
        return max(self._backoff(attempt), retry_after_s or 0.0)

    def _hold_back(self, asked_s: float) -> float:
        """Honour a Retry-After up to the cap: no request of this replica goes out before then."""
        honoured = min(asked_s, self.settings.llm_retry_after_max_s)
        if honoured < asked_s:
            log.warning("the LLM server asked to wait %.0fs; waiting %.2fs (ZELDA_JUDGE_LLM_RETRY_AFTER_MAX_S)",
                        asked_s, honoured)
        self._resume_at = max(self._resume_at, time.monotonic() + honoured)
        return honoured

    def _payload(self, messages: list[dict[str, Any]], seed: int, n: int) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": self.settings.temperature,
            "seed": seed,
            "max_tokens": self.settings.llm_max_tokens,
            "response_format": response_format(self.kind),
        }
        if n > 1:
            payload["n"] = n
        return payload

    async def _ask(self, messages: list[dict[str, Any]], seed: int, n: int) -> list[Vote]:
        async with self._slots:
            # Checked once a slot is ours: requests queued for a slot also wait out a Retry-After met meanwhile.
            held_back = self._resume_at - time.monotonic()
            if held_back > 0:
                await asyncio.sleep(held_back)
            started = time.perf_counter()
            try:
                response = await self._client.post(self.endpoint.chat_completions_url,
                                                   json=self._payload(messages, seed, n))
            except httpx.TimeoutException:
                self.metrics.request("timeout", time.perf_counter() - started)
                raise _Retryable("timeout", f"no answer within {self.endpoint.timeout_s}s") from None
            except httpx.TransportError as exc:
                self.metrics.request("transport_error", time.perf_counter() - started)
                raise _Retryable("transport_error", f"{type(exc).__name__}: {exc}") from None
            elapsed = time.perf_counter() - started
        if response.status_code in RETRYABLE_STATUS:
            self.metrics.request("http_error", elapsed)
            asked = (retry_after_s(response.headers.get("Retry-After"))
                     if response.status_code in RETRY_AFTER_STATUS else None)
            raise _Retryable("http_error", f"HTTP {response.status_code}: {response.text[:200]}",
                             None if asked is None else self._hold_back(asked))
        if response.status_code >= 400:
            self.metrics.request("rejected", elapsed)
            raise JudgeBackendError(
                f"{self.endpoint.chat_completions_url} rejected the request with HTTP {response.status_code}: "
                f"{response.text[:300]}; check ZELDA_JUDGE_LLM_MODEL ({self.model!r}), ZELDA_JUDGE_LLM_API_KEY "
                "and that the server supports response_format json_schema"
            )
        try:
            votes = self._votes(response, seed, n)
        except _Retryable as exc:
            self.metrics.request(exc.outcome, elapsed)
            raise
        self.metrics.request("ok", elapsed)
        return votes

    def _votes(self, response: httpx.Response, seed: int, n: int) -> list[Vote]:
        try:
            body = response.json()
            choices = body["choices"]
        except (ValueError, KeyError, TypeError):
            raise _Retryable("invalid_json", f"not a chat completion: {response.text[:120]!r}") from None
        if not isinstance(choices, list) or len(choices) < n:
            got = len(choices) if isinstance(choices, list) else 0
            raise _Retryable("invalid_json", f"asked for {n} choices, got {got} (does the server honour n?)")
        votes = []
        for index, choice in enumerate(choices[:n]):
            if not isinstance(choice, dict):
                raise _Retryable("invalid_json", "a choice is not an object")
            if choice.get("finish_reason") == "length":
                raise _Retryable("truncated", "answer cut at max_tokens; raise ZELDA_JUDGE_LLM_MAX_TOKENS")
            content = (choice.get("message") or {}).get("content")
            try:
                votes.append(parse_vote(self.kind, content if isinstance(content, str) else None, seed + index))
            except InvalidVote as exc:
                outcome = "invalid_scores" if str(exc).startswith("scores") else "invalid_json"
                raise _Retryable(outcome, str(exc)) from None
        return votes
