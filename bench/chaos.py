"""Chaos: run ``zelda-rlaif up`` on the bundled test world while a fault hits it, and say whether the run held.

    python bench/chaos.py                                  # every fault, 120 s outages
    python bench/chaos.py --faults nats-stopped store-hanging --outage 300

Each fault gets a fresh 2-epoch run against servers this script owns: a nats-server (``up --nats-url``) and
moto's S3 server with bucket versioning behind a TCP proxy (``up --store-url s3://...``, the S3 endpoint is the
proxy). The fault starts once epoch 0 has stored its first segment:

- ``nats-stopped``: nats-server stopped for the outage, then started again on its port and store dir;
- ``store-refusing`` / ``store-hanging``: the proxy refuses connections / accepts them and never answers
  (``store-refusing-then-hanging``: one outage after the other, as the test suite runs it);
- ``runner-killed``: one env runner process of the trainer killed with SIGKILL (Ray restarts it);
- ``sigint-resume``: SIGINT to ``up``, then ``up --resume`` on the same run dir.

A run HELD when ``up`` exited 0 (after ``--resume`` for ``sigint-resume``) and afterwards every segment whose
manifest is stored was announced once and judged exactly once per judge kind, each epoch has exactly one
``scores.ready``, and no write-once segment object was written twice (S3 object versions). Prints one table
row per fault: fault | outage s | HELD/BROKE | why. ``tests/e2e/test_up_faults.py`` runs the NATS and store
faults with 30 s outages through ``run_fault``.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script: tests.support is importable

from tests.support.tcp_proxy import TcpProxy
from tests.support.waiting import free_port
from zelda_rlaif.bus import Bus
from zelda_rlaif.embedded_nats import EmbeddedNats
from zelda_rlaif.events import JudgeKind, ScoresReady, SegmentExported, SegmentJudged
from zelda_rlaif.settings import NatsSettings
from zelda_rlaif.storage import keys
from zelda_rlaif.subjects import SCORES_READY, SEGMENT_EXPORTED, SEGMENT_JUDGED, Topic

FAULTS = ("nats-stopped", "store-refusing", "store-hanging", "runner-killed", "sigint-resume")
RUN_ID = "chaos"
ACCESS_KEY, SECRET_KEY = "chaos-access-key", "chaos-secret-key"

# CI-sized epochs as in tests/e2e/test_up.py: many short segments, quick PPO iterations.
RUN_ENV = {
    "ZELDA_TRAINER_SEGMENT_STEPS": "100",
    "ZELDA_TRAINER_EPISODE_STEPS": "200",
    "ZELDA_TRAINER_PPO_TRAIN_BATCH_SIZE": "1024",
    "ZELDA_TRAINER_PPO_MINIBATCH_SIZE": "256",
    "ZELDA_TRAINER_ENVS_PER_RUNNER": "4",
    "ZELDA_TRAINER_FRAME_EVERY": "20",
    "ZELDA_REWARD_MODEL_MIN_VALIDATION_ACCURACY": "0",
    # A hanging store is noticed after 5 s per request, and a server that is back is found within 2 s.
    "ZELDA_STORE_S3_READ_TIMEOUT_S": "5",
    "ZELDA_STORE_S3_CONNECT_TIMEOUT_S": "2",
    "ZELDA_STORE_RETRY_MAX_DELAY_S": "2",
    "ZELDA_NATS_RETRY_MAX_DELAY_S": "2",
    "ZELDA_STORE_S3_ACCESS_KEY": ACCESS_KEY,
    "ZELDA_STORE_S3_SECRET_KEY": SECRET_KEY,
}


@dataclass
class Outcome:
    fault: str
    outage_s: float
    held: bool
    why: str


@dataclass
class Servers:
    nats: EmbeddedNats
    s3_endpoint: str  # moto itself, for checks that must not go through the failing proxy
    proxy: TcpProxy
    bucket: str

    def s3(self) -> Any:
        return boto3.client("s3", endpoint_url=self.s3_endpoint, region_name="us-east-1",
                            aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY)


@contextmanager
def servers(workdir: Path, s3_endpoint: str | None = None) -> Iterator[Servers]:
    """A nats-server on a fixed port and a versioned bucket behind a proxy; ``s3_endpoint``: an S3 server to use
    (the test suite's), else moto is started here."""
    moto = None
    if s3_endpoint is None:
        from moto.server import ThreadedMotoServer

        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
        moto = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        moto.start()
        moto_host, moto_port = moto.get_host_and_port()
        s3_endpoint = f"http://{moto_host}:{moto_port}"
    nats = EmbeddedNats(workdir / "nats", port=free_port())
    nats.start()
    host, port = s3_endpoint.removeprefix("http://").rsplit(":", 1)
    proxy = TcpProxy(host, int(port)).start()
    found = Servers(nats, s3_endpoint, proxy, f"chaos-{uuid.uuid4().hex[:10]}")
    s3 = found.s3()
    s3.create_bucket(Bucket=found.bucket)
    # Versions count the writes that reached the bucket: a write-once object must have exactly one.
    s3.put_bucket_versioning(Bucket=found.bucket, VersioningConfiguration={"Status": "Enabled"})
    try:
        yield found
    finally:
        proxy.stop()
        nats.stop()
        if moto is not None:
            moto.stop()


def up_command(run_dir: Path, found: Servers, epochs: int, steps_per_epoch: int, *, resume: bool = False) -> list[str]:
    command = [sys.executable, "-m", "zelda_rlaif.cli", "up", "--run-dir", str(run_dir), "--run-id", RUN_ID,
               "--epochs", str(epochs), "--steps-per-epoch", str(steps_per_epoch), "--shaping-mode", "sync",
               "--finish-timeout", "600", "--nats-url", found.nats.url,
               "--store-url", f"s3://{found.bucket}/run"]
    return command + (["--resume"] if resume else [])


def up_env(found: Servers) -> dict[str, str]:
    return {**os.environ, **RUN_ENV, "ZELDA_STORE_S3_ENDPOINT": f"http://{found.proxy.host}:{found.proxy.port}"}


def stored_keys(found: Servers, prefix: str) -> list[str]:
    s3 = found.s3()
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=found.bucket, Prefix=f"run/{prefix}")
    return [item["Key"].removeprefix("run/") for page in pages for item in page.get("Contents", [])]


