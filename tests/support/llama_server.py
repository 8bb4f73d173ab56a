"""llama.cpp's own ``llama-server``, built from source by the test set-up and run on a loopback port.

The judges and the guidance planner speak the OpenAI / vLLM dialect (``response_format`` ``json_schema``,
``seed``, ``n``, image parts). ``llama-server`` speaks it too, runs on a CPU, and needs no download host: its
sources come from PyPI inside the ``llama-cpp-python`` source distribution (``vendor/llama.cpp``). The Python
package's own server (``llama_cpp.server``) is not used: it answers ``json_schema`` with HTTP 500.

    binary = llama_server_binary()          # cached; the first call builds it (~6 minutes on 2 cores)
    with LlamaServer(binary, model, aliases=("judge-state",)) as llm:
        ...  # llm.url is the API base, e.g. http://127.0.0.1:41234/v1

The build lands in ``~/.cache/zelda-rlaif/llama-server/<version>/llama-server`` (``ZELDA_TEST_CACHE`` or
``XDG_CACHE_HOME`` move it) and is reused by every later run; ``LLAMA_SERVER`` names a binary to use instead
(e.g. one from a llama.cpp release). By hand::

    python -m tests.support.llama_server    # builds if needed, prints the binary's path
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO

import httpx

from tests.support.cache import cache_root, locked
from zelda_rlaif.errors import ZeldaRlaifError

# The one pin: the llama-cpp-python release whose vendored llama.cpp is built (its server is what the tests run).
LLAMA_CPP_PYTHON_VERSION = "0.3.36"
CMAKE_FLAGS = (
    "-DCMAKE_BUILD_TYPE=Release", "-DBUILD_SHARED_LIBS=OFF", "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_CURL=OFF", "-DLLAMA_OPENSSL=OFF",
    # Portable: the cached binary may outlive this CPU (a tiny model needs no AVX-512).
    "-DGGML_NATIVE=OFF",
)


class LlamaServerError(ZeldaRlaifError):
    """llama-server could not be built or did not come up; the message says what to check."""


def build_dir() -> Path:
    return cache_root() / "llama-server" / LLAMA_CPP_PYTHON_VERSION


def llama_server_binary(*, jobs: int | None = None, log: Path | None = None) -> Path:
    """The cached ``llama-server``, built first if missing (needs cmake and a C++ compiler)."""
    if os.environ.get("LLAMA_SERVER"):
        return Path(os.environ["LLAMA_SERVER"])
    directory = build_dir()
    binary = directory / "llama-server"
    with locked(directory):
        if binary.exists():
            return binary
        missing = [tool for tool in ("cmake", "c++") if shutil.which(tool) is None]
        if missing:
            raise LlamaServerError(f"building llama-server needs {' and '.join(missing)} (apt-get install cmake g++)")
        log = log or directory / "build.log"
        with tempfile.TemporaryDirectory(prefix="llama-build-", dir=directory) as work, log.open("w") as out:
            sources = _sources(Path(work), directory, out)
            build = Path(work) / "build"
            _run(["cmake", "-S", str(sources), "-B", str(build), *CMAKE_FLAGS], out, log)
            _run(["cmake", "--build", str(build), "--target", "llama-server", "-j", str(jobs or os.cpu_count() or 2)],
                 out, log)
            partial = directory / "llama-server.partial"
            shutil.copy2(build / "bin" / "llama-server", partial)
            partial.replace(binary)
        return binary


def _sources(work: Path, directory: Path, out: IO[str]) -> Path:
    """``vendor/llama.cpp`` of the pinned sdist (downloaded once with pip and kept beside the binary)."""
    name = f"llama_cpp_python-{LLAMA_CPP_PYTHON_VERSION}.tar.gz"
    sdist = directory / name
    if not sdist.exists():
        _run([sys.executable, "-m", "pip", "download", "--quiet", "--no-binary", ":all:", "--no-deps",
              f"llama-cpp-python=={LLAMA_CPP_PYTHON_VERSION}", "-d", str(work)], out, directory / "build.log")
        (work / name).replace(sdist)
    with tarfile.open(sdist) as archive:
        archive.extractall(work, filter="data")
    return work / name.removesuffix(".tar.gz") / "vendor" / "llama.cpp"


def _run(command: Sequence[str], out: IO[str], log: Path) -> None:
    result = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, check=False)
    if result.returncode != 0:
        tail = log.read_text(errors="replace")[-2000:]
        raise LlamaServerError(f"{' '.join(command[:3])} ... failed (exit {result.returncode}); log {log}:\n{tail}")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LlamaServer:
    """One ``llama-server`` process serving ``model`` (and ``mmproj``, for image inputs) under ``aliases``."""

    def __init__(self, binary: Path, model: Path, *, aliases: Sequence[str] = ("tiny",), mmproj: Path | None = None,
                 parallel: int = 4, context: int = 16384, log: Path | None = None,
                 extra: Sequence[str] = ()) -> None:
        self.binary, self.model, self.mmproj = binary, model, mmproj
        self.aliases = tuple(aliases)
        self.port = free_port()
        self.log = log or Path(tempfile.mkstemp(prefix="llama-server-", suffix=".log")[1])
        self.command = [
            str(binary), "-m", str(model), "--host", "127.0.0.1", "--port", str(self.port),
            "-a", ",".join(self.aliases), "-c", str(context), "--parallel", str(parallel), "--threads", "1",
            "--no-webui", *(["--mmproj", str(mmproj)] if mmproj else []), *extra,
        ]
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def model_name(self) -> str:
        return self.aliases[0]

    def start(self, timeout_s: float = 60.0) -> LlamaServer:
        with self.log.open("wb") as out:
            self._process = subprocess.Popen(self.command, stdout=out, stderr=subprocess.STDOUT,
                                             stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise LlamaServerError(f"llama-server exited with {self._process.returncode}; its log "
                                       f"{self.log}:\n{self.log.read_text(errors='replace')[-3000:]}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"http://127.0.0.1:{self.port}/health", timeout=1.0).status_code == 200:
                    return self
            time.sleep(0.1)
        self.stop()
        raise LlamaServerError(f"llama-server not healthy within {timeout_s}s; log {self.log}")

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._process = None

    def __enter__(self) -> LlamaServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main() -> None:
    started = time.perf_counter()
    binary = llama_server_binary()
    print(f"{binary} ({time.perf_counter() - started:.0f}s)")


if __name__ == "__main__":
    main()
