"""``LivePublisher``: lossy live events on core NATS, offered by a thread that must never wait on the network.

The offering thread (an env's step, say) only appends to a small queue per subject, dropping the oldest pending
event when it is full, and returns. A background thread with its own event loop connects, builds costly
payloads (an event may be offered as a function that builds it, e.g. to encode a PNG there) and publishes.
Lossy by design: with nobody listening or NATS away, events are simply not delivered and the caller goes on.
While NATS does not answer, nats-py keeps trying to connect and the offered events wait in the bounded queues,
so only the newest go out once it does; a connection refused outright (``BusError``) is tried again at most
every ``retry_s`` seconds, dropping what was offered meanwhile. Once connected, nats-py reconnects by itself
and publishes that fail while it does are skipped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections import deque
from collections.abc import Callable

from zelda_rlaif.bus.client import Bus
from zelda_rlaif.errors import BusError
from zelda_rlaif.events import Event
from zelda_rlaif.settings import NatsSettings

log = logging.getLogger(__name__)

LiveEvent = Event | Callable[[], Event]


class LivePublisher:
    def __init__(self, nats: NatsSettings, name: str, *, max_pending: int = 2, retry_s: float = 30.0) -> None:
        """``name`` names the NATS connection and the thread; ``max_pending`` events wait per subject."""
        if max_pending < 1:
            raise ValueError(f"a live publisher needs max_pending >= 1 (got {max_pending})")
        self.nats = nats
        self.name = name
        self.retry_s = retry_s
        self._max_pending = max_pending
        self._pending: dict[str, deque[LiveEvent]] = {}
        self._lock = threading.Lock()
        self._closing = False
        self._loop = asyncio.new_event_loop()
        self._wake = asyncio.Event()
        self._serving: asyncio.Task[None] | None = None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)  # never delays process exit
        self._thread.start()

    def publish_live(self, subject: str, event: LiveEvent) -> None:
        """Queue ``event`` for ``subject`` and return at once. A function is called on the publisher's thread:
        pass one when building the event costs time the caller does not have."""
        if self._closing:
            return
        with self._lock:
            pending = self._pending.get(subject)
            if pending is None:
                pending = self._pending[subject] = deque(maxlen=self._max_pending)
            pending.append(event)  # a full deque drops its oldest: the newest event wins
        with contextlib.suppress(RuntimeError):  # the loop is already closed: so is this publisher
            self._loop.call_soon_threadsafe(self._wake.set)

    def close(self, timeout_s: float = 2.0) -> None:
        """Drop what is pending, close the connection and stop the thread (waiting at most ``timeout_s``)."""
        if self._closing:
            return
        self._closing = True
        with contextlib.suppress(RuntimeError):  # stops a connection attempt too, which may otherwise go on forever
            self._loop.call_soon_threadsafe(self._stop_serving)
        self._thread.join(timeout=timeout_s)

    def _run(self) -> None:
        self._serving = self._loop.create_task(self._serve())
        try:
            with contextlib.suppress(asyncio.CancelledError):
                self._loop.run_until_complete(self._serving)
        finally:
            self._loop.close()

    def _stop_serving(self) -> None:
        self._wake.set()  # in case the serving task has not started yet: it stops at its first wake
        if self._serving is not None:
            self._serving.cancel()

    async def _serve(self) -> None:
        bus: Bus | None = None
        next_connect = 0.0
        try:
            while True:
                await self._wake.wait()
                self._wake.clear()
                if self._closing:
                    return
                if bus is None:
                    if time.monotonic() < next_connect:
                        self._take_pending()  # NATS refused us a moment ago: these are dropped
                        continue
                    try:
                        bus = await Bus.connect(self.nats, name=self.name)
                    except BusError as exc:
                        next_connect = time.monotonic() + self.retry_s
                        self._take_pending()
                        log.warning("live events of %s not published for the next %.0f s: %s", self.name,
                                    self.retry_s, exc)
                        continue
                for subject, event in self._take_pending():  # taken after connecting: the newest go out
                    await self._publish(bus, subject, event)
        finally:
            if bus is not None:
                await bus.close()

    def _take_pending(self) -> list[tuple[str, LiveEvent]]:
        with self._lock:
            offered = [(subject, event) for subject, pending in self._pending.items() for event in pending]
            for pending in self._pending.values():
                pending.clear()
        return offered

    async def _publish(self, bus: Bus, subject: str, event: LiveEvent) -> None:
        try:
            built = event if isinstance(event, Event) else event()
        except Exception as exc:  # a bad event must not stop the stream; it is a bug worth seeing
            log.warning("live event for %s not built: %s", subject, exc)
            return
        try:
            await bus.publish_live(subject, built)
        except Exception as exc:  # reconnecting: this event is skipped, the next one will do
            log.debug("live event for %s not published: %s", subject, exc)
