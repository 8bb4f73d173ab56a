"""NATS JetStream bus: provisioning, de-duplicated publishing, and consumers that never drop a message."""

from zelda_rlaif.bus.client import Bus
from zelda_rlaif.bus.consumer import Delivery, PermanentFailure, run_consumer

__all__ = ["Bus", "Delivery", "PermanentFailure", "run_consumer"]
