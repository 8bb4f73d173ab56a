"""How ``zelda-rlaif up`` is stopped: Ctrl-C or SIGTERM asks it to stop its services in order, and it then says
how to continue the run."""

from __future__ import annotations

import shlex
import signal
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import Any

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)

# Seconds each stage of the shutdown may take before its processes are killed: the trainer first (it cancels
# the epoch in progress; the last checkpoint is what --resume continues from), then the judges, the reward model
# and the HUD together, NATS last so that everyone could still publish while stopping. 12 + 8 + 3 s, with the
# reaping, stays within the 30 s a user or an orchestrator waits before killing.
TRAINER_GRACE_S = 12.0
SERVICES_GRACE_S = 8.0
NATS_GRACE_S = 3.0


class StopRequest:
    """The first SIGINT or SIGTERM asks ``up`` to stop; another one hurries the stop (no more grace).

    A handler that only records is safe anywhere, so no signal interrupts ``up`` with a ``KeyboardInterrupt``
    halfway through starting or stopping a service. Its children run in their own process groups, so a
    terminal's Ctrl-C reaches ``up`` alone and ``up`` decides the order.
    """

    def __init__(self) -> None:
        self.signum: int | None = None
        self.hurry = False
        self._previous: dict[int, Any] = {}

    def install(self) -> StopRequest:
        for signum in STOP_SIGNALS:
            self._previous[signum] = signal.signal(signum, self._on_signal)
        return self

    def restore(self) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if self.signum is None:
            self.signum = signum
        else:
            self.hurry = True

    @property
    def requested(self) -> bool:
        return self.signum is not None

    @property
    def exit_code(self) -> int:
        """128 + the signal, as a shell reports a process the signal ended: 130 for Ctrl-C, 143 for SIGTERM."""
        return 128 + (self.signum or 0)


def resume_command(run_dir: Path, epochs_left: int, flags: Sequence[str]) -> str:
    """The command that continues the run in ``run_dir``: the epochs it had left and the flags that shaped it."""
    return shlex.join(["zelda-rlaif", "up", "--resume", "--run-dir", str(run_dir), "--epochs", str(epochs_left),
                       *flags])
