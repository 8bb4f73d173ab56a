"""Read back what JetStream stored on a subject: the durable truth, not what a live subscriber caught."""

from __future__ import annotations

from typing import TypeVar

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
