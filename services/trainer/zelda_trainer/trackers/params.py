"""The trainer's settings as tracker params: flat ``block.field`` names, text values, no secrets."""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel, SecretStr

# MLflow's longest param value.
_MAX_VALUE_CHARS = 6000


def settings_params(settings: BaseModel, prefix: str = "") -> dict[str, str]:
    """Every field of ``settings`` and its nested blocks, by dotted name. Secret fields are left out, and a URL's
    user and password are cut from it (``nats://user:pw@host`` is logged as ``nats://host``)."""
    params: dict[str, str] = {}
    for name in type(settings).model_fields:
        value = getattr(settings, name)
        key = f"{prefix}{name}"
        if isinstance(value, SecretStr):
            continue
        if isinstance(value, BaseModel):
            params.update(settings_params(value, f"{key}."))
        else:
            params[key] = _text(value)[:_MAX_VALUE_CHARS]
    return params


def _text(value: object) -> str:
    if isinstance(value, Enum):
        return str(value.value)
    if isinstance(value, str):
        return _without_credentials(value)
    if isinstance(value, Path) or value is None or isinstance(value, int | float | bool):
        return str(value)
    return json.dumps(value, default=str, sort_keys=True)


def _without_credentials(text: str) -> str:
    if "@" not in text or "://" not in text:
        return text
    # NATS takes comma-separated URLs; each may carry credentials.
    return ",".join(_url_without_credentials(part) for part in text.split(","))


def _url_without_credentials(url: str) -> str:
    parts = urlsplit(url.strip())
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit(parts._replace(netloc=netloc))
