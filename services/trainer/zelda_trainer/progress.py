"""What the trainer prints: a progress bar per epoch (env steps, steps/s, the epoch's finished episodes so far,
and what it waits for while NATS or the object store is unreachable) and one line per finished epoch from its
``EpochReport``."""

from __future__ import annotations

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text

from zelda_rlaif.episodes import EpisodeStats, EpochReport
from zelda_rlaif.retry import current_outages
from zelda_trainer.settings import TrainerSettings


def epoch_line(report: EpochReport, segments: int) -> str:
    return (f"epoch {report.epoch}: {report.epoch_env_steps} env steps in {report.wall_time_s:.0f} s "
            f"({report.env_steps_per_s:.0f} steps/s), {segments} segments exported; {report.episodes.describe()}")


def waiting_line() -> str:
    """What the trainer waits for right now, e.g. "waiting for NATS at nats://...: unreachable for 42 s"; "" when
    nothing."""
    return "; ".join(outage.describe() for outage in current_outages())


class WaitingColumn(ProgressColumn):
    """Read at every refresh, so the seconds count up while the epoch loop itself is blocked in a retry."""

    def render(self, task: Task) -> Text:
        return Text(waiting_line(), style="yellow")


class ConsoleProgress:
    def __init__(self, settings: TrainerSettings, enabled: bool = True) -> None:
        self.steps_per_epoch = settings.steps_per_epoch
        self._progress: Progress | None = None
        self._task: TaskID | None = None
        self._epoch: int | None = None
        if enabled:
            self._progress = Progress(
                TextColumn("[bold]epoch {task.fields[epoch]}"), BarColumn(), MofNCompleteColumn(),
                TextColumn("{task.fields[rate]:>7.0f} steps/s  {task.fields[episodes]}  rooms {task.fields[rooms]}"),
                TimeElapsedColumn(), WaitingColumn(),
            )
            self._progress.start()

    def update(self, epoch: int, epoch_steps: int, rate: float, episodes: EpisodeStats, rooms: int) -> None:
        """``episodes``: the epoch's finished episodes so far; ``rooms``: rooms seen in the run."""
        if self._progress is None:
            return
        if episodes.count == 0:
            shown = "no episode finished yet"
        else:
            score = "" if episodes.milestone_score is None else f"  milestones {episodes.milestone_score:.2f}"
            shown = f"{episodes.count} episodes  env return {episodes.return_env_mean:.2f}{score}"
        if self._epoch != epoch:
            self._epoch = epoch
            self._task = self._progress.add_task("train", total=self.steps_per_epoch, epoch=epoch, rate=0.0,
                                                 episodes=shown, rooms=0)
        assert self._task is not None
        self._progress.update(self._task, completed=min(epoch_steps, self.steps_per_epoch), rate=rate,
                              episodes=shown, rooms=rooms)

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