def wait_for_first_segment(found: Servers, up: subprocess.Popen[bytes], timeout_s: float = 600) -> bool:
    """Wait until epoch 0 stored a segment manifest (the fault then hits a running epoch); False if up ended."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and up.poll() is None:
        if any(keys.is_segment_manifest(k) for k in stored_keys(found, keys.epoch_segments(RUN_ID, 0))):
            return True
        time.sleep(1)
    return False


def descendants(pid: int) -> list[tuple[int, str]]:
    """(pid, command line) of every process below ``pid``, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found: list[tuple[int, str]] = []
    todo = list(children.get(pid, []))
    while todo:
        child = todo.pop()
        try:
            cmdline = (Path("/proc") / str(child) / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        found.append((child, cmdline))
        todo += children.get(child, [])
    return found


def kill_an_env_runner(up: subprocess.Popen[bytes]) -> str:
    runners = [pid for pid, cmdline in descendants(up.pid) if "EnvRunner" in cmdline]
    if not runners:
        return "no env runner process found"
    os.kill(runners[0], signal.SIGKILL)
    return f"killed env runner pid {runners[0]}"


def inject(fault: str, outage_s: float, found: Servers, up: subprocess.Popen[bytes]) -> str:
    """Hit the running ``up`` with ``fault``; returns what was done."""
    if fault == "nats-stopped":
        found.nats.stop()
        time.sleep(outage_s)
        found.nats.start()
        return f"nats-server down {outage_s:.0f} s"
    if fault.startswith("store-"):
        modes = {"store-refusing": ["refuse"], "store-hanging": ["hang"],
                 "store-refusing-then-hanging": ["refuse", "hang"]}[fault]
        for mode in modes:
            found.proxy.mode = mode  # type: ignore[assignment]
            time.sleep(outage_s)
        found.proxy.mode = "pass"
        return f"store {' then '.join(modes)}, {outage_s:.0f} s each"
    if fault == "runner-killed":
        return kill_an_env_runner(up)
    if fault == "sigint-resume":
        up.send_signal(signal.SIGINT)
        return "SIGINT"
    raise ValueError(f"unknown fault {fault!r}; choose from {', '.join(FAULTS)}")


async def _stored(bus: Bus, topic: Topic[Any], subject: str) -> list[Any]:
    from tests.support.streams import stored_events

    return [e for e in await stored_events(bus, topic, subject) if e.run_id == RUN_ID]


async def bus_facts(found: Servers) -> tuple[list[SegmentExported], list[SegmentJudged], list[ScoresReady]]:
    bus = await Bus.connect(NatsSettings(url=found.nats.url), name="chaos-check")
    try:
        return (await _stored(bus, SEGMENT_EXPORTED, SEGMENT_EXPORTED.subject),
                await _stored(bus, SEGMENT_JUDGED, SEGMENT_JUDGED.subject),
                await _stored(bus, SCORES_READY, SCORES_READY.subject))
    finally:
        await bus.close()


def check_run(found: Servers, epochs: int) -> list[str]:
    """What is wrong with the finished run; [] when every guarantee held."""
    problems: list[str] = []
    exported, judged, ready = asyncio.run(bus_facts(found))
    manifests = {k for e in range(epochs) for k in stored_keys(found, keys.epoch_segments(RUN_ID, e))
                 if keys.is_segment_manifest(k)}
    announced = Counter((e.epoch, e.segment_id) for e in exported)
    if len(announced) != len(manifests) or any(n != 1 for n in announced.values()):
        problems.append(f"{len(manifests)} segments stored, {len(announced)} announced "
                        f"({sum(announced.values())} segment.exported messages)")
    verdicts = Counter((e.epoch, e.segment_id, e.kind) for e in judged)
    for epoch, segment_id in announced:
        for kind in JudgeKind:
            if verdicts[(epoch, segment_id, kind)] != 1:
                problems.append(f"segment {segment_id} judged {verdicts[(epoch, segment_id, kind)]} times by {kind}")
                break
    per_epoch = Counter(e.epoch for e in ready)
    for epoch in range(epochs):
        if per_epoch[epoch] != 1:
            problems.append(f"epoch {epoch}: {per_epoch[epoch]} scores.ready")
    versions = Counter[str]()
    pages = found.s3().get_paginator("list_object_versions").paginate(
        Bucket=found.bucket, Prefix=f"run/{keys.run_segments(RUN_ID)}")
    for page in pages:
        for version in page.get("Versions", []):
            versions[version["Key"]] += 1
    twice = sorted(k for k, n in versions.items() if n > 1)
    if twice:
        problems.append(f"{len(twice)} segment objects written twice, e.g. {twice[0]}")
    return problems[:5]


def run_fault(fault: str, outage_s: float, workdir: Path, *, epochs: int = 2, steps_per_epoch: int = 2048,
              s3_endpoint: str | None = None, log: Callable[[str], None] = print) -> Outcome:
    """One run of ``up`` under ``fault``; the outcome says whether every guarantee held and why not."""
    run_dir = workdir / "run"
    with servers(workdir, s3_endpoint) as found:
        up_log = (workdir / "up.log").open("wb")
        up = subprocess.Popen(up_command(run_dir, found, epochs, steps_per_epoch), env=up_env(found),
                              stdout=up_log, stderr=subprocess.STDOUT)
        try:
            if not wait_for_first_segment(found, up):
                return Outcome(fault, outage_s, False, f"up ended before the fault (exit {up.poll()})")
            done: list[str] = []
            injector = threading.Thread(target=lambda: done.append(inject(fault, outage_s, found, up)))
            injector.start()
            injector.join()
            log(f"{fault}: {done[0] if done else 'nothing done'}")
            code = up.wait(timeout=outage_s + 1800)
            if fault == "sigint-resume":
                if code != 130:
                    return Outcome(fault, 0, False, f"up exited {code} on SIGINT, not 130")
                left = epochs - _finished_epochs(found)  # as the command up printed: the epochs not trained yet
                resumed = subprocess.run(up_command(run_dir, found, max(left, 1), steps_per_epoch, resume=True),
                                         env=up_env(found), stdout=up_log, stderr=subprocess.STDOUT, timeout=1800)
                code = resumed.returncode
        finally:
            if up.poll() is None:
                up.send_signal(signal.SIGINT)
                up.wait(timeout=120)
            up_log.close()
        if code != 0:
            tail = (workdir / "up.log").read_text(errors="replace").strip().splitlines()[-3:]
            return Outcome(fault, outage_s, False, f"up exited {code}: {' | '.join(tail)[-300:]}")
        problems = check_run(found, _finished_epochs(found))
        return Outcome(fault, outage_s, not problems, "; ".join(problems) or "exit 0, every guarantee checked")


def _finished_epochs(found: Servers) -> int:
    epochs = 0
    while stored_keys(found, keys.epoch_report(RUN_ID, epochs)):
        epochs += 1
    return epochs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--faults", nargs="+", choices=FAULTS, default=list(FAULTS))
    parser.add_argument("--outage", type=float, default=120.0, help="seconds each outage lasts (default 120)")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--steps-per-epoch", type=int, default=2048)
    parser.add_argument("--workdir", type=Path, help="keep each run's files here (default: a temporary dir)")
    args = parser.parse_args(argv)
    outcomes = []
    for fault in args.faults:
        workdir = Path(tempfile.mkdtemp(prefix=f"chaos-{fault}-", dir=args.workdir))
        outage = args.outage if fault.startswith(("nats", "store")) else 0.0
        started = time.monotonic()
        outcome = run_fault(fault, outage, workdir, epochs=args.epochs, steps_per_epoch=args.steps_per_epoch)
        print(f"{fault}: {'HELD' if outcome.held else 'BROKE'} in {time.monotonic() - started:.0f} s ({workdir})",
              flush=True)
        outcomes.append(outcome)
    print("\n| fault | outage s | result | why |\n|---|---|---|---|")
    for o in outcomes:
        print(f"| {o.fault} | {o.outage_s:.0f} | {'HELD' if o.held else 'BROKE'} | {o.why} |")
    return 0 if all(o.held for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
