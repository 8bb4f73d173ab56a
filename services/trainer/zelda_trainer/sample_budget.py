"""``SampleBudget``: one sample's env steps, shared by the env runners of one machine while they play.

PPO asks every env runner for the same share of a batch and waits for the slowest. On a small machine the runners'
speed moves from sample to sample with the host (docs/performance.md, "Runners that wait for each other": a median
43 ms of a ~190 ms sample), so one core idles while the other finishes. With a shared budget each runner claims the
batch's steps a vector step at a time and stops when the batch is full: the faster runner plays more, and both end
within a vector step of each other.

The budget is three integers (the round, its steps, the steps claimed) in a small file in shared memory that the
driver's algorithm creates before its env runners start and every runner maps, each change under an exclusive
``flock``; a claim costs a few microseconds against a vector step's milliseconds. The config carries only the file's
name, so a run restored from a checkpoint makes it again. It works only where the runners share the driver's
machine, a local Ray (``algorithm.py`` names a budget only then). A runner that cannot open the file plays its own
share, as without a budget; one whose first claim finds the batch already full plays its own share too if it had
played in that round already (a second round of RLlib's sampling, after a runner failed mid-sample and took its
steps with it; a sample outside an iteration), and nothing if it had not (it started late, and the others filled the
batch). A runner that fails mid-sample leaves its unclaimed steps to the others.

The split between runners follows their speed, so a run with a shared budget is not reproducible from its seed:
``TrainerSettings.shared_sample_budget`` is off by default with sync shaping, whose runs a seed reproduces.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import mmap
import os
import struct
import tempfile
import uuid
from pathlib import Path
from typing import Any

from ray.rllib.algorithms.ppo import PPO

log = logging.getLogger(__name__)

ENV_CONFIG_KEY = "zelda_sample_budget"  # beside the env config's own key: where the runners find the budget
_LAYOUT = struct.Struct("<qqq")  # the round (0: never armed), the round's steps, the steps claimed so far


class SampleBudget:
    def __init__(self, path: Path, *, create: bool = False) -> None:
        self.path = path
        self._fd = os.open(path, os.O_RDWR | (os.O_CREAT if create else 0), 0o600)
        try:
            if create:  # zeros (a claim fails until the driver arms a round), also over a killed run's old file
                os.ftruncate(self._fd, 0)
                os.ftruncate(self._fd, _LAYOUT.size)
            self._map = mmap.mmap(self._fd, _LAYOUT.size)
        except OSError:
            os.close(self._fd)
            raise

    @staticmethod
    def new_name() -> str:
        """A name for a run's budget; its file is made by the driver's algorithm when it starts (``create``)."""
        return f"zelda-sample-budget-{uuid.uuid4().hex}"

    @classmethod
    def create(cls, name: str) -> SampleBudget | None:
        """The driver's new budget, or None where neither directory takes its file (the runners then play equal
        shares)."""
        errors = []
        for path in _places(name):
            try:
                return cls(path, create=True)
            except OSError as error:
                errors.append(f"{path}: {error}")
        log.warning("no sample budget (%s): the env runners play equal shares", "; ".join(errors))
        return None

    @classmethod
    def open(cls, name: str) -> SampleBudget | None:
        """The driver's budget, or None where its file is not (an env runner on another machine)."""
        for path in _places(name):
            with contextlib.suppress(OSError):
                return cls(path)
        log.info("sample budget %s is not on this machine: this env runner plays its own share", name)
        return None

    # Each change takes the lock by hand: a context manager costs more than the claim itself, once per vector step.

    def arm(self, steps: int) -> None:
        """A new round: ``steps`` to share, none claimed."""
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        try:
            round_number = _LAYOUT.unpack_from(self._map, 0)[0]
            _LAYOUT.pack_into(self._map, 0, round_number + 1, steps, 0)
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def join(self, steps: int) -> tuple[int, bool]:
        """A runner's first claim of a sample: the round it falls in, and whether ``steps`` were granted."""
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        try:
            return _LAYOUT.unpack_from(self._map, 0)[0], self._claim(steps, 0)
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def claim(self, steps: int, unused: int = 0) -> bool:
        """Give back ``unused`` steps of the last claim and claim ``steps`` more; False when the batch is full."""
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        try:
            return self._claim(steps, unused)
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def _claim(self, steps: int, unused: int) -> bool:
        """Under the lock."""
        round_number, total, claimed = _LAYOUT.unpack_from(self._map, 0)
        claimed -= unused
        granted = claimed < total
        _LAYOUT.pack_into(self._map, 0, round_number, total, claimed + steps if granted else claimed)
        return granted

    def claimed(self) -> int:
        return int(_LAYOUT.unpack_from(self._map, 0)[2])  # one aligned read of the mapped word: no lock needed

    def close(self, *, remove: bool = False) -> None:
        self._map.close()
        os.close(self._fd)
        if remove:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()


def _places(name: str) -> list[Path]:
    """Where a budget's file may lie, in the order the driver tries to make it: in shared memory, else in the temp
    dir."""
    return [Path("/dev/shm") / name, Path(tempfile.gettempdir()) / name]


def runner_budget(env_config: Any) -> SampleBudget | None:
    """The budget an env runner's config names, or None (none configured, or not on this machine)."""
    name = env_config.get(ENV_CONFIG_KEY)
    return SampleBudget.open(name) if name else None


class SharedBudgetPPO(PPO):
    """RLlib's PPO whose driver makes the run's sample budget before its env runners start (when the config names
    one) and arms it before each iteration's sampling."""

    sample_budget: SampleBudget | None = None
    # False: the budget is left unarmed, so each runner plays its own share as without one (bench_paired.py
    # alternates the two in one run).
    share_samples: bool = True

    def setup(self, config: Any) -> None:
        name = config.env_config.get(ENV_CONFIG_KEY)
        if name:  # before the env runners, which open it as they start (a restored run's too: the same name)
            self.sample_budget = SampleBudget.create(name)
        super().setup(config)

    def arm_sample_budget(self, steps: int) -> None:
        if self.sample_budget is not None and self.share_samples:
            self.sample_budget.arm(steps)

    def training_step(self) -> None:
        assert self.config is not None
        self.arm_sample_budget(self.config.total_train_batch_size)
        super().training_step()

    def cleanup(self) -> None:
        super().cleanup()
        if self.sample_budget is not None:
            self.sample_budget.close(remove=True)
            self.sample_budget = None
