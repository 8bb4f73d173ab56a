"""What a tracker is: a place outside the object store that keeps a run's figures, settings and artifacts."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from zelda_rlaif.errors import ZeldaRlaifError

# How the run ended, in MLflow's words (a run that is going on is RUNNING).
RunStatus = Literal["FINISHED", "FAILED", "KILLED"]

_NAME_PART = re.compile(r"[^\w.\- ]")
_MAX_NAME_CHARS = 250


class TrackerUnavailable(ZeldaRlaifError):
    """A tracker was asked for that cannot run here (its package is not installed)."""


def metric_name(name: str) -> str:
    """``name`` as every tracker accepts it: MLflow allows letters, digits, ``_ - . /`` and spaces, and no empty,
    ``.`` or ``..`` path part. Names of the metric tables (``episode/...``, ``milestone/<name>``) pass unchanged."""
    parts = [_NAME_PART.sub("_", part) for part in name.split("/")]
    return "/".join(part if part.strip(".") else "_" for part in parts)[:_MAX_NAME_CHARS]


class Tracker(ABC):
    """Called from one worker thread only (``Trackers``), never from the training loop itself."""

    name: str  # for people: "TensorBoard", "MLflow"
    keeps_artifacts: bool = False  # whether ``log_artifacts`` keeps anything (else nothing is downloaded for it)

    @abstractmethod
    def start(self, params: Mapping[str, str]) -> None:
        """Open the tracker's run and record the run's settings."""

    @abstractmethod
    def log_metrics(self, figures: Mapping[str, float], step: int) -> None:
        """``figures`` by metric name, at x = ``step`` (env steps of the run)."""

    def log_artifacts(self, local_path: Path, artifact_path: str) -> None:  # noqa: B027 (optional for a tracker)
        """Keep a file, or a directory's files, under ``artifact_path``."""

    @abstractmethod
    def close(self, status: RunStatus) -> None: ...
