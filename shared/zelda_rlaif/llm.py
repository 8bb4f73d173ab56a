"""Small pieces every OpenAI-compatible client of the project shares (the judges, online guidance)."""

from __future__ import annotations

import base64
import json
from typing import Any

from zelda_rlaif.errors import ZeldaRlaifError


class UnusableAnswer(ZeldaRlaifError):
    """The model's message is not a JSON object (the caller decides whether to retry)."""


def json_object(content: object) -> dict[str, Any]:
    """The JSON object in a chat completion's message content, or ``UnusableAnswer`` saying what came instead."""
    if not isinstance(content, str) or not content.strip():
        raise UnusableAnswer("empty answer")
    text = content.strip()
    if text.startswith("```"):  # some models fence JSON even under structured output
        text = text.strip("`").removeprefix("json").strip()
    try:
        data = json.loads(text)
    except ValueError:
        raise UnusableAnswer(f"answered prose instead of JSON: {content[:80]!r}") from None
    if not isinstance(data, dict):
        raise UnusableAnswer(f"answered JSON {type(data).__name__}, not an object")
    return data


def png_data_url(png: bytes) -> str:
    """An ``image_url`` for a PNG, inline (vLLM and llm-d accept data URLs)."""
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")
