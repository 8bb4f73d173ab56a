"""The OpenAI-compatible guidance client: one chat completion per request, no retries.

A text request carries the state summary; a vision request carries the current screen as a PNG data URL
(plus the summary, so the model need not read the HUD). The answer is structured output (``response_format``
``json_schema``, strict): ``{"action": one of the 8 button names, "reason": one short line}``; it is validated
again here because some servers do not enforce the schema. A failed request is not retried: by the time a
retry answered, the moment it was about would be long gone. Failures raise ``GuidanceRequestError`` with a
kind (``timeout``, ``transport``, ``http``, ``invalid_answer``) that the runtime counts.

The endpoint handling mirrors the judge's ``zelda_judge.backends.openai`` (kept separate on purpose: the judge
votes with retries and self-consistency, guidance asks once and moves on).
"""

from __future__ import annotations

import asyncio
import io
from dataclasses import dataclass
from typing import Any

import httpx
import numpy as np
from PIL import Image
from pydantic import SecretStr

from zelda_rlaif.errors import ZeldaRlaifError
from zelda_rlaif.game.actions import ACTION_NAMES
from zelda_rlaif.game.guidance.config import GuidanceConfig, Source
from zelda_rlaif.llm import UnusableAnswer, json_object, png_data_url

REASON_MAX_CHARS = 200

SYSTEM_PROMPT = (
    "You coach a player of a top-down Zelda-like Game Boy adventure. The goals are to explore new rooms, "
    "collect items (rupees, keys, a sword), talk to people, solve switch puzzles and avoid losing health. "
    "Buttons: up, down, left, right walk; a talks or interacts and moves text boxes on; b swings the sword; "
    "start opens or closes the menu (the game is paused while it is open); nop waits. "
    "Given the current situation, choose the single button to press next and give the reason in one short line."
)


class GuidanceRequestError(ZeldaRlaifError):
    """A guidance request produced no usable suggestion; the runtime counts it and play goes on."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class Endpoint:
    url: str
    model: str

    @property
    def chat_completions_url(self) -> str:
        return self.url.rstrip("/") + "/chat/completions"


def response_format() -> dict[str, Any]:
    schema = {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": list(ACTION_NAMES), "description": "the button to press next"},
            "reason": {"type": "string", "maxLength": REASON_MAX_CHARS, "description": "why, in one short line"},
        },
        "required": ["action", "reason"],
        "additionalProperties": False,
    }
    return {"type": "json_schema", "json_schema": {"name": "guidance_suggestion", "schema": schema, "strict": True}}


def screen_data_url(screen: np.ndarray) -> str:
    buffer = io.BytesIO()
    Image.fromarray(screen).save(buffer, format="PNG", compress_level=1)
    return png_data_url(buffer.getvalue())


def build_messages(source: Source, summary: str, screen: np.ndarray | None) -> list[dict[str, Any]]:
    if source == "vision":
        if screen is None:
            raise ValueError("a vision request needs the screen of its step")
        content: Any = [
            {"type": "text", "text": "The current screen is attached. Known state:\n" + summary},
            {"type": "image_url", "image_url": {"url": screen_data_url(screen)}},
        ]
    else:
        content = "Current state:\n" + summary
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": content}]


def parse_answer(content: object) -> tuple[int, str]:
    """``(action index, reason)`` from the model's message content; ``GuidanceRequestError`` when unusable."""
    try:
        answer = json_object(content)
    except UnusableAnswer as exc:
        raise GuidanceRequestError("invalid_answer", str(exc)) from None
    action, reason = answer.get("action"), answer.get("reason")
    name = action.strip().lower() if isinstance(action, str) else None
    if name not in ACTION_NAMES:
        raise GuidanceRequestError("invalid_answer", f"action {action!r} is not one of {', '.join(ACTION_NAMES)}")
    if not isinstance(reason, str):
        raise GuidanceRequestError("invalid_answer", "the answer has no reason")
    # A long reason is verbosity, not a wrong action: keep the suggestion, cut the text.
    return ACTION_NAMES.index(name), " ".join(reason.split())[:REASON_MAX_CHARS]


class GuidanceClient:
    """Lives on the background loop: every method runs there, never on the env thread."""

    def __init__(self, config: GuidanceConfig, api_key: SecretStr | None) -> None:
        assert config.llm_url is not None and config.llm_model is not None  # GuidanceConfig validates this
        self.config = config
        self.text = Endpoint(config.llm_url, config.llm_model)
        self.vision = Endpoint(config.vision_llm_url or config.llm_url, config.vision_llm_model or config.llm_model)
        self._headers = {"Authorization": f"Bearer {api_key.get_secret_value()}"} if api_key else {}
        self._client: httpx.AsyncClient | None = None

    def _http(self) -> httpx.AsyncClient:
        # Created on first use, on the loop that will use it.
        if self._client is None:
            slots = self.config.max_in_flight
            self._client = httpx.AsyncClient(
                timeout=httpx.Timeout(self.config.timeout_s, connect=min(5.0, self.config.timeout_s)),
                limits=httpx.Limits(max_connections=slots, max_keepalive_connections=slots),
                headers=self._headers,
            )
        return self._client

    async def ask(self, source: Source, summary: str, screen: np.ndarray | None, seed: int) -> tuple[int, str]:
        endpoint = self.vision if source == "vision" else self.text
        payload = {
            "model": endpoint.model,
            "messages": build_messages(source, summary, screen),
            "temperature": self.config.temperature,
            "seed": seed,
            "max_tokens": self.config.max_tokens,
            "response_format": response_format(),
        }
        try:
            async with asyncio.timeout(self.config.timeout_s):
                response = await self._http().post(endpoint.chat_completions_url, json=payload)
        except (TimeoutError, httpx.TimeoutException):
            problem = GuidanceRequestError("timeout", f"no answer from {endpoint.url} within {self.config.timeout_s}s")
            raise problem from None
        except httpx.TransportError as exc:
            problem = GuidanceRequestError("transport", f"{endpoint.url} unreachable: {type(exc).__name__}: {exc}")
            raise problem from None
        if response.status_code >= 400:
            raise GuidanceRequestError(
                "http", f"{endpoint.chat_completions_url} answered HTTP {response.status_code}: "
                f"{response.text[:200]}; check the guidance model ({endpoint.model!r}), ZELDA_GUIDANCE_LLM_API_KEY, "
                "and for vision requests that the model accepts images"
            )
        try:
            choice = response.json()["choices"][0]
        except (ValueError, KeyError, IndexError, TypeError):
            raise GuidanceRequestError("invalid_answer", f"not a chat completion: {response.text[:120]!r}") from None
        if not isinstance(choice, dict):
            raise GuidanceRequestError("invalid_answer", "the first choice is not an object")
        if choice.get("finish_reason") == "length":
            raise GuidanceRequestError("invalid_answer", "the answer was cut at max_tokens; raise guidance max_tokens")
        return parse_answer((choice.get("message") or {}).get("content"))

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
