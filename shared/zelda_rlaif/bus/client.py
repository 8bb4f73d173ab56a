"""A thin, typed wrapper over nats-py: connect, provision, publish durable and live events, key-value."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import nats
from nats import errors as nats_errors
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.aio.subscription import DEFAULT_SUB_PENDING_BYTES_LIMIT, Subscription
from nats.js import JetStreamContext, api
from nats.js import errors as js_errors
from nats.js.errors import BadRequestError, NotFoundError
from nats.js.kv import KeyValue

from zelda_rlaif.errors import BusError
from zelda_rlaif.events import Event
from zelda_rlaif.retry import Retrier
from zelda_rlaif.settings import NatsSettings
from zelda_rlaif.subjects import COORDINATION_BUCKET, STREAMS, ConsumerSpec, StreamSpec, Topic

log = logging.getLogger(__name__)

# What NATS answers while it is away or restarting: the connection is down or reconnecting, nobody answers the
# JetStream request (no responders, the stream leader not back yet) or the answer never comes.
_TRANSIENT = (
    nats_errors.TimeoutError, nats_errors.NoRespondersError, nats_errors.ConnectionReconnectingError,
    nats_errors.OutboundBufferLimitError, nats_errors.StaleConnectionError, nats_errors.FlushTimeoutError,
    nats_errors.UnexpectedEOF, js_errors.NoStreamResponseError, js_errors.ServiceUnavailableError,
    js_errors.ServerError, TimeoutError, ConnectionError,
)


def is_transient_nats_error(exc: BaseException) -> bool:
    return isinstance(exc, _TRANSIENT)


def nats_retrier(settings: NatsSettings) -> Retrier:
    return Retrier(f"NATS at {settings.url}", is_transient_nats_error, settings.outage_limit_s,
                   "ZELDA_NATS_OUTAGE_LIMIT_S", max_delay_s=settings.retry_max_delay_s)


class Bus:
    """One NATS connection with its JetStream context. Create with ``await Bus.connect(...)``."""

    def __init__(self, nc: NatsClient, settings: NatsSettings | None = None) -> None:
        self.nc = nc
        self.js: JetStreamContext = nc.jetstream()
        self._kv: KeyValue | None = None
        self.settings = settings or NatsSettings()
        self._retrier = nats_retrier(self.settings)

    @classmethod
    async def connect(cls, settings: NatsSettings, name: str) -> Bus:
        options: dict[str, Any] = {
            "servers": [s.strip() for s in settings.url.split(",")],
            "name": name,
            "connect_timeout": settings.connect_timeout_s,
            # Keep reconnecting for as long as the process lives: a restarting NATS is not a reason to die.
            "max_reconnect_attempts": -1,
            "allow_reconnect": True,
        }
        if settings.user:
            options["user"] = settings.user
        if settings.password:
            options["password"] = settings.password.get_secret_value()
        if settings.token:
            options["token"] = settings.token.get_secret_value()

        # One warning per outage, not one per reconnect attempt (every 2 s while NATS is away).
        warned = False

        async def _quiet(exc: Exception) -> None:
            nonlocal warned
            if not warned:
                log.warning("NATS connection problem: %s; reconnecting until it is back", exc)
            warned = True

        async def _reconnected() -> None:
            nonlocal warned
            if warned:
                log.warning("reconnected to NATS at %s", settings.url)
            warned = False

        try:
            nc = await nats.connect(**options, error_cb=_quiet, reconnected_cb=_reconnected)
        except Exception as exc:  # nats raises several unrelated types for "cannot connect"
            raise BusError(
                f"cannot connect to NATS at {settings.url} ({exc.__class__.__name__}: {exc}); "
                "start nats-server with -js or set ZELDA_NATS_URL"
            ) from exc
        return cls(nc, settings)

    async def close(self) -> None:
        if self.nc.is_connected:
            await self.nc.drain()
        elif not self.nc.is_closed:  # NATS is away: nothing to drain to, and drain() refuses while reconnecting
            await self.nc.close()

    # Provisioning: idempotent, so every service may call it at start in any order.

    async def provision(self) -> None:
        for spec in STREAMS:
            await self._ensure_stream(spec)
        await self.coordination()

    async def _ensure_stream(self, spec: StreamSpec) -> None:
        config = api.StreamConfig(
            name=spec.name,
            subjects=list(spec.subjects),
            retention=api.RetentionPolicy.LIMITS,
            storage=api.StorageType.FILE,
            max_age=spec.max_age.total_seconds(),
            duplicate_window=spec.duplicate_window.total_seconds(),
        )
        try:
            await self.js.stream_info(spec.name)
        except NotFoundError:
            await self.js.add_stream(config)
            log.info("created stream %s", spec.name)
        else:
            await self.js.update_stream(config)

    async def ensure_consumer(self, spec: ConsumerSpec[Any]) -> None:
        config = api.ConsumerConfig(
            durable_name=spec.durable,
            ack_policy=api.AckPolicy.EXPLICIT,
            ack_wait=spec.ack_wait.total_seconds(),
            max_deliver=spec.max_deliver,
            filter_subject=spec.filter_subject,
            max_ack_pending=spec.max_ack_pending,
            deliver_policy=api.DeliverPolicy.ALL,
        )
        try:
            await self.js.add_consumer(spec.stream, config)
        except BadRequestError as exc:
            raise BusError(
                f"cannot create consumer {spec.durable!r} on stream {spec.stream!r}: {exc.description}. "
                "If its settings changed, delete the old consumer (nats consumer rm) and restart."
            ) from exc

    async def coordination(self) -> KeyValue:
        """The key-value bucket services use to agree on once-only actions without in-process state."""
        if self._kv is None:
            try:
                self._kv = await self.js.key_value(COORDINATION_BUCKET)
            except NotFoundError:
                self._kv = await self.js.create_key_value(bucket=COORDINATION_BUCKET, history=1)
        return self._kv

    # Publishing

    async def publish(self, topic: Topic[Any], event: Event, subject: str | None = None) -> bool:
        """Publish a durable event, retrying while NATS is unreachable (up to ``outage_limit_s``, then
        ``ServerUnreachable``); returns False when JetStream recognised it as a duplicate.

        Retrying is safe because the ``Nats-Msg-Id`` header (the event's ``dedup_id``) lets JetStream store the
        event once however many attempts reach it. An attempt that timed out may have been stored (or still be
        buffered for the reconnect), so a later attempt's "duplicate" is most likely that attempt's own: then the
        publish counts as fresh.
        """
        if not isinstance(event, topic.model):
            raise TypeError(f"{topic.subject} carries {topic.model.__name__}, not {type(event).__name__}")
        dedup = event.dedup_id()
        headers = {"Nats-Msg-Id": dedup} if dedup else None
        payload = event.model_dump_json().encode()
        attempts = 0

        async def attempt() -> api.PubAck:
            nonlocal attempts
            attempts += 1
            return await self.js.publish(subject or topic.subject, payload, headers=headers,
                                         timeout=self.settings.publish_timeout_s)

        ack = await self._retrier.acall(attempt)
        return not ack.duplicate or attempts > 1

    async def fetch(self, sub: JetStreamContext.PullSubscription, batch: int, timeout_s: float) -> list[Msg]:
        """Up to ``batch`` messages of a pull subscription; [] when none came within ``timeout_s``. While NATS is
        unreachable it waits as ``publish`` does (one warning per outage, ``ServerUnreachable`` past the limit)."""

        async def attempt() -> list[Msg]:
            try:
                return await sub.fetch(batch=batch, timeout=timeout_s)
            except nats_errors.TimeoutError:
                if self.nc.is_connected:
                    return []  # nothing to fetch: not an outage
                raise

        return await self._retrier.acall(attempt)

    async def publish_live(self, subject: str, event: Event) -> None:
        """Fire-and-forget on core NATS: nobody listening or a slow listener costs the publisher nothing."""
        await self.nc.publish(subject, event.model_dump_json().encode())

    async def subscribe_live(
        self, subject: str, callback: Callable[[Msg], Awaitable[None]], queue: str = "",
        pending_bytes_limit: int = DEFAULT_SUB_PENDING_BYTES_LIMIT,
    ) -> Subscription:
        return await self.nc.subscribe(subject, queue=queue, cb=callback, pending_bytes_limit=pending_bytes_limit)
