"""What ``zelda-rlaif up``'s progress display says while a server is away.

The services retry on their own (``zelda_rlaif.retry``) and say so in their logs, but ``up`` starts them without
progress bars, so ``up`` looks for itself: NATS through its own connection, the object store through a cheap read
every few seconds, retried like every store call (the retrier records the outage process-wide). Both are the
servers the services use, seen from the same machine.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

from zelda_rlaif.bus import Bus
from zelda_rlaif.retry import current_outages
from zelda_rlaif.storage import ObjectStore


class ServerWatch:
    def __init__(self, bus: Bus, nats_url: str, store: ObjectStore, probe_key: str, every_s: float = 2.0) -> None:
        self.bus = bus
        self.nats_url = nats_url
        self.store = store
        self.probe_key = probe_key
        self.every_s = every_s
        self._nats_down_since: float | None = None

    async def probe_store(self, stop: asyncio.Event) -> None:
        """Read the store until ``stop``; a read blocks (retrying) while the store is away, which is the point.
        Past the store's outage limit it raises ``ServerUnreachable``, like any service would."""
        while not stop.is_set():
            await asyncio.to_thread(self.store.exists, self.probe_key)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.every_s)

    def waiting(self) -> list[str]:
        """One line per server that is away right now, e.g. "waiting for NATS at nats://...: unreachable for 42 s"."""
        lines = [outage.describe() for outage in current_outages()]
        if self.bus.nc.is_connected:
            self._nats_down_since = None
        else:
            now = time.monotonic()
            self._nats_down_since = self._nats_down_since or now
            lines.insert(0, f"waiting for NATS at {self.nats_url}: unreachable for {now - self._nats_down_since:.0f} s")
        return lines
