"""Real infrastructure for the whole suite: a nats-server with JetStream and an S3-compatible server.

Both are started once per session on random loopback ports and torn down at the end. Tests isolate
themselves by run id / bucket rather than by restarting servers.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.cache import cache_root
from tests.support.openai_server import OpenAIServer
from zelda_rlaif.bus import Bus
from zelda_rlaif.embedded_nats import EmbeddedNats
from zelda_rlaif.game.config import EnvConfig
from zelda_rlaif.game.env import ZeldaEnv
from zelda_rlaif.game.guidance.config import GuidanceConfig
from zelda_rlaif.game.rewards.config import RewardConfig
from zelda_rlaif.settings import NatsSettings, StoreSettings

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("RAY_AUTH_MODE", "disabled")

ARTIFACTS = Path(os.environ.get("ZELDA_TEST_ARTIFACTS", Path(__file__).resolve().parent.parent / "test-artifacts"))
PREBUILD = pytest.StashKey[subprocess.Popen[bytes]]()


@pytest.hookimpl(trylast=True)  # after the other hooks have marked and deselected items
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``prebuilt(<name>, ...)`` run last, and what they need is made meanwhile in the background
    (``tests/support/prebuilt.py``)."""
    needing = [item for item in items if item.get_closest_marker("prebuilt") is not None]
    if not needing or config.option.collectonly:
        return
    items[:] = [item for item in items if item.get_closest_marker("prebuilt") is None] + needing
    names = dict.fromkeys(name for item in needing for marker in item.iter_markers("prebuilt") for name in marker.args)
    log = cache_root() / "prebuilt.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        config.stash[PREBUILD] = subprocess.Popen(
            [sys.executable, "-m", "tests.support.prebuilt", *names], cwd=Path(__file__).resolve().parent.parent,
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def pytest_unconfigure(config: pytest.Config) -> None:
    """A suite that ends before its prebuild does (a failure with -x, Ctrl-C) stops it."""
    process = config.stash.get(PREBUILD, None)
    if process is None or process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)  # its group: the compilers and pip too
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


@pytest.fixture(scope="session")
def nats_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedNats]:
    server = EmbeddedNats(tmp_path_factory.mktemp("nats"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def private_nats(tmp_path: Path) -> Iterator[EmbeddedNats]:
    """A NATS server of the test's own, for tests whose durable consumers (judge-state, ...) would otherwise take
    messages that other suites publish on the shared server, or that stop the server on purpose."""
    with EmbeddedNats(tmp_path / "nats") as server:
        yield server


@pytest.fixture
async def private_bus(private_nats: EmbeddedNats) -> AsyncIterator[Bus]:
    """A provisioned connection to the test's own NATS server (``private_nats``)."""
    connection = await Bus.connect(NatsSettings(url=private_nats.url), name="pytest-private")
    await connection.provision()
    yield connection
    await connection.close()


@pytest.fixture
def openai_server() -> Iterator[Callable[..., OpenAIServer]]:
    """``openai_server(**options)`` starts an OpenAI-protocol test server (see tests/support/openai_server.py);
    every one started is stopped after the test."""
    with contextlib.ExitStack() as started:
        yield lambda **options: started.enter_context(OpenAIServer(**options))


@pytest.fixture(scope="session")
def nats_settings(nats_server: EmbeddedNats) -> NatsSettings:
    return NatsSettings(url=nats_server.url)


@pytest.fixture
async def bus(nats_settings: NatsSettings) -> AsyncIterator[Bus]:
    connection = await Bus.connect(nats_settings, name="pytest")
    await connection.provision()
    yield connection
    await connection.close()


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def s3_store_settings(s3_endpoint: str) -> StoreSettings:
    """Settings for a fresh bucket on the S3 test server."""
    return StoreSettings(
        url=f"s3://test-{uuid.uuid4().hex[:12]}/prefix",
        s3_endpoint=s3_endpoint,
        s3_access_key="test-access-key",
        s3_secret_key="test-secret-key",
    )


@pytest.fixture
def run_id() -> str:
    return f"run-{uuid.uuid4().hex[:8]}"


EnvFactory = Callable[..., ZeldaEnv]


@pytest.fixture
def make_env() -> Iterator[EnvFactory]:
    """``make_env(**guidance)``: the test world without RND, guidance enabled with the given settings."""
    made: list[ZeldaEnv] = []

    def make(rewards: RewardConfig | None = None, enabled: bool = True, **guidance: Any) -> ZeldaEnv:
        config = EnvConfig(max_steps=100_000, start_jitter=0, rewards=rewards or RewardConfig(rnd=0.0),
                           guidance=GuidanceConfig(enabled=enabled, **guidance))
        env = ZeldaEnv(config)
        env.reset(seed=0)
        made.append(env)
        return env

    yield make
    for env in made:
        env.close()
