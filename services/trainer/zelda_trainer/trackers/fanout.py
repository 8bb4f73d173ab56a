"""``Trackers``: the trainer's one handle on every configured tracker.

The training loop hands figures over and goes on. One worker thread reads what else is needed from the object
store (the judges' verdicts, the checkpoint, the reward model), then writes to each tracker in turn, in the order
things happened. A failing tracker is reported once and never stops or slows training: an unreachable MLflow
server retries for minutes, in the worker only.
"""

from __future__ import annotations

import logging
import queue
import shutil
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from zelda_rlaif.episodes import EpochReport
from zelda_rlaif.evaluation import EvalReport
from zelda_rlaif.events import RewardModelUpdated
from zelda_rlaif.judge_figures import read_epoch_figures
from zelda_rlaif.storage import ObjectStore, keys
from zelda_trainer.trackers.base import RunStatus, Tracker, metric_name

log = logging.getLogger(__name__)

# Longest wait at the end of a run for updates still queued (a slow server, large artifacts); shorter when the
# run was stopped, so that Ctrl-C is not held up by an unreachable server.
CLOSE_TIMEOUT_S = 120.0
CLOSE_TIMEOUT_KILLED_S = 10.0

_Job = Callable[[], None]


class Trackers:
    def __init__(self, trackers: Sequence[Tracker], store: ObjectStore, run_id: str,
                 params: Mapping[str, str]) -> None:
        self.store = store
        self.run_id = run_id
        self._trackers = list(trackers)  # the worker's; a tracker that cannot start is dropped
        self._params = dict(params)
        self._keeps_artifacts = any(t.keeps_artifacts for t in trackers)
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._failed: set[str] = set()
        self._reward_models_logged: set[int] = set()
        self._videos: Path | None = None  # copies of evaluation videos until they are logged

    @property
    def names(self) -> list[str]:
        return [tracker.name for tracker in self._trackers]

    def start(self) -> None:
        """Start the worker; it opens each tracker's run and records the params."""
        if not self._trackers or self._thread is not None:
            return
        if self._keeps_artifacts:
            self._videos = Path(tempfile.mkdtemp(prefix="zelda-trackers-"))
        self._thread = threading.Thread(target=self._work, name="zelda-trackers", daemon=True)
        self._thread.start()
        self._jobs.put(self._start)

    def log_epoch(self, report: EpochReport, checkpoint: str | None = None,
                  learning: Mapping[str, float] | None = None) -> None:
        """The epoch's ``EpochReport.flat()`` and ``learning`` (the learner's and the callbacks' figures of its last
        training iteration, ``metrics.learning_figures``) at x = its env steps, and the checkpoint stored at
        ``checkpoint`` (a ``keys.checkpoint`` prefix) as artifacts."""
        figures = {**report.flat(), **(learning or {})}

        def job() -> None:
            self._log_metrics(f"epoch {report.epoch}", figures, report.env_steps)
            if checkpoint is not None:
                self._log_stored(f"epoch {report.epoch}'s checkpoint", checkpoint, f"checkpoints/epoch_{report.epoch}")

        self._submit(job)

    def log_reward_model(self, update: RewardModelUpdated) -> None:
        """Once the reward model answered an epoch (its scores are ready): the judges' figures and the reward
        model's at x = the epoch's env steps, and the reward model (``rm.pt``, ``metadata.json``) as artifacts."""
        if update.run_id != self.run_id or update.epoch in self._reward_models_logged:
            return
        self._reward_models_logged.add(update.epoch)

        def job() -> None:
            epoch = update.epoch
            report = EpochReport.model_validate_json(self.store.get_bytes(keys.epoch_report(self.run_id, epoch)))
            figures = read_epoch_figures(self.store, self.run_id, epoch, update)
            self._log_metrics(f"epoch {epoch}'s judge scores", figures, report.env_steps)
            self._log_stored(f"epoch {epoch}'s reward model", keys.reward_model_prefix(self.run_id, epoch),
                             f"reward_models/epoch_{epoch}")

        self._submit(job)

    def log_eval(self, report: EvalReport, video: Path | None) -> None:
        """An evaluation of the policy of an epoch: its figures as ``eval/<name>`` at x = the epoch's env steps,
        and the video of its best episode as an artifact (copied now: the caller may delete the file)."""
        epoch, env_steps = report.epoch, report.env_steps
        if epoch is None or env_steps is None:
            log.warning("trackers: an evaluation without an epoch and its env steps has no place on the curves")
            return
        figures = {f"eval/{name}": value for name, value in report.episodes.flat().items()}
        kept: Path | None = None
        if video is not None and self._videos is not None and self._thread is not None:
            kept = self._videos / f"epoch_{epoch}" / video.name
            kept.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(video, kept)

        def job() -> None:
            self._log_metrics(f"epoch {epoch}'s evaluation", figures, env_steps)
            if kept is not None:
                self._each(f"epoch {epoch}'s evaluation video",
                           lambda t: t.log_artifacts(kept, f"eval/epoch_{epoch}"), artifacts=True)

        self._submit(job)

    def close(self, status: RunStatus, timeout_s: float | None = None) -> None:
        """Write what is queued, close every tracker's run with ``status``; give up on what is left after
        ``timeout_s`` (default: ``CLOSE_TIMEOUT_S``, ``CLOSE_TIMEOUT_KILLED_S`` for a stopped run)."""
        if timeout_s is None:
            timeout_s = CLOSE_TIMEOUT_KILLED_S if status == "KILLED" else CLOSE_TIMEOUT_S
        if self._thread is not None:
            self._jobs.put(lambda: self._each("closing", lambda t: t.close(status)))
            self._jobs.put(None)
            self._thread.join(timeout_s)
            if self._thread.is_alive():
                log.warning("trackers: updates still queued after %.0fs are dropped (%s)", timeout_s,
                            ", ".join(self.names))
            self._thread = None
        if self._videos is not None:
            shutil.rmtree(self._videos, ignore_errors=True)
            self._videos = None

    # The worker thread's side.

    def _submit(self, job: _Job) -> None:
        if self._thread is not None:
            self._jobs.put(job)

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            try:
                job()
            except Exception as exc:  # a store read failed: the trackers lose this update, training goes on
                self._warn_once("the object store", "reading what the trackers log", exc)

    def _start(self) -> None:
        for tracker in list(self._trackers):
            try:
                tracker.start(self._params)
            except Exception as exc:  # a tracker that cannot start must not stop training
                self._trackers.remove(tracker)
                log.warning("%s could not start; the run goes on without it: %s: %s", tracker.name,
                            type(exc).__name__, exc)

    def _log_metrics(self, what: str, figures: Mapping[str, float], step: int) -> None:
        named = {metric_name(name): value for name, value in figures.items()}
        self._each(what, lambda t: t.log_metrics(named, step))

    def _log_stored(self, what: str, prefix: str, artifact_path: str) -> None:
        """The objects under ``prefix`` as artifacts, through a temporary directory."""
        if not any(t.keeps_artifacts for t in self._trackers):
            return
        with tempfile.TemporaryDirectory(prefix="zelda-trackers-") as tmp:
            if self.store.download_dir(prefix, Path(tmp)) == 0:
                log.warning("trackers: nothing stored at %s for %s", prefix, what)
                return
            self._each(what, lambda t: t.log_artifacts(Path(tmp), artifact_path), artifacts=True)

    def _each(self, what: str, action: Callable[[Tracker], None], *, artifacts: bool = False) -> None:
        for tracker in self._trackers:
            if artifacts and not tracker.keeps_artifacts:
                continue
            try:
                action(tracker)
            except Exception as exc:  # a tracker failure never stops training
                self._warn_once(tracker.name, what, exc)

    def _warn_once(self, who: str, what: str, exc: Exception) -> None:
        if who in self._failed:
            log.debug("%s failed again (%s): %s: %s", who, what, type(exc).__name__, exc)
            return
        self._failed.add(who)
        log.warning("%s failed (%s): %s: %s; training goes on (later failures of %s are logged at debug level)",
                    who, what, type(exc).__name__, exc, who)
