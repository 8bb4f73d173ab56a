"""One local Ray for all trainer tests (starting Ray costs seconds; keep the number of start-ups small)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field

import pytest
from nats.aio.msg import Msg

from zelda_rlaif.bus import Bus
from zelda_rlaif.events import EpochExported, SegmentExported
from zelda_rlaif.subjects import EPOCH_EXPORTED, SEGMENT_EXPORTED

# Env runners read store/NATS secrets from their own environment, which they inherit from this process.
S3_TEST_KEYS = {"ZELDA_STORE_S3_ACCESS_KEY": "test-access-key", "ZELDA_STORE_S3_SECRET_KEY": "test-secret-key"}


@pytest.fixture(scope="session")
def ray_local() -> Iterator[None]:
    os.environ.update(S3_TEST_KEYS)
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             _temp_dir=tempfile.mkdtemp(prefix="ray-tests-"),
             runtime_env={"env_vars": {**S3_TEST_KEYS, "OMP_NUM_THREADS": "1"}})
    yield
    ray.shutdown()


@dataclass
class RunEvents:
    """What the bus announced for one run: its segments and its epochs, in order (``run_events``)."""

    run_id: str
    segments: list[SegmentExported] = field(default_factory=list)
    epochs: list[EpochExported] = field(default_factory=list)
    # Called with every segment of the run as it is announced (to check what must hold at that moment).
    on_segment: Callable[[SegmentExported], None] = lambda event: None

    async def _segment(self, msg: Msg) -> None:
        event = SegmentExported.model_validate_json(msg.data)
        if event.run_id == self.run_id:
            self.on_segment(event)
            self.segments.append(event)

    async def _epoch(self, msg: Msg) -> None:
        event = EpochExported.model_validate_json(msg.data)
        if event.run_id == self.run_id:
            self.epochs.append(event)


@pytest.fixture
async def run_events(bus: Bus, run_id: str) -> AsyncIterator[RunEvents]:
    """Every ``segment.exported`` and ``epoch.exported`` of the test's run while the test runs."""
    events = RunEvents(run_id)
    subscriptions = [await bus.subscribe_live(SEGMENT_EXPORTED.subject, events._segment),
                     await bus.subscribe_live(EPOCH_EXPORTED.subject, events._epoch)]
    yield events
    for subscription in subscriptions:
        await subscription.unsubscribe()
