"""Publishes and store operations ride out their server being away, against the real servers: a private
nats-server stopped and restarted on its port and store dir, and a TCP proxy in front of the S3 test server that
refuses or hangs. Outages are seconds long here (the settings shrink timeouts and limits); past the limit the
call stops with one sentence naming the server."""

from __future__ import annotations

import asyncio
import logging
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse

import pytest

from tests.support.streams import stored_events
from tests.support.tcp_proxy import TcpProxy
from tests.support.waiting import free_port, wait_until
from zelda_rlaif import errors
from zelda_rlaif.bus import Bus
from zelda_rlaif.bus.consumer import Delivery, run_consumer
from zelda_rlaif.embedded_nats import EmbeddedNats
from zelda_rlaif.events import EpochExported
from zelda_rlaif.retry import ServerUnreachable, current_outages
from zelda_rlaif.settings import NatsSettings, StoreSettings
from zelda_rlaif.storage import ObjectStore, keys, open_store
from zelda_rlaif.storage.file import FileStore
from zelda_rlaif.storage.retrying import RetryingStore, store_retrier
from zelda_rlaif.subjects import EPOCH_EXPORTED, PIPELINE_STREAM, ConsumerSpec
from zelda_trainer.progress import waiting_line

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def restartable_nats(tmp_path: Path) -> Iterator[EmbeddedNats]:
    """A private nats-server on a fixed port, so that a restarted one is where the clients left it."""
    server = EmbeddedNats(tmp_path / "nats", port=free_port())
    server.start()
    yield server
    server.stop()


def quick_nats(url: str, limit_s: float = 120.0) -> NatsSettings:
    return NatsSettings(url=url, publish_timeout_s=0.5, retry_max_delay_s=0.5, outage_limit_s=limit_s)


def outage_lines(caplog: pytest.LogCaptureFixture, server: str) -> tuple[int, int]:
    """(warnings that ``server`` is unreachable, lines that it is back)."""
    records = [r.getMessage() for r in caplog.records if r.name == "zelda_rlaif.retry" and server in r.getMessage()]
    return sum("is unreachable" in m for m in records), sum("reachable again" in m for m in records)


async def test_publish_waits_for_a_restarted_nats_and_is_stored_once(
    restartable_nats: EmbeddedNats, run_id: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="zelda_rlaif.retry")
    bus = await Bus.connect(quick_nats(restartable_nats.url), name="outage-test")
    try:
        await bus.provision()
        event = EpochExported(run_id=run_id, epoch=0, segments_exported=3, env_steps=100, episodes=1)
        restartable_nats.stop()
        publishing = asyncio.create_task(bus.publish(EPOCH_EXPORTED, event))
        await wait_until(lambda: any("NATS" in o.server for o in current_outages()), 30, "the outage is noticed")
        assert "waiting for NATS at " + restartable_nats.url in waiting_line()
        await asyncio.sleep(2)  # several attempts fail, each one buffered by nats-py for the reconnect
        assert not publishing.done()
        restartable_nats.start()
        assert await asyncio.wait_for(publishing, 120) is True
        assert await stored_events(bus, EPOCH_EXPORTED) == [event]
        assert outage_lines(caplog, restartable_nats.url) == (1, 1)
        assert waiting_line() == ""
    finally:
        await bus.close()


async def test_publish_past_the_outage_limit_stops_with_one_sentence(
    restartable_nats: EmbeddedNats, run_id: str
) -> None:
    bus = await Bus.connect(quick_nats(restartable_nats.url, limit_s=1.5), name="outage-limit-test")
    try:
        await bus.provision()
        restartable_nats.stop()
        with pytest.raises(ServerUnreachable) as raised:
            await bus.publish(EPOCH_EXPORTED, EpochExported(run_id=run_id, epoch=0, segments_exported=0,
                                                            env_steps=0, episodes=0))
        message = str(raised.value)
        assert f"NATS at {restartable_nats.url}" in message
        assert "ZELDA_NATS_OUTAGE_LIMIT_S" in message
        assert "zelda-rlaif up --resume --run-dir" in message
        assert "\n" not in message
        restartable_nats.start()
        await wait_until(lambda: bus.nc.is_connected, 60, "the client reconnects")
        await bus.publish(EPOCH_EXPORTED, EpochExported(run_id=run_id, epoch=1, segments_exported=0, env_steps=0,
                                                        episodes=0))  # the connection itself came back
    finally:
        await bus.close()


