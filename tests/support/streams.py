"""What tests read off the bus: what JetStream stored on a subject (the durable truth), and what a live
subscriber catches from now on."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, TypeVar

from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js import api

from zelda_rlaif.bus import Bus
from zelda_rlaif.events import Event
from zelda_rlaif.subjects import PIPELINE_STREAM, Topic

E = TypeVar("E", bound=Event)


async def stored_events(bus: Bus, topic: Topic[E], subject: str | None = None, *,
                        stream: str = PIPELINE_STREAM) -> list[E]:
    """Every message stored on ``subject`` (default: the topic's subject, wildcards allowed), oldest first."""
    subject = subject or topic.subject
    info = await bus.js.stream_info(stream, subjects_filter=subject)
    expected = sum((info.state.subjects or {}).values())
    if expected == 0:
        return []
    config = api.ConsumerConfig(ack_policy=api.AckPolicy.NONE, deliver_policy=api.DeliverPolicy.ALL,
                                filter_subject=subject, inactive_threshold=5.0)
    sub = await bus.js.pull_subscribe(subject, stream=stream, config=config)
    found: list[E] = []
    try:
        while len(found) < expected:
            try:
                batch = await sub.fetch(batch=min(256, expected - len(found)), timeout=2.0)
            except NatsTimeoutError:
                break
            found.extend(topic.model.model_validate_json(m.data) for m in batch)
    finally:
        await sub.unsubscribe()
    return found


@dataclass
class Caught(Generic[E]):
    """The events a live subscription has caught so far, in arrival order."""

    events: list[E] = field(default_factory=list)
    subscription: Subscription | None = None

    async def close(self) -> None:
        if self.subscription is not None:
            await self.subscription.unsubscribe()


async def catch_live(bus: Bus, topic: Topic[E], run_id: str | None = None) -> Caught[E]:
    """Subscribe to ``topic`` on core NATS (which also sees what JetStream stores) and keep its events, only
    ``run_id``'s when given. The server knows the subscription when this returns, so nothing published next is
    missed."""
    caught: Caught[E] = Caught()

    async def on_message(msg: Msg) -> None:
        event = topic.model.model_validate_json(msg.data)
        if run_id is None or getattr(event, "run_id", None) == run_id:
            caught.events.append(event)

    caught.subscription = await bus.subscribe_live(topic.subject, on_message)
    await bus.nc.flush()
    return caught
