"""Topic routing, the one way to read the bus: subject -> Topic -> payload validated into its model -> handler.

Every reader routes through a ``Router``: the durable consumers, the HUD and ``zelda-rlaif up``'s watch. What a
message that cannot be routed means differs, so each reader says it in its ``on_invalid`` hook: a consumer
dead-letters it, the HUD counts it and logs now and then, the watch logs it and goes on.

Handlers may take arguments after the event (a consumer passes the message and its delivery); every handler of
one router takes the same ones, and ``dispatch`` passes them on. A handler for ``Topic[SegmentJudged]`` is typed
to receive a ``SegmentJudged``.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Concatenate, Generic, ParamSpec, Self, TypeVar

from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js import api
from pydantic import ValidationError
from pydantic_core import ErrorDetails

from zelda_rlaif.bus.client import Bus
from zelda_rlaif.events import Event
from zelda_rlaif.subjects import STREAMS, StreamSpec, Topic

P = ParamSpec("P")
R = TypeVar("R")
E = TypeVar("E", bound=Event)

MessageCallback = Callable[[Msg], Awaitable[None]]

# Live events are only worth reading while fresh: cap what nats-py buffers for a live subscription if the loop
# ever stalls, so that it drops old frames (reported as a slow-consumer warning) instead of piling them up.
LIVE_BUFFER_BYTES = 16 * 1024 * 1024
# One entry per concrete subject seen: per env's frame subject, per judge kind, per dead-lettered subject.
SUBJECT_CACHE_SIZE = 4096


def subject_matches(pattern: str, subject: str) -> bool:
    """NATS wildcard matching: ``*`` is exactly one token, a trailing ``>`` one or more."""
    wanted, tokens = pattern.split("."), subject.split(".")
    for i, part in enumerate(wanted):
        if part == ">":
            return len(tokens) > i
        if i >= len(tokens) or (part != "*" and part != tokens[i]):
            return False
    return len(tokens) == len(wanted)


@dataclass(frozen=True)
class InvalidMessage:
    """A message no handler can take: its subject matches no routed topic, or its payload is not the topic's model."""

    subject: str
    data: bytes
    topic: Topic[Event] | None  # None: no routed topic matches the subject
    # Usually a ValidationError; anything else a payload made decoding raise (a validator's TypeError, ...).
    error: Exception | None = None

    def errors(self, limit: int | None = None) -> list[ErrorDetails]:
        if self.error is None:
            return []
        if isinstance(self.error, ValidationError):
            return self.error.errors(include_url=False)[:limit]
        detail = ErrorDetails(type="undecodable", loc=(), msg=f"{type(self.error).__name__}: {self.error}",
                              input=None)
        return [detail][:limit]

    @property
    def reason(self) -> str:
        if self.topic is None:
            return f"no routed topic matches subject {self.subject}"
        return f"invalid {self.topic.model.__name__} payload: {self.errors()}"


class Router(Generic[P, R]):
    """Routes a message on a concrete subject to the handler of the first routed topic whose pattern matches it."""

    def __init__(self, on_invalid: Callable[Concatenate[InvalidMessage, P], R]) -> None:
        self._on_invalid = on_invalid
        self._handlers: dict[Topic[Event], Callable[..., R]] = {}
        self._topic_of = functools.lru_cache(maxsize=SUBJECT_CACHE_SIZE)(self._match)

    def route(self, topic: Topic[E], handler: Callable[Concatenate[E, P], R]) -> Self:
        if topic in self._handlers:
            raise ValueError(f"{topic.subject} is routed twice; give each topic one handler")
        self._handlers[topic] = handler
        self._topic_of.cache_clear()
        return self

    @property
    def topics(self) -> tuple[Topic[Event], ...]:
        return tuple(self._handlers)

    def topic_of(self, subject: str) -> Topic[Event] | None:
        return self._topic_of(subject)

    def _match(self, subject: str) -> Topic[Event] | None:
        return next((topic for topic in self._handlers if subject_matches(topic.subject, subject)), None)

    def dispatch(self, subject: str, data: bytes, *args: P.args, **kwargs: P.kwargs) -> R:
        """Validate ``data`` into the model of ``subject``'s topic and return what its handler returns."""
        topic = self.topic_of(subject)
        if topic is None:
            return self._on_invalid(InvalidMessage(subject, data, None), *args, **kwargs)
        try:
            event = topic.model.model_validate_json(data)
        except Exception as exc:  # whatever a payload makes decoding raise, it is that message's fault alone
            return self._on_invalid(InvalidMessage(subject, data, topic, exc), *args, **kwargs)
        return self._handlers[topic](event, *args, **kwargs)

    # Subscribing, for routers whose handlers take the event alone and return nothing to await. Without
    # ``on_message`` a message is dispatched as it comes, on the event loop, in the subscription's callback.

    async def _dispatch_message(self: Reader, msg: Msg) -> None:
        self.dispatch(msg.subject, msg.data)

    async def subscribe(self: Reader, bus: Bus, on_message: MessageCallback | None = None) -> list[Subscription]:
        """Every routed topic from now on: live ones on core NATS, durable ones through their streams."""
        subscriptions = await self.subscribe_live(bus, on_message)
        for stream in self.streams():
            subscriptions.append(await self.follow(bus, stream, on_message))
        return subscriptions

    async def subscribe_live(self: Reader, bus: Bus, on_message: MessageCallback | None = None) -> list[Subscription]:
        """A core-NATS subscription per routed live topic: lossy, so a slow reader costs publishers nothing."""
        callback = on_message or self._dispatch_message
        return [
            await bus.subscribe_live(topic.subject, callback, pending_bytes_limit=LIVE_BUFFER_BYTES)
            for topic in self.topics if not topic.durable
        ]

    def streams(self) -> list[StreamSpec]:
        """The streams that store the routed durable topics."""
        durable = [topic for topic in self.topics if topic.durable]
        for topic in durable:
            if not any(topic.subject in stream.subjects for stream in STREAMS):
                raise ValueError(f"no stream stores {topic.subject}; declare it in zelda_rlaif.subjects.STREAMS")
        return [stream for stream in STREAMS if any(topic.subject in stream.subjects for topic in durable)]

    async def follow(
        self: Reader,
        bus: Bus,
        stream: StreamSpec,
        on_message: MessageCallback | None = None,
        *,
        deliver_policy: api.DeliverPolicy = api.DeliverPolicy.NEW,
        start_sequence: int | None = None,
    ) -> Subscription:
        """An ordered consumer on ``stream``, filtered on the routed topics it stores.

        It is ephemeral and unacknowledged, so a reader can never take or delay a service's work; messages arrive in
        stream order (an epoch's end after its segments), each fact once however often it was published, and
        nats-py recreates the consumer from the last sequence it saw after a reconnect.
        """
        subjects = [topic.subject for topic in self.topics if topic.durable and topic.subject in stream.subjects]
        if not subjects:
            raise ValueError(f"no routed topic is stored in stream {stream.name}")
        config = api.ConsumerConfig(filter_subjects=subjects, deliver_policy=deliver_policy,
                                    opt_start_seq=start_sequence)
        subscription: Subscription = await bus.js.subscribe(
            subjects[0], stream=stream.name, cb=on_message or self._dispatch_message, ordered_consumer=True,
            config=config,
        )
        return subscription


# A router whose handlers take the event alone: the kind that can subscribe on its own.
Reader = Router[[], Any]