@pytest.fixture
def s3_proxy(s3_endpoint: str) -> Iterator[TcpProxy]:
    upstream = urlparse(s3_endpoint)
    assert upstream.hostname and upstream.port
    with TcpProxy(upstream.hostname, upstream.port) as proxy:
        yield proxy


def proxied_store_settings(proxy: TcpProxy, limit_s: float = 120.0) -> StoreSettings:
    return StoreSettings(
        url=f"s3://outage-{uuid.uuid4().hex[:10]}/prefix", s3_endpoint=f"http://{proxy.host}:{proxy.port}",
        s3_access_key="test-access-key", s3_secret_key="test-secret-key",
        s3_connect_timeout_s=0.5, s3_read_timeout_s=0.5, retry_max_delay_s=0.5, outage_limit_s=limit_s,
    )


def run_in_thread(fn: object) -> tuple[threading.Thread, list[object]]:
    """Start ``fn()`` on a thread; the list receives its result or the exception it raised."""
    outcome: list[object] = []

    def target() -> None:
        try:
            outcome.append(fn())  # type: ignore[operator]
        except Exception as exc:
            outcome.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread, outcome


@pytest.mark.parametrize("fault", ["refuse", "hang"])
async def test_store_put_completes_after_the_store_comes_back(
    s3_proxy: TcpProxy, fault: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="zelda_rlaif.retry")
    settings = proxied_store_settings(s3_proxy)
    store = open_store(settings, create_bucket=True)
    key = keys.segment_manifest("run-outage", 0, "seg-1")
    s3_proxy.mode = fault  # type: ignore[assignment]
    thread, outcome = run_in_thread(lambda: store.put_bytes(key, b"written during an outage"))
    await wait_until(lambda: any(settings.url in o.server for o in current_outages()), 30, "the outage is noticed")
    await asyncio.sleep(1.5)
    assert thread.is_alive()
    s3_proxy.mode = "pass"
    await asyncio.to_thread(thread.join, 120)
    assert outcome == [None]
    assert store.get_bytes(key) == b"written during an outage"
    assert list(store.list(keys.epoch_segments("run-outage", 0))) == [key]
    assert outage_lines(caplog, settings.url) == (1, 1)


def test_store_past_the_outage_limit_stops_with_one_sentence(s3_proxy: TcpProxy) -> None:
    settings = proxied_store_settings(s3_proxy, limit_s=1.5)
    store = open_store(settings, create_bucket=True)
    s3_proxy.mode = "hang"
    with pytest.raises(ServerUnreachable) as raised:
        store.get_bytes("anything")
    message = str(raised.value)
    assert settings.url in message and f"http://{s3_proxy.host}:{s3_proxy.port}" in message
    assert "ZELDA_STORE_OUTAGE_LIMIT_S" in message and "zelda-rlaif up --resume --run-dir" in message
    assert "\n" not in message


def test_missing_objects_are_not_retried(s3_proxy: TcpProxy) -> None:
    store = open_store(proxied_store_settings(s3_proxy, limit_s=1.5), create_bucket=True)
    with pytest.raises(errors.ObjectNotFound):
        store.get_bytes("no/such/key")
    assert current_outages() == []


class LostAnswers(FileStore):
    """A real file store whose first ``lose`` writes land but answer with a connection error, as when a PUT
    reached the server and the connection died before its answer came back."""

    def __init__(self, root: Path, lose: int) -> None:
        super().__init__(root)
        self.lose = lose

    def put_bytes(self, key: str, data: bytes, content_type: str = "application/octet-stream", *,
                  exclusive: bool = False) -> None:
        super().put_bytes(key, data, content_type, exclusive=exclusive)
        if self.lose > 0:
            from botocore.exceptions import EndpointConnectionError

            self.lose -= 1
            raise EndpointConnectionError(endpoint_url="http://lost-answer")


