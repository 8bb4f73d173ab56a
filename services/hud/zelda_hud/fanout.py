"""Fan-out to browsers: one bounded outbox per browser, so a slow one loses frames but never slows others.

Producers (the NATS callbacks) only ever call the non-blocking ``offer_*`` methods: a dict assignment or a
deque append and an ``Event.set()``. Each browser's own task (``pump``) does the sending, so a browser
whose connection is stuck blocks nothing but itself.

An outbox holds two kinds of message:
- *slots*, keyed and latest-wins: the newest frame of each watched env, the exploration map, the pipeline
  counters. An unsent value that is replaced is simply skipped. Each slot kind has a minimum interval,
  which is how a browser's frame rate is capped.
- *events*, in order (metrics points, verdicts, ...): bounded; when a browser falls so far behind that the
  buffer is full, the buffer is dropped and the browser gets a fresh snapshot instead, so it converges to
  the true state without the server holding an unbounded backlog for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, fields

FRAME_SLOT_PREFIX = "frame:"
_ids = itertools.count(1)


class SlowClient(Exception):
    """A browser accepted nothing for longer than the send timeout."""


@dataclass
class ChannelStats:
    frames_sent: int = 0
    frames_skipped: int = 0
    messages_sent: int = 0
    snapshots: int = 0
    overflows: int = 0

    def add(self, other: ChannelStats) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


class ClientChannel:
    """One browser's outbox and what it watches."""

    def __init__(self, max_events: int, label: str = "") -> None:
        self.id = next(_ids)
        self.label = label
        self.max_events = max_events
        self.events: deque[str] = deque()
        self.slots: dict[str, tuple[str, float]] = {}  # key -> (message, minimum seconds between sends)
        self.last_sent: dict[str, float] = {}
        self.needs_snapshot = True
        self.sending = False  # True while a send waits for the browser to take data
        self.watch_all = False
        self.watch: frozenset[str] = frozenset()  # empty and not watch_all: the run's default env
        self.stats = ChannelStats()
        self.wake = asyncio.Event()
        self.wake.set()  # the first thing a channel sends is its snapshot

    def wants_frame(self, env_id: str, default_env: str | None) -> bool:
        if self.watch_all:
            return True
        return env_id in self.watch if self.watch else env_id == default_env

    def offer_event(self, message: str) -> None:
        if self.needs_snapshot:
            return  # the coming snapshot already contains it
        if len(self.events) >= self.max_events:
            self.events.clear()
            self.needs_snapshot = True
            self.stats.overflows += 1
        else:
            self.events.append(message)
        self.wake.set()

    def offer_slot(self, key: str, message: str, min_interval_s: float = 0.0) -> None:
        if key in self.slots and key.startswith(FRAME_SLOT_PREFIX):
            self.stats.frames_skipped += 1
        self.slots[key] = (message, min_interval_s)
        self.wake.set()

    def request_snapshot(self) -> None:
        self.needs_snapshot = True
        self.wake.set()

    def _next_slot(self, now: float) -> tuple[str | None, float | None]:
        """The slot to send now, or else how long until one is due (None: nothing pending)."""
        wait: float | None = None
        for key, (_, interval) in self.slots.items():
            due = self.last_sent.get(key, -1e18) + interval
            if due <= now:
                return key, None
            wait = due - now if wait is None else min(wait, due - now)
        return None, wait

    async def pump(
        self,
        send: Callable[[str], Awaitable[None]],
        snapshot: Callable[[ClientChannel], str],
        send_timeout_s: float,
    ) -> None:
        """Send until cancelled; raise ``SlowClient`` when one send stays blocked for ``send_timeout_s``."""
        while True:
            wait: float | None = None
            if self.needs_snapshot:
                # Clear first, then build: no await in between, so the snapshot and what follows it are exact.
                self.needs_snapshot = False
                self.events.clear()
                self.slots.clear()
                message = snapshot(self)
                self.stats.snapshots += 1
            elif self.events:
                message = self.events.popleft()
            else:
                now = time.monotonic()
                key, wait = self._next_slot(now)
                if key is None:
                    self.wake.clear()
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self.wake.wait(), timeout=wait)
                    continue
                message, _ = self.slots.pop(key)
                self.last_sent[key] = now
                if key.startswith(FRAME_SLOT_PREFIX):
                    self.stats.frames_sent += 1
            self.sending = True
            try:
                await asyncio.wait_for(send(message), timeout=send_timeout_s)
            except TimeoutError:
                who = self.label or self.id
                raise SlowClient(f"browser {who} accepted nothing for {send_timeout_s:.0f}s") from None
            finally:
                self.sending = False
            self.stats.messages_sent += 1


class Fanout:
    """Every connected browser's channel."""

    def __init__(self, max_events: int) -> None:
        self.max_events = max_events
        self.channels: dict[int, ClientChannel] = {}
        self.closed_stats = ChannelStats()  # what channels that are gone had done, for the counters
        self.slow_disconnects = 0

    def open(self, label: str = "") -> ClientChannel:
        channel = ClientChannel(self.max_events, label)
        self.channels[channel.id] = channel
        return channel

    def close(self, channel: ClientChannel) -> None:
        if self.channels.pop(channel.id, None) is not None:
            self.closed_stats.add(channel.stats)

    def totals(self) -> ChannelStats:
        total = ChannelStats()
        total.add(self.closed_stats)
        for channel in self.channels.values():
            total.add(channel.stats)
        return total

    def __len__(self) -> int:
        return len(self.channels)

    def event(self, message: str) -> None:
        for channel in self.channels.values():
            channel.offer_event(message)

    def slot(self, key: str, message: str, min_interval_s: float = 0.0) -> None:
        for channel in self.channels.values():
            channel.offer_slot(key, message, min_interval_s)

    def frame(self, env_id: str, message: str, default_env: str | None, min_interval_s: float) -> None:
        key = FRAME_SLOT_PREFIX + env_id
        for channel in self.channels.values():
            if channel.wants_frame(env_id, default_env):
                channel.offer_slot(key, message, min_interval_s)

    def resync(self) -> None:
        for channel in self.channels.values():
            channel.request_snapshot()
