"""The HUD's NATS side: connect (and keep retrying), subscribe to live subjects, follow the streams.

The HUD only reads. Live frames, metrics and guidance are plain core-NATS subscriptions. The pipeline and
dead-letter streams are read through *ephemeral ordered consumers*: the server deletes them when the HUD
goes away, they never take part in the services' durable consumers (so the HUD cannot steal or delay their
work), and nats-py recreates them from the last seen sequence after a reconnect. At start the last
``replay_events`` messages of each stream are read again so a restarted HUD shows recent history.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from nats.aio.msg import Msg
from nats.errors import Error as NatsError
from nats.js import api
from nats.js.errors import NotFoundError

from zelda_hud.hub import Hub
from zelda_hud.settings import HudSettings
from zelda_rlaif.bus import Bus
from zelda_rlaif.errors import BusError
from zelda_rlaif.subjects import StreamSpec

log = logging.getLogger(__name__)

RETRY_MAX_S = 10.0
STATE_POLL_S = 0.5


class Feeds:
    def __init__(self, settings: HudSettings, hub: Hub) -> None:
        self.settings = settings
        self.hub = hub
        self.bus: Bus | None = None
        # Last stream sequence folded in, per stream: after a full reconnect the HUD resumes right after it,
        # so nothing is counted twice and nothing in between is missed.
        self.last_sequence: dict[str, int] = {}

    async def run(self) -> None:
        """Connect, subscribe, and keep the hub told about the connection; runs until cancelled."""
        while True:
            try:
                await self._run_connected()
            except asyncio.CancelledError:
                raise
            except Exception:  # the HUD must outlive any NATS trouble: start over with a fresh connection
                log.exception("lost the NATS subscriptions; reconnecting in %.0fs", RETRY_MAX_S)
            await self.close()
            await asyncio.sleep(RETRY_MAX_S)

    async def _run_connected(self) -> None:
        self.bus = bus = await self._connect()
        await self.hub.router.subscribe_live(bus)
        followers = [asyncio.create_task(self._follow(bus, spec)) for spec in self.hub.router.streams()]
        try:
            while True:
                for task in followers:
                    error = task.exception() if task.done() else None
                    if error is not None:
                        raise error
                nc = bus.nc
                self.hub.set_nats_state(
                    "connected" if nc.is_connected else "reconnecting" if nc.is_reconnecting else "disconnected"
                )
                await asyncio.sleep(STATE_POLL_S)
        finally:
            for task in followers:
                task.cancel()
            self.hub.streams_followed.clear()

    async def close(self) -> None:
        bus, self.bus = self.bus, None
        if bus is not None:
            try:
                await bus.close()
            except (NatsError, TimeoutError) as exc:
                log.warning("closing the NATS connection failed: %s", exc)

    async def _connect(self) -> Bus:
        delay = 0.5
        while True:
            try:
                bus = await Bus.connect(self.settings.nats, name="zelda-hud")
            except BusError as exc:
                self.hub.set_nats_state("disconnected")
                log.warning("%s; the HUD keeps serving and retries in %.1fs", exc, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, RETRY_MAX_S)
            else:
                self.hub.set_nats_state("connected")
                log.info("connected to NATS at %s", self.settings.nats.url)
                return bus

    async def _follow(self, bus: Bus, spec: StreamSpec) -> None:
        """Attach an ordered consumer to ``spec``'s stream, waiting for the stream to exist."""
        delay = 0.5
        while True:
            try:
                info = await bus.js.stream_info(spec.name)
                policy, start = self._start(spec, info.state.first_seq, info.state.last_seq)
                await self.hub.router.follow(bus, spec, self._stream_callback(spec.name), deliver_policy=policy,
                                             start_sequence=start)
            except NotFoundError:
                log.warning("stream %s does not exist yet (the HUD only reads it; any other service or "
                            "`zelda-rlaif provision` creates it); retrying in %.1fs", spec.name, delay)
            except (NatsError, TimeoutError) as exc:
                log.warning("cannot follow stream %s yet (%s: %s); retrying in %.1fs",
                            spec.name, type(exc).__name__, exc, delay)
            else:
                log.info("following stream %s", spec.name)
                self.hub.streams_followed.add(spec.name)
                return
            await asyncio.sleep(delay)
            delay = min(delay * 2, RETRY_MAX_S)

    def _stream_callback(self, stream: str) -> Callable[[Msg], Awaitable[None]]:
        async def on_message(msg: Msg) -> None:
            self.last_sequence[stream] = msg.metadata.sequence.stream
            self.hub.router.dispatch(msg.subject, msg.data)

        return on_message

    def _start(self, spec: StreamSpec, first_seq: int, last_seq: int) -> tuple[api.DeliverPolicy, int | None]:
        """Where to start reading ``spec``: right after what was folded in, else the last ``replay_events``."""
        replay = self.settings.replay_events
        if spec.name in self.last_sequence:
            return api.DeliverPolicy.BY_START_SEQUENCE, self.last_sequence[spec.name] + 1
        if replay == 0:
            return api.DeliverPolicy.NEW, None
        if last_seq == 0:
            return api.DeliverPolicy.ALL, None
        return api.DeliverPolicy.BY_START_SEQUENCE, max(first_seq, last_seq - replay + 1)
