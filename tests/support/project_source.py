"""A clean copy of what pip needs to build the project from source, for tests that install it into fresh venvs.

The same files the Dockerfile's COPY instructions take (pyproject.toml's build system reads README.md too),
without caches, build outputs or a user's ROM and save states that .dockerignore also drops.
"""

from __future__ import annotations

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("pyproject.toml", "README.md", "shared", "services")
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build", "*.gbc", "*.state")


def copy_project_source(destination: Path) -> Path:
    """Copies the project's buildable source into ``destination`` (created if missing) and returns it."""
    destination.mkdir(parents=True, exist_ok=True)
    for name in SOURCES:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, destination / name, ignore=IGNORED)
        else:
            shutil.copy2(path, destination / name)
    return destination
