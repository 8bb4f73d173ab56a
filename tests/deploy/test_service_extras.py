"""Each service's extra alone, as its image installs it: a fresh venv gets the project's wheel with only
``[judge]`` or ``[hud]``, proves the heavy packages it must leave out are absent, imports
every module of the service's package, runs ``zelda-rlaif <service> --help`` and, for the services with an HTTP
endpoint, starts the service against a real NATS server until it answers /healthz. ``[reward-model]`` is resolved by
pip without installing torch. A dependency left out of an extra fails here, not in a crash-looping pod.

The venvs and the wheel live under pytest's tmp directories (nothing is cached in the checkout); pip uses the
machine's own settings (its index, its wheel caches).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest

from tests.support.project_source import copy_project_source
from tests.support.segments import write_segment
from tests.support.waiting import free_port, wait_until
from zelda_rlaif.bus import Bus
from zelda_rlaif.embedded_nats import EmbeddedNats
from zelda_rlaif.settings import NatsSettings
from zelda_rlaif.storage.file import FileStore

pytestmark = pytest.mark.slow

# Import names each slim install must not provide (the judge and HUD images pull neither torch, Ray nor PyBoy).
LEFT_OUT = {
    "judge": ["torch", "ray", "pyboy", "gymnasium", "numba", "fastapi", "imageio_ffmpeg"],
    "hud": ["torch", "ray", "pyboy", "gymnasium", "numba"],
}
PACKAGES = {"judge": "zelda_judge", "hud": "zelda_hud"}

IMPORT_EVERY_MODULE = """
import importlib, pkgutil, sys
package = importlib.import_module(sys.argv[1])
for module in pkgutil.walk_packages(package.__path__, sys.argv[1] + "."):
    importlib.import_module(module.name)
present = [name for name in sys.argv[2:] if importlib.util.find_spec(name) is not None]
assert not present, f"installed although this extra leaves them out: {present}"
"""


def clean_env(**extra: str) -> dict[str, str]:
    """The test's environment without anything that would let the venv see the checkout or the suite's venv."""
    env = {k: v for k, v in os.environ.items()
           if k not in {"PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME"} and not k.startswith("ZELDA_")}
    return {**env, "PYTHONNOUSERSITE": "1", **extra}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's wheel, built from a copy of what the Dockerfile copies (no build files in the checkout)."""
    source = copy_project_source(tmp_path_factory.mktemp("source"))
    out = tmp_path_factory.mktemp("wheels")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(out),
                    str(source)], check=True, env=clean_env(), cwd=out, timeout=300)
    (built,) = out.glob("zelda_rlaif-*.whl")
    return built


@pytest.fixture(scope="module")
def install(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[str], Path]]:
    """``install(extra)`` -> the bin/ of a fresh venv holding the wheel with that extra only."""
    made: dict[str, Path] = {}

    def make(extra: str) -> Path:
        if extra not in made:
            venv = tmp_path_factory.mktemp(f"venv-{extra}")
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
            bin_dir = venv / "bin"
            subprocess.run([str(bin_dir / "python"), "-m", "pip", "install", "--quiet", f"{wheel}[{extra}]"],
                           check=True, env=clean_env(), cwd=venv, timeout=600)
            made[extra] = bin_dir
        return made[extra]

    yield make  # the venvs go with pytest's own tmp directories


def check_slim_install(bin_dir: Path, service: str, cwd: Path) -> None:
    """Every module of the service imports, the left-out packages are absent, and ``--help`` works."""
    subprocess.run([str(bin_dir / "python"), "-c", IMPORT_EVERY_MODULE, PACKAGES[service], *LEFT_OUT[service]],
                   check=True, env=clean_env(), cwd=cwd, timeout=120)
    shown = subprocess.run([str(bin_dir / "zelda-rlaif"), service, "--help"], capture_output=True, text=True,
                           env=clean_env(), cwd=cwd, timeout=120)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith(f"usage: zelda-rlaif {service}")


def _text(path: Path) -> str:
    return path.read_text(errors="replace")


@asynccontextmanager
async def serving(argv: list[str], env: dict[str, str], log_path: Path, port: int) -> AsyncIterator[None]:
    """Run the service until /healthz answers 200, yield, then stop it with SIGTERM and expect exit 0."""
    with log_path.open("wb") as log:
        process = await asyncio.create_subprocess_exec(*argv, env=env, stdout=log, stderr=subprocess.STDOUT,
                                                       cwd=log_path.parent)
    try:
        async def healthy() -> bool:
            try:
                async with httpx.AsyncClient(timeout=2) as client:
                    response = await client.get(f"http://127.0.0.1:{port}/healthz")
            except httpx.TransportError:
                assert process.returncode is None, _text(log_path)
                return False
            return response.status_code == 200

        await wait_until(healthy, timeout_s=60, what=f"{argv[1]} answering /healthz", interval_s=0.2)
        yield
        process.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(process.wait(), timeout=30) == 0, _text(log_path)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


