"""NATS JetStream bus: provisioning, de-duplicated publishing, topic routing, consumers that never drop a message."""

from zelda_rlaif.bus.client import Bus
from zelda_rlaif.bus.consumer import Delivery, PermanentFailure, run_consumer
from zelda_rlaif.bus.live_publisher import LivePublisher
from zelda_rlaif.bus.router import InvalidMessage, Router

__all__ = ["Bus", "Delivery", "InvalidMessage", "LivePublisher", "PermanentFailure", "Router", "run_consumer"]
