"""A real OpenAI-compatible server for the LLM suite: llama.cpp's ``llama-server`` on the tiny model made here.

The binary is built from the pinned ``llama-cpp-python`` sdist on first use (minutes, once per machine: cached, see
``tests/support/llama_server.py``) and the model is made in well under a minute (cached too, see
``tests/support/tiny_llm.py``); one server per session serves it under every name the judges and guidance ask for.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import httpx
import pytest

from tests.support.llama_server import LlamaServer, llama_server_binary
from tests.support.segments import SCENARIOS, write_epoch
from tests.support.tiny_llm import UNRULY, TinyModel, make
from zelda_judge.kinds import KINDS
from zelda_judge.segment_io import AsyncStore, Segment, SegmentReader
from zelda_judge.settings import JudgeSettings
from zelda_rlaif.events import JudgeKind
from zelda_rlaif.storage.file import FileStore

# A cold llama-server build takes ~6-9 minutes on 2 cores. The suite makes it in the background from its start
# (tests/support/prebuilt.py) and runs these tests last; one that comes first waits for it.
SETUP_TIMEOUT_S = 1800
MODEL_NAMES = ("tiny", "judge-state", "judge-puzzle", "judge-vision")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.path).parents:
            item.add_marker(pytest.mark.timeout(SETUP_TIMEOUT_S))
            item.add_marker(pytest.mark.prebuilt("llama-server", "tiny-models"))


@pytest.fixture(scope="session")
def llama_server_bin() -> Path:
    return llama_server_binary()


@pytest.fixture(scope="session")
def tiny_model() -> TinyModel:
    return make()


@pytest.fixture(scope="session")
def real_llm(llama_server_bin: Path, tiny_model: TinyModel, tmp_path_factory: pytest.TempPathFactory
             ) -> Iterator[LlamaServer]:
    """llama-server with the tiny model and its vision projector, answering as tiny and judge-<kind>."""
    log = tmp_path_factory.mktemp("llama-server") / "llama-server.log"
    with LlamaServer(llama_server_bin, tiny_model.model, mmproj=tiny_model.mmproj, aliases=MODEL_NAMES,
                     log=log) as server:
        yield server


@pytest.fixture(scope="session")
def unruly_llm(llama_server_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """The same server on a tiny model trained to score out of 10: its votes follow the schema's shape but not its
    range (llama.cpp does not enforce minimum/maximum on numbers), like a model that ignored the rubric."""
    unruly = make(UNRULY)
    log = tmp_path_factory.mktemp("llama-server-unruly") / "llama-server.log"
    with LlamaServer(llama_server_bin, unruly.model, aliases=MODEL_NAMES, log=log) as server:
        yield server


@pytest.fixture(scope="session")
def segments(tmp_path_factory: pytest.TempPathFactory) -> list[Segment]:
    """One stored segment of every scenario (explore, stuck, dialog, puzzle, menu), loaded as the judges load them
    (two key frames each)."""
    store = FileStore(tmp_path_factory.mktemp("segments"))
    events, _ = write_epoch(store, run_id="llm", epoch=0, segments=len(SCENARIOS), steps=120)

    async def load() -> list[Segment]:
        astore = AsyncStore(store)
        try:
            reader = SegmentReader(astore)
            return [await reader.load(event, key_frames=2) for event in events]
        finally:
            astore.close()

    return asyncio.run(load())


def seen_by(segment: Segment, kind: JudgeKind) -> Segment:
    """The segment as the service loads it for ``kind``: key frames only for a kind that sees frames."""
    return segment if KINDS[kind].sees_frames else dataclasses.replace(segment, frames={})


class Exchange(NamedTuple):
    body: dict[str, Any]
    status: int
    answer: dict[str, Any]


class Recorder:
    """An httpx client for the judges and guidance that keeps every chat completion (request and answer)."""

    def __init__(self) -> None:
        self.exchanges: list[Exchange] = []

    async def _on_response(self, response: httpx.Response) -> None:
        if response.request.url.path.endswith("/chat/completions"):
            await response.aread()
            self.exchanges.append(Exchange(json.loads(response.request.content), response.status_code,
                                           response.json()))

    def client(self, timeout_s: float = 60.0) -> httpx.AsyncClient:
        return httpx.AsyncClient(timeout=timeout_s, event_hooks={"response": [self._on_response]})

    def contents(self) -> list[str]:
        return [choice["message"]["content"] for exchange in self.exchanges
                for choice in exchange.answer.get("choices", [])]


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


def judge_settings(server: LlamaServer, kind: JudgeKind, **overrides: Any) -> JudgeSettings:
    """The openai backend on ``server`` with production voting (M=3 requests, temperature 0.7), short retries."""
    values: dict[str, Any] = {"kind": kind, "backend": "openai", "llm_url": server.url, "llm_model": server.model_name,
                              "llm_timeout_s": 60.0, "llm_backoff_s": 0.01, "llm_backoff_max_s": 0.05, "http_port": 0,
                              "key_frames": 2}
    return JudgeSettings(**{**values, **overrides})
