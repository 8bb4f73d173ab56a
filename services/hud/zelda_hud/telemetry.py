"""Prometheus metrics of the HUD itself (``/metrics``), in a registry of its own per app instance."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, Counter
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from zelda_hud.fanout import Fanout


class Telemetry:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.received = Counter(
            "zelda_hud_messages_received", "Messages received from NATS, by kind", ["kind"], registry=self.registry
        )
        self.invalid = Counter(
            "zelda_hud_messages_invalid",
            "Messages from NATS that did not validate against their event model (ignored by the HUD)",
            ["kind"],
            registry=self.registry,
        )

    def watch_fanout(self, fanout: Fanout, nats_connected: Callable[[], bool]) -> None:
        self.registry.register(_FanoutCollector(fanout, nats_connected))


class _FanoutCollector(Collector):
    """Reads the fan-out's counters at scrape time instead of mirroring every increment."""

    def __init__(self, fanout: Fanout, nats_connected: Callable[[], bool]) -> None:
        self.fanout = fanout
        self.nats_connected = nats_connected

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        totals = self.fanout.totals()
        yield GaugeMetricFamily("zelda_hud_clients", "Connected browsers", value=len(self.fanout))
        yield GaugeMetricFamily("zelda_hud_nats_connected", "1 while connected to NATS",
                                value=1 if self.nats_connected() else 0)
        yield CounterMetricFamily("zelda_hud_frames_sent", "Frames sent to browsers", value=totals.frames_sent)
        yield CounterMetricFamily(
            "zelda_hud_frames_skipped",
            "Frames replaced by a newer one before a browser could take them (slow browser or frame-rate cap)",
            value=totals.frames_skipped,
        )
        yield CounterMetricFamily("zelda_hud_snapshots", "Full snapshots sent to browsers", value=totals.snapshots)
        yield CounterMetricFamily(
            "zelda_hud_client_overflows",
            "Times a browser fell so far behind that its event buffer was replaced by a snapshot",
            value=totals.overflows,
        )
        yield CounterMetricFamily(
            "zelda_hud_slow_disconnects", "Browsers disconnected for accepting nothing within the send timeout",
            value=self.fanout.slow_disconnects,
        )
