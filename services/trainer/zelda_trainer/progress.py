"""The console progress bar: epoch, steps, env steps/s, mean episode return, rooms visited."""

from __future__ import annotations

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from zelda_trainer.settings import TrainerSettings


class ConsoleProgress:
    def __init__(self, settings: TrainerSettings, enabled: bool = True) -> None:
        self.steps_per_epoch = settings.steps_per_epoch
        self._progress: Progress | None = None
        self._task: TaskID | None = None
        self._epoch: int | None = None
        if enabled:
            self._progress = Progress(
                TextColumn("[bold]epoch {task.fields[epoch]}"), BarColumn(), MofNCompleteColumn(),
                TextColumn("{task.fields[rate]:>7.0f} steps/s  return {task.fields[ret]}  rooms {task.fields[rooms]}"),
                TimeElapsedColumn(),
            )
            self._progress.start()

    def update(self, epoch: int, epoch_steps: int, rate: float, mean_return: float | None, rooms: int) -> None:
        if self._progress is None:
            return
        shown = "-" if mean_return is None else f"{mean_return:.2f}"
        if self._epoch != epoch:
            self._epoch = epoch
            self._task = self._progress.add_task("train", total=self.steps_per_epoch, epoch=epoch, rate=0.0,
                                                 ret="-", rooms=0)
        assert self._task is not None
        self._progress.update(self._task, completed=min(epoch_steps, self.steps_per_epoch), rate=rate, ret=shown,
                              rooms=rooms)

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
