"""Structured logging: every line carries the run id, epoch and segment id where they apply.

Context is kept in ``contextvars`` so it follows asyncio tasks: wrap work in ``log_context(run_id=...)``
and every log call inside it is tagged, in text or JSON format.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from zelda_rlaif.settings import LogSettings

_CONTEXT: contextvars.ContextVar[dict[str, Any]] = contextvars.ContextVar("zelda_log_context", default={})  # noqa: B039


@contextlib.contextmanager
def log_context(**fields: Any) -> Iterator[None]:
    """Tag every log record emitted inside the block with ``fields`` (None values are skipped)."""
    merged = {**_CONTEXT.get(), **{k: v for k, v in fields.items() if v is not None}}
    token = _CONTEXT.set(merged)
    try:
        yield
    finally:
        _CONTEXT.reset(token)


class _ContextFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.zelda_context = _CONTEXT.get()
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
            **getattr(record, "zelda_context", {}),
        }
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        context = getattr(record, "zelda_context", {})
        if context:
            line += " [" + " ".join(f"{k}={v}" for k, v in context.items()) + "]"
        return line


def configure_logging(service: str, settings: LogSettings | None = None) -> None:
    """Install one stderr handler for the process; safe to call more than once."""
    settings = settings or LogSettings()
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(_ContextFilter())
    if settings.format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(TextFormatter(f"%(asctime)s %(levelname)s {service} %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(settings.level)
    for noisy in ("botocore", "boto3", "urllib3", "werkzeug", "nats", "httpx", "filelock"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))
