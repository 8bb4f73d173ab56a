"""Durable pull consumers that never drop a message.

For every message exactly one of these happens:
- the handler returns: the message is acknowledged;
- the payload does not decode or validate, whatever the exception (or its subject is not the consumer's topic),
  or the handler raises ``PermanentFailure``: the message is published to the dead-letter subject with the
  reason, then terminated (no point in retrying);
- the handler raises anything else: it is redelivered after a back-off delay, and on its last delivery
  (``max_deliver``) dead-lettered with the error;
- the process dies mid-message: JetStream redelivers it after ``ack_wait``; if that was the last delivery,
  the max-deliveries advisory is turned into a dead letter by any replica (``watch_max_deliveries``).
The consumer loop itself keeps running whatever a single message does.

A dead letter embeds the payload when it fits in a NATS message; a larger one is stored in the object store
first and the letter names its key. A message is terminated only once its dead letter is published: if storing
or publishing fails, it is handed back to JetStream and dead-lettered on a later delivery.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from nats.aio.msg import Msg
from nats.js.errors import NotFoundError

from zelda_rlaif.bus.client import Bus
from zelda_rlaif.bus.router import InvalidMessage, Router
from zelda_rlaif.errors import ObjectExists
from zelda_rlaif.events import DeadLetter, Event
from zelda_rlaif.logs import log_context
from zelda_rlaif.retry import ServerUnreachable
from zelda_rlaif.storage import ObjectStore, keys
from zelda_rlaif.subjects import DEAD_LETTER, ConsumerSpec, dead_letter_subject

log = logging.getLogger(__name__)

E = TypeVar("E", bound=Event)

REASON_MAX_CHARS = 4000
# Salvaged ids longer than this are not ids: a payload could otherwise smuggle its bulk into the letter's fields.
SALVAGED_ID_MAX_CHARS = 200
# Room in a NATS message for everything of a dead letter but its base64 payload: the reason (JSON-escaped, up to
# 6 bytes a character), the salvaged ids, the other fields and the headers.
LETTER_ENVELOPE_BYTES = 64 * 1024


class PermanentFailure(Exception):
    """Raised by a handler when retrying cannot help (e.g. the segment's objects are missing)."""


@dataclass(frozen=True)
class Delivery:
    """What a handler may want to know about the message it is processing."""

    subject: str
    deliveries: int
    max_deliver: int
    stream_sequence: int | None

    @property
    def is_last(self) -> bool:
        return self.deliveries >= self.max_deliver


Handler = Callable[[E, Delivery], Awaitable[None]]
DeadLetterHook = Callable[[DeadLetter], Awaitable[None]]


def _context_of(payload: bytes) -> dict[str, Any]:
    """Best-effort ids from a payload for logs and dead letters, even when it does not validate."""
    try:
        data = json.loads(payload)
    except Exception:  # whatever the payload makes the parser raise (deeply nested: RecursionError), no ids
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: data[k] for k in ("run_id", "epoch", "segment_id") if _looks_like_an_id(data.get(k))}


def _looks_like_an_id(value: object) -> bool:
    if isinstance(value, str):
        return len(value) <= SALVAGED_ID_MAX_CHARS
    return isinstance(value, int) and not isinstance(value, bool)


