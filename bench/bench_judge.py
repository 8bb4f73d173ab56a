"""Judge throughput: segments/s of one and two replicas of a kind against an LLM with a fixed latency.

Run from the repository root::

    .venv/bin/python bench/bench_judge.py            # ~1 minute on 2 cores
    .venv/bin/python bench/bench_judge.py --quick    # smaller, for a smoke run

Each configuration runs real ``zelda-rlaif judge --kind state`` processes (openai backend, M=3 votes as
3 requests) against the OpenAI-compatible test server of ``tests/support`` answering after a fixed latency,
with a private nats-server and a file:// store holding 300-step segments. The clock runs from publishing the
first ``segment.exported`` to the last ``segment.judged.state``. Printed side by side, measured in one run:

- segments/s against the ideal ``replicas * MAX_IN_FLIGHT / (VOTES * latency)`` for a sweep of MAX_IN_FLIGHT
  and latency (one replica keeps many requests in flight: throughput follows concurrency / latency);
- the ratio two replicas / one replica at the same settings (target: close to 2x).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # tests.support is not an installed package

import httpx  # noqa: E402
from nats.aio.msg import Msg  # noqa: E402

from tests.support.openai_server import OpenAIServer  # noqa: E402
from tests.support.segments import SCENARIOS, write_segment  # noqa: E402
from tests.support.waiting import free_port  # noqa: E402
from zelda_rlaif.bus import Bus  # noqa: E402
from zelda_rlaif.embedded_nats import EmbeddedNats  # noqa: E402
from zelda_rlaif.events import JudgeKind, SegmentExported  # noqa: E402
from zelda_rlaif.settings import NatsSettings  # noqa: E402
from zelda_rlaif.storage.file import FileStore  # noqa: E402
from zelda_rlaif.subjects import SEGMENT_EXPORTED, SEGMENT_JUDGED  # noqa: E402

VOTES = 3


@dataclass(frozen=True)
class Config:
    replicas: int
    max_in_flight: int
    latency_s: float

    @property
    def ideal(self) -> float:
        return self.replicas * self.max_in_flight / (VOTES * self.latency_s)


@dataclass(frozen=True)
class Result:
    config: Config
    segments: int
    seconds: float
    cpu_seconds: float  # CPU time of the replicas while judging (user + system)

    @property
    def rate(self) -> float:
        return self.segments / self.seconds

    @property
    def cpu_ms_per_segment(self) -> float:
        return 1000 * self.cpu_seconds / self.segments


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a live process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def write_segments(store_dir: Path, count: int, steps: int) -> list[SegmentExported]:
    store = FileStore(store_dir)
    return [write_segment(store, run_id="bench", epoch=0, segment_id=f"seg-{i:05d}", steps=steps, frame_every=50,
                          scenario=SCENARIOS[i % len(SCENARIOS)], seed=i) for i in range(count)]


async def wait_healthy(port: int, process: subprocess.Popen[bytes], timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    async with httpx.AsyncClient() as client:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"judge replica exited with {process.returncode} before it was healthy")
            try:
                if (await client.get(f"http://127.0.0.1:{port}/healthz")).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.1)
    raise RuntimeError("judge replica not healthy in time")


async def measure(config: Config, events: list[SegmentExported], template: Path, work: Path,
                  llm: OpenAIServer) -> Result:
    store_dir = work / "store"
    shutil.rmtree(store_dir, ignore_errors=True)
    shutil.copytree(template, store_dir)  # fresh store: no verdict of an earlier run may be reused
    llm.latency_s = config.latency_s
    with EmbeddedNats(work / f"nats-{time.monotonic_ns()}") as nats:
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("ZELDA_")},
               "ZELDA_NATS_URL": nats.url, "ZELDA_STORE_URL": f"file://{store_dir}", "ZELDA_JUDGE_BACKEND": "openai",
               "ZELDA_JUDGE_LLM_URL": llm.url, "ZELDA_JUDGE_LLM_MODEL": llm.model, "ZELDA_JUDGE_VOTES": str(VOTES),
               "ZELDA_JUDGE_MAX_IN_FLIGHT": str(config.max_in_flight), "ZELDA_JUDGE_HTTP_HOST": "127.0.0.1",
               "ZELDA_LOG_LEVEL": "WARNING", "OMP_NUM_THREADS": "1"}
        bus = await Bus.connect(NatsSettings(url=nats.url), name="bench")
        await bus.provision()
        done = asyncio.Event()
        judged: set[str] = set()

        async def on_judged(msg: Msg) -> None:
            judged.add(SEGMENT_JUDGED.model.model_validate_json(msg.data).segment_id)
            if len(judged) >= len(events):
                done.set()

        await bus.subscribe_live(SEGMENT_JUDGED.for_kind(JudgeKind.STATE), on_judged)
        processes = []
        try:
            for _ in range(config.replicas):
                port = free_port()
                process = subprocess.Popen(  # noqa: ASYNC220 - start-up is not what is timed
                    [sys.executable, "-m", "zelda_rlaif.cli", "judge", "--kind", "state", "--http-port", str(port)],
                    env=env, stdout=subprocess.DEVNULL, stderr=(work / "judge.log").open("ab"))
                processes.append(process)
                await wait_healthy(port, process)
            cpu_before = sum(cpu_seconds(p.pid) for p in processes)
            started = time.perf_counter()
            for event in events:
                await bus.publish(SEGMENT_EXPORTED, event)
            await asyncio.wait_for(done.wait(), timeout=600)
            seconds = time.perf_counter() - started
            cpu = sum(cpu_seconds(p.pid) for p in processes) - cpu_before
        finally:
            for process in processes:
                process.send_signal(signal.SIGTERM)
            for process in processes:
                process.wait(timeout=60)
            await bus.close()
    return Result(config, len(events), seconds, cpu)


def segments_for(config: Config, seconds: float, available: int) -> int:
    """Enough segments for ``seconds`` of judging at the ideal rate, so start-up transients stay small."""
    return max(40, min(available, round(config.ideal * seconds)))


async def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shorter runs, for a smoke run")
    parser.add_argument("--latency", type=float, default=0.2, help="LLM latency in seconds (default 0.2)")
    args = parser.parse_args()
    latency = args.latency
    run_seconds = 3.0 if args.quick else 8.0
    sweep = [Config(1, n, latency) for n in (3, 6, 12, 24)] + [Config(1, 12, latency / 2)]
    pair = (Config(1, 12, latency), Config(2, 12, latency))
    available = segments_for(pair[1], run_seconds, 10_000)
    with tempfile.TemporaryDirectory(prefix="bench-judge-") as tmp, OpenAIServer() as llm:
        work = Path(tmp)
        print(f"writing {available} segments of 300 steps ...", flush=True)
        events = write_segments(work / "template", available, steps=300)
        results: dict[Config, Result] = {}
        for config in [*sweep, pair[1]]:
            count = available if config in pair else segments_for(config, run_seconds, available)
            result = await measure(config, events[:count], work / "template", work, llm)
            results[config] = result
            print(f"  replicas={config.replicas} max_in_flight={config.max_in_flight:>2} "
                  f"latency={config.latency_s * 1000:.0f}ms segments={count}: {result.rate:6.1f} segments/s "
                  f"(ideal {config.ideal:6.1f}), replica CPU {result.cpu_ms_per_segment:.1f} ms/segment", flush=True)
    print()
    print("| replicas | MAX_IN_FLIGHT | LLM latency | segments | segments/s | ideal | of ideal | replica CPU/segment |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for c, r in results.items():
        print(f"| {c.replicas} | {c.max_in_flight} | {c.latency_s * 1000:.0f} ms | {r.segments} | {r.rate:.1f} |"
              f" {c.ideal:.1f} | {r.rate / c.ideal:.0%} | {r.cpu_ms_per_segment:.1f} ms |")
    print()
    print("ideal = replicas x MAX_IN_FLIGHT / (VOTES x latency), VOTES = 3 requests per segment")
    one, two = results[pair[0]], results[pair[1]]
    print(f"two replicas / one replica (MAX_IN_FLIGHT={pair[0].max_in_flight}, {latency * 1000:.0f} ms, "
          f"{two.segments} and {one.segments} segments): {two.rate / one.rate:.2f}x")
    cores = os.cpu_count() or 1
    ceiling = 1000 * cores / statistics.median(r.cpu_ms_per_segment for r in results.values())
    print(f"CPU ceiling of this machine ({cores} cores, replicas' CPU only): ~{ceiling:.0f} segments/s")


if __name__ == "__main__":
    asyncio.run(main())
