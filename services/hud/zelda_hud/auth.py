"""The optional access token: required on the API and the websocket when ``ZELDA_HUD_ACCESS_TOKEN`` is set."""

from __future__ import annotations

import logging
import re
import secrets

from pydantic import SecretStr

TOKEN_HELP = "open the HUD as /?token=<ZELDA_HUD_ACCESS_TOKEN>, or send 'Authorization: Bearer <token>'"


def presented_token(authorization: str | None, query_token: str | None) -> str | None:
    if authorization:
        scheme, _, value = authorization.partition(" ")
        if scheme.lower() == "bearer" and value.strip():
            return value.strip()
    return query_token or None


def token_accepted(expected: SecretStr | None, authorization: str | None, query_token: str | None) -> bool:
    if expected is None:
        return True
    given = presented_token(authorization, query_token)
    # Constant-time comparison: response timing must not reveal how much of a guess was right.
    return given is not None and secrets.compare_digest(given.encode(), expected.get_secret_value().encode())


_TOKEN_IN_QUERY = re.compile(r"(token=)[^&\s\"']+")


class RedactTokens(logging.Filter):
    """Masks ``token=...`` in log lines: access logs print request paths, query string included."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = _TOKEN_IN_QUERY.sub(r"\1***", record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(_TOKEN_IN_QUERY.sub(r"\1***", a) if isinstance(a, str) else a for a in record.args)
        return True


def redact_tokens_in_server_logs() -> None:
    for name in ("uvicorn.access", "uvicorn.error"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, RedactTokens) for f in logger.filters):
            logger.addFilter(RedactTokens())
