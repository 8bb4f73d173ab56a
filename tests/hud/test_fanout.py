"""One browser's outbox: newest frame wins, bounded events, snapshot on overflow, per-env frame-rate cap."""

from __future__ import annotations

import asyncio
import json

import pytest

from zelda_hud import wire
from zelda_hud.fanout import ClientChannel, Fanout, SlowClient


class Browser:
    """The receiving end of a pump: records messages, and can be made to stop reading."""

    def __init__(self) -> None:
        self.received: list[str] = []
        self.reading = asyncio.Event()
        self.reading.set()

    async def send(self, message: str) -> None:
        await self.reading.wait()
        self.received.append(message)


def snapshot(channel: ClientChannel) -> str:
    return "snapshot"


def start(channel: ClientChannel, browser: Browser, timeout_s: float = 5.0) -> asyncio.Task[None]:
    return asyncio.create_task(channel.pump(browser.send, snapshot, send_timeout_s=timeout_s))


async def settle(channel: ClientChannel) -> None:
    """Until the pump has sent everything that is due."""
    for _ in range(200):
        await asyncio.sleep(0.005)
        if not channel.slots and not channel.events and not channel.needs_snapshot and not channel.sending:
            return


async def test_snapshot_first_then_events_in_order_and_newest_frame_only() -> None:
    fanout = Fanout(max_events=10)
    channel = fanout.open()
    browser = Browser()
    browser.reading.clear()
    pump = start(channel, browser)
    await asyncio.sleep(0.01)  # now blocked sending the snapshot
    for step in range(5):
        fanout.frame("env-0", f"frame {step}", default_env="env-0", min_interval_s=0)
        fanout.frame("env-1", f"other {step}", default_env="env-0", min_interval_s=0)  # not watched
    fanout.event("verdict 1")
    fanout.event("verdict 2")
    browser.reading.set()
    await settle(channel)
    pump.cancel()
    assert browser.received == ["snapshot", "verdict 1", "verdict 2", "frame 4"]
    assert channel.stats.frames_skipped == 4 and channel.stats.frames_sent == 1


async def test_a_browser_far_behind_gets_a_snapshot_instead_of_a_backlog() -> None:
    fanout = Fanout(max_events=3)
    channel = fanout.open()
    browser = Browser()
    pump = start(channel, browser)
    await settle(channel)
    browser.reading.clear()
    for i in range(10):
        fanout.event(f"event {i}")
    assert len(channel.events) <= 3  # memory per browser stays bounded
    browser.reading.set()
    await settle(channel)
    pump.cancel()
    assert browser.received[0] == "snapshot" and browser.received[-1] == "snapshot"
    assert channel.stats.overflows == 1


async def test_frame_rate_is_capped_per_env() -> None:
    channel = ClientChannel(max_events=10)
    channel.watch_all = True
    browser = Browser()
    pump = start(channel, browser)
    await settle(channel)
    channel.offer_slot("frame:a", "a1", min_interval_s=60)
    await settle(channel)
    channel.offer_slot("frame:a", "a2", min_interval_s=60)  # too soon after a1: held back
    channel.offer_slot("frame:b", "b1", min_interval_s=60)  # another env has its own budget
    await asyncio.sleep(0.1)
    pump.cancel()
    assert browser.received == ["snapshot", "a1", "b1"]
    assert "frame:a" in channel.slots


async def test_a_browser_that_takes_nothing_is_let_go() -> None:
    channel = ClientChannel(max_events=10)
    browser = Browser()
    browser.reading.clear()
    with pytest.raises(SlowClient):
        await channel.pump(browser.send, snapshot, send_timeout_s=0.05)


def test_watching() -> None:
    channel = ClientChannel(max_events=1)
    assert channel.wants_frame("env-0", default_env="env-0") and not channel.wants_frame("env-1", "env-0")
    channel.watch = frozenset({"env-1"})
    assert channel.wants_frame("env-1", "env-0") and not channel.wants_frame("env-0", "env-0")
    channel.watch_all = True
    assert channel.wants_frame("env-7", "env-0")


def test_messages_are_valid_json_even_with_nan() -> None:
    message = json.loads(wire.message("metrics", {"mean": float("nan"), "rows": [float("inf"), 1.5]}))
    assert message == {"type": "metrics", "data": {"mean": None, "rows": [None, 1.5]}}