def retrying(inner: ObjectStore) -> RetryingStore:
    return RetryingStore(inner, store_retrier(StoreSettings(url=inner.url, retry_max_delay_s=0.1)))


def test_a_retried_exclusive_put_whose_first_attempt_landed_succeeds(tmp_path: Path) -> None:
    store = retrying(LostAnswers(tmp_path / "store", lose=1))
    store.put_bytes("a/b.json", b"once", exclusive=True)
    assert store.get_bytes("a/b.json") == b"once"
    # A different object under a taken key is still refused.
    with pytest.raises(errors.ObjectExists):
        store.put_bytes("a/b.json", b"other", exclusive=True)
    assert store.get_bytes("a/b.json") == b"once"


async def test_a_consumer_goes_on_after_nats_restarts(
    restartable_nats: EmbeddedNats, run_id: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="zelda_rlaif.retry")
    bus = await Bus.connect(quick_nats(restartable_nats.url), name="consumer-outage-test")
    seen: list[int] = []

    async def handler(event: EpochExported, delivery: Delivery) -> None:
        seen.append(event.epoch)

    spec = ConsumerSpec(f"outage-{run_id}", PIPELINE_STREAM, EPOCH_EXPORTED, EPOCH_EXPORTED.subject)
    stop = asyncio.Event()
    try:
        await bus.provision()
        consuming = asyncio.create_task(run_consumer(bus, spec, handler, stop,
                                                     store=open_store(StoreSettings(url=f"file://{tmp_path}/s"))))
        await bus.publish(EPOCH_EXPORTED, EpochExported(run_id=run_id, epoch=0, segments_exported=0, env_steps=0,
                                                        episodes=0))
        await wait_until(lambda: seen == [0], 30, "the first event is consumed")
        restartable_nats.stop()
        await wait_until(lambda: any("NATS" in o.server for o in current_outages()), 30, "the outage is noticed")
        await asyncio.sleep(2)
        restartable_nats.start()
        await bus.publish(EPOCH_EXPORTED, EpochExported(run_id=run_id, epoch=1, segments_exported=0, env_steps=0,
                                                        episodes=0))
        await wait_until(lambda: seen == [0, 1], 60, "the event published after the restart is consumed")
        assert not consuming.done()
        assert outage_lines(caplog, restartable_nats.url) == (1, 1)
        stop.set()
        await consuming
    finally:
        stop.set()
        await bus.close()


async def test_up_shows_which_server_it_waits_for(restartable_nats: EmbeddedNats, s3_proxy: TcpProxy) -> None:
    """``up`` starts the services without progress bars, so its own display says when NATS or the store is away,
    and stops saying so once they are back."""
    from zelda_rlaif.up.servers import ServerWatch

    settings = proxied_store_settings(s3_proxy)
    store = open_store(settings, create_bucket=True)
    bus = await Bus.connect(quick_nats(restartable_nats.url), name="up-display-test")
    servers = ServerWatch(bus, restartable_nats.url, store, keys.progress("run-display"), every_s=0.2)
    stop = asyncio.Event()
    probing = asyncio.create_task(servers.probe_store(stop))
    try:
        assert servers.waiting() == []
        restartable_nats.stop()
        s3_proxy.mode = "refuse"
        await wait_until(lambda: len(servers.waiting()) == 2, 30, "both outages are shown")
        nats_line, store_line = servers.waiting()
        assert nats_line.startswith(f"waiting for NATS at {restartable_nats.url}: unreachable for ")
        assert settings.url in store_line and store_line.startswith("waiting for ")
        restartable_nats.start()
        s3_proxy.mode = "pass"
        await wait_until(lambda: servers.waiting() == [], 60, "the display clears once both are back")
    finally:
        stop.set()
        await asyncio.wait_for(probing, 60)
        await bus.close()