def check_replay(bin_dir: Path, tmp_path: Path) -> None:
    """The HUD serves segment replays: the replay path (PIL frames, imageio-ffmpeg's MP4) runs in the slim install."""
    run_dir = tmp_path / "local"
    run_dir.mkdir()
    (run_dir / "run.json").write_text('{"run_id": "run-1"}')
    write_segment(FileStore(run_dir / "store"), run_id="run-1", epoch=1, segment_id="e001-seg", steps=40,
                  frame_every=20)
    out = tmp_path / "replay.mp4"
    subprocess.run([str(bin_dir / "zelda-rlaif"), "replay", str(run_dir), "e001-seg", "--out", str(out)],
                   check=True, env=clean_env(), cwd=tmp_path, timeout=120)
    assert out.stat().st_size > 0


async def provisioned(nats: EmbeddedNats) -> None:
    bus = await Bus.connect(NatsSettings(url=nats.url), name="pytest-extras")
    try:
        await bus.provision()
    finally:
        await bus.close()


async def test_judge_extra_alone_serves_healthz(install: Callable[[str], Path], private_nats: EmbeddedNats,
                                                tmp_path: Path) -> None:
    bin_dir = install("judge")
    check_slim_install(bin_dir, "judge", tmp_path)
    # `up` needs every service: in a slim install it says what to install, before anything starts.
    up = await asyncio.to_thread(subprocess.run, [str(bin_dir / "zelda-rlaif"), "up", "--run-dir",
                                                  str(tmp_path / "run")],
                                 capture_output=True, text=True, env=clean_env(), timeout=120, check=False)
    assert up.returncode == 2 and "pip install 'zelda-rlaif[all]'" in up.stderr + up.stdout
    assert "Traceback" not in up.stderr and not (tmp_path / "run").exists()
    await provisioned(private_nats)
    port = free_port()
    env = clean_env(ZELDA_NATS_URL=private_nats.url, ZELDA_STORE_URL=(tmp_path / "store").as_uri(),
                    ZELDA_JUDGE_HTTP_HOST="127.0.0.1")
    argv = [str(bin_dir / "zelda-rlaif"), "judge", "--kind", "state", "--http-port", str(port)]
    async with serving(argv, env, tmp_path / "judge.log", port):
        async with httpx.AsyncClient() as client:
            metrics = await client.get(f"http://127.0.0.1:{port}/metrics")
        assert metrics.status_code == 200 and "zelda_judge" in metrics.text


async def test_hud_extra_alone_serves_healthz_and_replays(install: Callable[[str], Path],
                                                          private_nats: EmbeddedNats, tmp_path: Path) -> None:
    bin_dir = install("hud")
    check_slim_install(bin_dir, "hud", tmp_path)
    await provisioned(private_nats)
    port = free_port()
    env = clean_env(ZELDA_NATS_URL=private_nats.url, ZELDA_STORE_URL=(tmp_path / "store").as_uri())
    argv = [str(bin_dir / "zelda-rlaif"), "hud", "--host", "127.0.0.1", "--port", str(port)]
    async with serving(argv, env, tmp_path / "hud.log", port):
        async with httpx.AsyncClient() as client:
            page = await client.get(f"http://127.0.0.1:{port}/")
        assert page.status_code == 200 and "zelda-rlaif" in page.text
    check_replay(bin_dir, tmp_path)

def test_reward_model_extra_resolves_torch_without_ray_or_pyboy(install: Callable[[str], Path], wheel: Path,
                                                                tmp_path: Path) -> None:
    """Resolved, not installed: a real torch venv costs minutes and a GB on every run. pip's own resolver,
    from a fresh venv and the machine's index, says what ``.[reward-model]`` would install."""
    bin_dir = install("judge")
    report = tmp_path / "report.json"
    subprocess.run([str(bin_dir / "python"), "-m", "pip", "install", "--quiet", "--dry-run", "--ignore-installed",
                    "--report", str(report), f"{wheel}[reward-model]"],
                   check=True, env=clean_env(), cwd=tmp_path, timeout=300)
    names = {item["metadata"]["name"].lower() for item in json.loads(report.read_text())["install"]}
    assert {"torch", "zelda-rlaif", "nats-py", "pydantic"} <= names, names
    assert not names & {"ray", "pyboy", "gymnasium", "numba", "fastapi", "uvicorn"}, names
