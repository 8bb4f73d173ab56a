"""TensorBoard event files: ``tensorboard --logdir <dir>`` shows every run written under ``<dir>``."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from zelda_trainer.trackers.base import RunStatus, Tracker

if TYPE_CHECKING:
    from torch.utils.tensorboard import SummaryWriter

log = logging.getLogger(__name__)


class TensorBoardTracker(Tracker):
    name = "TensorBoard"

    def __init__(self, log_dir: Path) -> None:
        """``log_dir``: this run's own directory (``<tensorboard_dir>/<run id>``)."""
        self.log_dir = log_dir
        self._writer: SummaryWriter | None = None

    def start(self, params: Mapping[str, str]) -> None:
        # Imported here: it loads TensorBoard's protobufs, which a trainer without trackers never needs.
        from torch.utils.tensorboard import SummaryWriter

        self._writer = SummaryWriter(log_dir=str(self.log_dir))
        table = "\n".join(["| setting | value |", "|---|---|", *(f"| {k} | {v} |" for k, v in params.items())])
        self._writer.add_text("settings", table, global_step=0)
        self._writer.flush()
        log.info("TensorBoard event files in %s (see them: tensorboard --logdir %s)", self.log_dir, self.log_dir.parent)

    def log_metrics(self, figures: Mapping[str, float], step: int) -> None:
        writer = self._started()
        for name, value in figures.items():
            writer.add_scalar(name, value, global_step=step)
        # Flushed at once: `tensorboard` shows an epoch as soon as it ends, and a killed trainer loses nothing.
        writer.flush()

    def close(self, status: RunStatus) -> None:
        if self._writer is not None:
            self._writer.close()

    def _started(self) -> SummaryWriter:
        if self._writer is None:
            raise RuntimeError("TensorBoardTracker.start was not called")
        return self._writer
