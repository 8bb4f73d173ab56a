"""Suggestions to the HUD: ``GuidanceSuggestion`` events on core NATS, published from the background loop.

Like live frames, this is lossy by design: the env thread only schedules the publish; while NATS is away
events are dropped (a reconnect is tried at most every ``retry_s`` seconds) and training goes on. At most
``max_per_s`` suggestions a second are shown: the rules planner can answer dozens of times a second in a fast
env, more than anyone can read on the HUD.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

from zelda_rlaif.events import GuidanceSuggestion
from zelda_rlaif.game.guidance.limits import TokenBucket
from zelda_rlaif.game.guidance.loop import BackgroundLoop, shared_loop
from zelda_rlaif.game.guidance.runtime import Suggestion
from zelda_rlaif.settings import NatsSettings
from zelda_rlaif.subjects import LIVE_GUIDANCE

if TYPE_CHECKING:
    from zelda_rlaif.bus import Bus

log = logging.getLogger(__name__)


class SuggestionPublisher:
    def __init__(self, nats: NatsSettings, run_id: str, env_id: str, *, loop: BackgroundLoop | None = None,
                 retry_s: float = 30.0, max_per_s: float = 2.0) -> None:
        self.nats = nats
        self.run_id = run_id
        self.env_id = env_id
        self.retry_s = retry_s
        self._loop = loop or shared_loop()
        self._bus: Bus | None = None
        self._connecting: asyncio.Lock | None = None
        self._next_connect = 0.0
        self._shown = TokenBucket(max_per_s, burst=2)
        self.published = 0

    def offer(self, suggestion: Suggestion, step: int) -> None:
        """Env thread: build the event and schedule its publish; returns at once."""
        if not self._shown.try_take():
            return
        event = GuidanceSuggestion(run_id=self.run_id, env_id=self.env_id, step=step, source=suggestion.source,
                                   backend=suggestion.backend, action=suggestion.action_name,
                                   reason=suggestion.reason[:500])
        self._loop.submit(self._publish(event))

    async def _publish(self, event: GuidanceSuggestion) -> None:
        bus = await self._connected()
        if bus is None:
            return
        try:
            await bus.publish_live(LIVE_GUIDANCE.subject, event)
            self.published += 1
        except Exception as exc:  # reconnecting: this suggestion is skipped, the next one will do
            log.debug("guidance suggestion not published: %s", exc)

    async def _connected(self) -> Bus | None:
        if self._bus is not None:
            return self._bus
        if self._connecting is None:  # created here, on the loop that uses it
            self._connecting = asyncio.Lock()
        async with self._connecting:  # publishes queued behind the first connection attempt share it
            if self._bus is None and time.monotonic() >= self._next_connect:
                from zelda_rlaif.bus import Bus
                from zelda_rlaif.errors import BusError

                try:
                    self._bus = await Bus.connect(self.nats, name=f"trainer-guidance-{self.env_id}")
                except BusError as exc:
                    self._next_connect = time.monotonic() + self.retry_s
                    log.warning("guidance suggestions not shown on the HUD for now: %s", exc)
        return self._bus

    def close(self) -> None:
        bus, self._bus = self._bus, None
        if bus is not None and self._loop.alive:
            try:
                self._loop.submit(bus.close()).result(timeout=2.0)
            except Exception as exc:  # closing is best effort: the process may be on its way out
                log.debug("guidance publisher not closed cleanly: %s", exc)