def embeddable(payload: bytes, max_payload: int) -> bool:
    """Whether ``payload``, base64-encoded inside a dead letter, fits in a NATS message of ``max_payload`` bytes."""
    return 4 * -(-len(payload) // 3) + LETTER_ENVELOPE_BYTES <= max_payload


async def dead_letter(
    bus: Bus, store: ObjectStore, spec: ConsumerSpec[Any], subject: str, payload: bytes, reason: str,
    deliveries: int, stream_sequence: int | None,
) -> DeadLetter:
    """Publish the dead letter of a message; raises (and the caller must not terminate the message) when its
    payload could not be stored or the letter not published."""
    ids = _context_of(payload)
    payload_key = None
    if not embeddable(payload, bus.nc.max_payload):
        payload_key = keys.dead_letter_payload(spec.stream, spec.durable, stream_sequence,
                                               hashlib.sha256(payload).hexdigest())
        await asyncio.to_thread(_store_once, store, payload_key, payload)
    reason = reason[:REASON_MAX_CHARS]
    letter = DeadLetter(
        original_subject=subject,
        stream=spec.stream,
        consumer=spec.durable,
        stream_sequence=stream_sequence,
        deliveries=deliveries,
        reason=reason,
        payload=b"" if payload_key else payload,
        payload_key=payload_key,
        run_id=str(ids["run_id"]) if "run_id" in ids else None,
        epoch=ids["epoch"] if isinstance(ids.get("epoch"), int) else None,
        segment_id=str(ids["segment_id"]) if "segment_id" in ids else None,
    )
    await bus.publish(DEAD_LETTER, letter, subject=dead_letter_subject(subject))
    log.error("dead-lettered %s after %d deliveries%s: %s", subject, deliveries,
              f" (payload stored as {payload_key})" if payload_key else "", reason[:500])
    return letter


def _store_once(store: ObjectStore, key: str, payload: bytes) -> None:
    # The key holds the payload's digest: if it exists, it holds these very bytes (a repeated dead-lettering).
    with contextlib.suppress(ObjectExists):
        store.put_bytes(key, payload, exclusive=True)


async def dead_letter_payload(letter: DeadLetter, store: ObjectStore) -> bytes:
    """The payload of ``letter``, embedded or stored; raises ``ObjectNotFound`` if a stored one was deleted."""
    if letter.payload_key is None:
        return letter.payload
    return await asyncio.to_thread(store.get_bytes, letter.payload_key)


async def _heartbeat(msg: Msg, every_s: float) -> None:
    """Tell JetStream we are still working so a long handler is not redelivered to another replica."""
    while True:
        await asyncio.sleep(every_s)
        with contextlib.suppress(Exception):
            await msg.in_progress()


def _router(
    bus: Bus, store: ObjectStore, spec: ConsumerSpec[E], handler: Handler[E], on_dead_letter: DeadLetterHook | None
) -> Router[[Msg, Delivery], Awaitable[None]]:
    """Routes ``spec``'s messages to ``handler`` and settles each one: ack, redeliver, or dead-letter."""

    async def give_up(msg: Msg, delivery: Delivery, reason: str) -> None:
        """Dead-letter with the reason, then terminate: JetStream must not deliver it again."""
        try:
            letter = await dead_letter(bus, store, spec, msg.subject, msg.data, reason, delivery.deliveries,
                                       delivery.stream_sequence)
        except Exception:
            # Not dead-lettered (the store or NATS failed): hand it back so that a later delivery tries again
            # (after the last one, the max-deliveries watcher does); terminating now would lose it.
            with contextlib.suppress(Exception):
                await msg.nak(delay=spec.redelivery_delay(delivery.deliveries).total_seconds())
            raise
        await msg.term()
        if on_dead_letter:
            await on_dead_letter(letter)

    async def reject(invalid: InvalidMessage, msg: Msg, delivery: Delivery) -> None:
        await give_up(msg, delivery, invalid.reason)

    async def settle(event: E, msg: Msg, delivery: Delivery) -> None:
        beat = asyncio.create_task(_heartbeat(msg, max(spec.ack_wait.total_seconds() / 3, 0.2)))
        try:
            await handler(event, delivery)
        except asyncio.CancelledError:
            # Shutting down: let JetStream redeliver to another replica right away.
            with contextlib.suppress(Exception):
                await msg.nak()
            raise
        except ServerUnreachable:
            raise  # past the outage limit the service stops; JetStream redelivers the message after ack_wait
        except Exception as exc:
            if isinstance(exc, PermanentFailure) or delivery.is_last:
                await give_up(msg, delivery, f"{type(exc).__name__}: {exc}")
            else:
                delay = spec.redelivery_delay(delivery.deliveries).total_seconds()
                log.warning("delivery %d/%d of %s failed (%s: %s); redelivering in %.1fs",
                            delivery.deliveries, spec.max_deliver, msg.subject, type(exc).__name__, exc, delay)
                await msg.nak(delay=delay)
        else:
            await msg.ack()
        finally:
            beat.cancel()

    router: Router[[Msg, Delivery], Awaitable[None]] = Router(reject)
    return router.route(spec.topic, settle)


async def _process(spec: ConsumerSpec[Any], router: Router[[Msg, Delivery], Awaitable[None]], msg: Msg) -> None:
    meta = msg.metadata
    delivery = Delivery(msg.subject, meta.num_delivered, spec.max_deliver, meta.sequence.stream)
    with log_context(consumer=spec.durable, **_context_of(msg.data)):
        await router.dispatch(msg.subject, msg.data, msg, delivery)


async def run_consumer(
    bus: Bus,
    spec: ConsumerSpec[E],
    handler: Handler[E],
    stop: asyncio.Event,
    *,
    store: ObjectStore,
    concurrency: int = 1,
    fetch_timeout_s: float = 1.0,
    on_dead_letter: DeadLetterHook | None = None,
) -> None:
    """Consume ``spec`` until ``stop`` is set, with up to ``concurrency`` messages in flight. ``store`` keeps the
    payloads of dead letters too large to embed."""
    await bus.ensure_consumer(spec)
    sub = await bus.js.pull_subscribe_bind(durable=spec.durable, stream=spec.stream)
    router = _router(bus, store, spec, handler, on_dead_letter)
    watcher = asyncio.create_task(watch_max_deliveries(bus, store, spec, stop, on_dead_letter))
    slots = asyncio.Semaphore(concurrency)
    in_flight: set[asyncio.Task[None]] = set()
    unreachable: list[ServerUnreachable] = []  # a handler's store or bus stayed away past its limit: stop

    async def guarded(msg: Msg) -> None:
        try:
            await _process(spec, router, msg)
        except asyncio.CancelledError:
            raise
        except ServerUnreachable as exc:
            unreachable.append(exc)
        except Exception:  # a failure to ack/publish must not kill the loop; JetStream redelivers
            log.exception("could not settle a message on %s; it will be redelivered", spec.durable)
        finally:
            slots.release()

    try:
        while not stop.is_set():
            if unreachable:
                raise unreachable[0]
            # One message per free slot: fetch returns as soon as one is available, and a slot is never
            # held by a message waiting in a local buffer while another replica sits idle.
            await slots.acquire()
            try:
                # While NATS is away this waits (one warning per outage) and raises ServerUnreachable past the
                # limit, which stops the service.
                msgs = await bus.fetch(sub, 1, fetch_timeout_s)
            except ServerUnreachable:
                raise
            except Exception as exc:  # an error NATS does not mean as an outage: log it and go on
                slots.release()
                log.warning("fetch on %s failed (%s); retrying", spec.durable, exc)
                await asyncio.sleep(0.5)
                continue
            if not msgs:
                slots.release()
            for msg in msgs:
                task = asyncio.create_task(guarded(msg))
                in_flight.add(task)
                task.add_done_callback(in_flight.discard)
    finally:
        watcher.cancel()
        if in_flight:
            await asyncio.gather(*in_flight, return_exceptions=True)
        with contextlib.suppress(Exception):
            await sub.unsubscribe()


async def watch_max_deliveries(
    bus: Bus, store: ObjectStore, spec: ConsumerSpec[Any], stop: asyncio.Event, on_dead_letter: DeadLetterHook | None
) -> None:
    """Dead-letter messages whose last delivery was never settled (the replica died holding it).

    JetStream announces them on an advisory subject; a queue group makes one replica act on each, and the
    dead letter's de-duplication id makes a second one harmless.
    """
    subject = f"$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.{spec.stream}.{spec.durable}"

    async def on_advisory(msg: Msg) -> None:
        try:
            advisory = json.loads(msg.data)
            seq = int(advisory["stream_seq"])
            original = await bus.js.get_msg(spec.stream, seq)
        except (ValueError, KeyError, NotFoundError) as exc:
            log.error("max-deliveries advisory for %s could not be resolved: %s", spec.durable, exc)
            return
        try:
            letter = await dead_letter(
                bus, store, spec, original.subject or spec.filter_subject, original.data or b"",
                f"delivered {advisory.get('deliveries', spec.max_deliver)} times without being acknowledged "
                "(the consumer crashed, exceeded ack_wait or could not dead-letter it each time)",
                int(advisory.get("deliveries", spec.max_deliver)), seq,
            )
        except Exception as exc:
            log.error("could not dead-letter message %d of stream %s (%s: %s); it stays in the stream",
                      seq, spec.stream, type(exc).__name__, exc)
            return
        if on_dead_letter:
            await on_dead_letter(letter)

    sub = await bus.subscribe_live(subject, on_advisory, queue=f"{spec.durable}-advisories")
    try:
        await stop.wait()
    finally:
        with contextlib.suppress(Exception):
            await sub.unsubscribe()
