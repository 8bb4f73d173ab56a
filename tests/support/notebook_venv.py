"""The venv the workbench notebook runs in for tests: built from ``notebooks/requirements.txt`` and cached.

codeflare-sdk pins a Ray (2.58) other than the project's (2.60), so the notebook cannot run in the suite's venv.
Building its venv takes minutes (Ray, pyarrow, torch), so it is kept under
``~/.cache/zelda-rlaif/notebook-venv/<key>`` (``tests/support/cache.py``), where the key digests everything that
decides its contents: the requirements file, the project's core dependencies and the extras that file names (from
pyproject.toml), the packages that run notebooks and the Python version. A changed pin makes a new venv; old ones
can be deleted at any time.

The requirements file is installed as the notebook's first cell installs it, from a ``notebooks/`` folder whose
parent is a copy of the project's sources, so its ``..[reward-model]`` line installs the project with that extra.
The project itself is then uninstalled (its dependencies stay): the cached venv outlives any one checkout, so
the test puts the checkout's own sources on ``PYTHONPATH`` instead.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path
from typing import Any

from tests.support.cache import cache_root, locked
from tests.support.project_source import copy_project_source

ROOT = Path(__file__).resolve().parents[2]
REQUIREMENTS = ROOT / "notebooks" / "requirements.txt"
# What runs a notebook from a script (the test's side of it, not the notebook's).
RUNNER_PACKAGES = ("nbclient==0.11.0", "nbformat==5.11.1", "ipykernel==7.4.0")
# The checkout's packages, for the notebook's kernel (mypy_path in pyproject.toml lists the same roots).
SOURCE_ROOTS = ("shared", "services/trainer", "services/judge", "services/reward-model", "services/hud")


def venv_root() -> Path:
    return cache_root() / "notebook-venv"


def project_requirements() -> dict[str, Any]:
    """What installing the project as the requirements file names it pulls in: its core dependencies and the
    extras the file asks for (other extras change often and do not matter here)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = sorted({extra.strip() for group in re.findall(r"^\.\.\[([^\]]*)\]", REQUIREMENTS.read_text(), re.M)
                     for extra in group.split(",")})
    optional = project.get("optional-dependencies", {})
    return {"python": project.get("requires-python"), "dependencies": project["dependencies"],
            "extras": {extra: optional.get(extra) for extra in extras}}


def venv_key() -> str:
    digest = hashlib.sha256()
    for part in (REQUIREMENTS.read_bytes(), json.dumps(project_requirements(), sort_keys=True).encode(),
                 "\n".join(RUNNER_PACKAGES).encode(), sys.version.encode()):
        digest.update(hashlib.sha256(part).digest())
    return digest.hexdigest()[:16]


def build_env() -> dict[str, str]:
    """pip's environment: the machine's pip settings, nothing that points into the checkout or another venv."""
    env = {k: v for k, v in os.environ.items()
           if k not in {"PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME"} and not k.startswith("ZELDA_")}
    return {**env, "PYTHONNOUSERSITE": "1"}


def notebook_python() -> Path:
    """The cached venv's interpreter, building the venv first when there is none for the current key."""
    venv = venv_root() / venv_key()
    if (venv / ".complete").exists():
        return venv / "bin" / "python"
    with locked(venv_root()):
        if (venv / ".complete").exists():  # made while this one waited (the background prebuild, another session)
            return venv / "bin" / "python"
        with tempfile.TemporaryDirectory(prefix=f"{venv.name}.", dir=venv.parent) as work:
            staging = Path(work) / "venv"
            source = copy_project_source(Path(work) / "source")
            (source / "notebooks").mkdir()
            shutil.copy2(REQUIREMENTS, source / "notebooks" / REQUIREMENTS.name)
            subprocess.run([sys.executable, "-m", "venv", str(staging)], check=True, timeout=120)
            pip = [str(staging / "bin" / "python"), "-m", "pip"]
            run([*pip, "install", "--quiet", "-r", REQUIREMENTS.name, *RUNNER_PACKAGES], cwd=source / "notebooks",
                timeout_s=1800)
            run([*pip, "uninstall", "--quiet", "--yes", "zelda-rlaif"], cwd=source, timeout_s=120)
            (staging / ".complete").touch()
            try:
                staging.rename(venv)  # a venv's interpreter finds its site-packages wherever the folder is
            except OSError:
                # Made meanwhile by a session of an older checkout, which built without the lock.
                if not (venv / ".complete").exists():
                    raise
    return venv / "bin" / "python"


def run(argv: list[str], cwd: Path, timeout_s: float) -> None:
    """Run pip quietly; its output (this machine's index warnings included) is shown only when it fails."""
    done = subprocess.run(argv, env=build_env(), cwd=cwd, capture_output=True, text=True, timeout=timeout_s)
    if done.returncode != 0:
        output = f"{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
        raise RuntimeError(f"{' '.join(argv)} failed ({done.returncode}):\n{output}")


def checkout_pythonpath() -> str:
    return os.pathsep.join(str(ROOT / root) for root in SOURCE_ROOTS)
