"""Fixtures of the judge suite: a private NATS server, a fresh S3 bucket, the OpenAI test server, settings."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol

import pytest

from tests.support.openai_server import OpenAIServer
from zelda_judge.service import serve
from zelda_judge.settings import JudgeSettings
from zelda_rlaif.embedded_nats import EmbeddedNats
from zelda_rlaif.events import JudgeKind
from zelda_rlaif.settings import NatsSettings, StoreSettings
from zelda_rlaif.storage import ObjectStore, open_store


@pytest.fixture
def store(s3_store_settings: StoreSettings) -> ObjectStore:
    return open_store(s3_store_settings, create_bucket=True)


@pytest.fixture
def llm(openai_server: Callable[..., OpenAIServer]) -> OpenAIServer:
    return openai_server(hang_s=3.0)


class SettingsFactory(Protocol):
    def __call__(self, kind: JudgeKind | str, **overrides: Any) -> JudgeSettings: ...


@pytest.fixture
def judge_settings(private_nats: EmbeddedNats, s3_store_settings: StoreSettings, store: ObjectStore,
                   llm: OpenAIServer) -> SettingsFactory:
    """Settings for one replica: fast consumer tuning, the rules backend unless overridden."""

    def make(kind: JudgeKind | str, **overrides: Any) -> JudgeSettings:
        values: dict[str, Any] = {
            "kind": JudgeKind(kind), "backend": "rules", "nats": NatsSettings(url=private_nats.url),
            "store": s3_store_settings, "http_port": 0, "ack_wait_s": 3.0, "max_deliver": 3,
            "redelivery_backoff_s": [0.05, 0.1], "llm_url": llm.url, "llm_model": llm.model,
            "llm_timeout_s": 1.0, "llm_retries": 1, "llm_backoff_s": 0.01, "llm_backoff_max_s": 0.05,
        }
        values.update(overrides)
        return JudgeSettings(**values)

    return make


def one_per_kind(make: SettingsFactory, **per_kind: dict[str, Any]) -> tuple[JudgeSettings, ...]:
    """One replica of every judge kind; ``per_kind`` gives some kinds their own settings (``vision={...}``), the
    others take the rules backend, so a test keeps working when a kind is added."""
    unknown = set(per_kind) - {kind.value for kind in JudgeKind}
    assert not unknown, f"not judge kinds: {unknown}"
    return tuple(make(kind, **per_kind.get(kind.value, {})) for kind in JudgeKind)


@contextlib.asynccontextmanager
async def running(*replicas: JudgeSettings) -> AsyncIterator[None]:
    """Judge replicas in this event loop, stopped (in-flight work settled) on exit."""
    stop = asyncio.Event()
    tasks = [asyncio.create_task(serve(settings, stop)) for settings in replicas]
    try:
        await asyncio.sleep(0.2)
        for task in tasks:
            if task.done():
                task.result()  # a replica that failed to start: raise its error here
        yield
    finally:
        stop.set()
        await asyncio.gather(*tasks)

