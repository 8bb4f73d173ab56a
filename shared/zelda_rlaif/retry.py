"""Riding out a server that is away for a while: retries with capped exponential back-off and jitter.

A ``Retrier`` guards the calls to one server (NATS, the object store). A call that fails with an error the
server's ``is_transient`` accepts is tried again after ``first_delay_s``, doubling up to ``max_delay_s``, each
delay drawn from its upper half so that many clients coming back do not retry in lock-step. Every failing call
of the process shares one *outage* per server: it starts at the first failure, is logged once as a warning (not
per attempt), ends with one line at the first success, and its age is what the ``limit_s`` is checked against.
Past the limit the call raises ``ServerUnreachable``, a sentence naming the server and how to resume.

``current_outages()`` is what a progress display shows while a service waits.
"""

from __future__ import annotations

import asyncio
import logging
import random
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from zelda_rlaif.errors import ZeldaRlaifError

log = logging.getLogger(__name__)

T = TypeVar("T")

RESUME_HINT = "once it is reachable again, continue with `zelda-rlaif up --resume --run-dir <run dir>` " \
              "(or start the stopped service again)"


class ServerUnreachable(ZeldaRlaifError):
    """A server stayed unreachable for longer than its outage limit; the service stops."""


@dataclass(frozen=True)
class Outage:
    server: str  # e.g. "NATS at nats://127.0.0.1:4222"
    since: float  # time.monotonic() of the first failure
    error: str  # the latest failure, for the log and the final message

    @property
    def seconds(self) -> float:
        return time.monotonic() - self.since

    def describe(self) -> str:
        return f"waiting for {self.server}: unreachable for {self.seconds:.0f} s"


_outages: dict[str, Outage] = {}
_lock = threading.Lock()  # store calls run on worker threads, publishes on the event loop


def current_outages() -> list[Outage]:
    """The servers this process is waiting for right now, longest first."""
    with _lock:
        return sorted(_outages.values(), key=lambda o: o.since)


def _failed(server: str, exc: BaseException, limit_s: float, limit_setting: str) -> Outage:
    error = f"{type(exc).__name__}: {exc}".strip().rstrip(":")
    with _lock:
        outage = _outages.get(server)
        first = outage is None
        outage = Outage(server, outage.since if outage else time.monotonic(), error[:300])
        _outages[server] = outage
    if first:
        log.warning("%s is unreachable (%s); retrying for up to %g s (%s)", server, outage.error, limit_s,
                    limit_setting)
    return outage


def _succeeded(server: str) -> None:
    with _lock:
        outage = _outages.pop(server, None)
    if outage is not None:
        log.warning("%s is reachable again after %.0f s", server, outage.seconds)


@dataclass(frozen=True)
class Retrier:
    """Retries calls to ``server`` while ``is_transient(error)`` and the server's outage is under ``limit_s``."""

    server: str
    is_transient: Callable[[BaseException], bool]
    limit_s: float
    limit_setting: str  # the environment variable that sets limit_s, named in the log and the final error
    max_delay_s: float = 5.0
    first_delay_s: float = 0.1

    def __post_init__(self) -> None:
        if self.limit_s <= 0 or self.max_delay_s <= 0 or self.first_delay_s <= 0:
            raise ValueError("a Retrier needs positive limit_s, max_delay_s and first_delay_s")

    def delay(self, attempt: int) -> float:
        """The pause after failed attempt number ``attempt`` (0-based): capped doubling, upper-half jitter."""
        ceiling = min(self.max_delay_s, self.first_delay_s * 2 ** min(attempt, 30))
        return random.uniform(ceiling / 2, ceiling)

    def _next_delay(self, attempt: int, exc: BaseException) -> float:
        """Record a failed attempt; raise when it cannot be retried, else return the pause before the next."""
        if not self.is_transient(exc):
            raise exc
        outage = _failed(self.server, exc, self.limit_s, self.limit_setting)
        left = self.limit_s - outage.seconds
        if left <= 0:
            with _lock:  # this process stops now; a call made after this starts a fresh outage
                _outages.pop(self.server, None)
            raise ServerUnreachable(
                f"{self.server} has been unreachable for {outage.seconds:.0f} s, longer than {self.limit_setting}="
                f"{self.limit_s:g} allows (last error: {outage.error}); {RESUME_HINT}"
            ) from None
        return min(self.delay(attempt), left)

    def call(self, fn: Callable[[], T]) -> T:
        """Run the blocking ``fn`` until it succeeds."""
        attempt = 0
        while True:
            try:
                result = fn()
            except Exception as exc:
                time.sleep(self._next_delay(attempt, exc))
                attempt += 1
                continue
            _succeeded(self.server)
            return result

    async def acall(self, fn: Callable[[], Awaitable[T]]) -> T:
        """Await ``fn()`` until it succeeds."""
        attempt = 0
        while True:
            try:
                result = await fn()
            except Exception as exc:
                await asyncio.sleep(self._next_delay(attempt, exc))
                attempt += 1
                continue
            _succeeded(self.server)
            return result
