"""One MLflow run per zelda run: params, per-epoch metrics at x = env steps, and artifacts.

A resumed zelda run continues its MLflow run (found by the ``zelda_run_id`` tag) instead of starting another.
MLflow is imported only here and only when a URI is configured: it is an optional extra (``zelda-rlaif[mlflow]``)
and its import alone costs about a second.
"""

from __future__ import annotations

import importlib.util
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from zelda_trainer.trackers.base import RunStatus, Tracker, TrackerUnavailable

if TYPE_CHECKING:
    from mlflow.entities import Metric
    from mlflow.tracking import MlflowClient

log = logging.getLogger(__name__)

RUN_TAG = "zelda_run_id"
# MLflow's limits per log_batch request.
_PARAMS_PER_BATCH = 100
_METRICS_PER_BATCH = 1000


def require_mlflow() -> None:
    """Raise ``TrackerUnavailable`` when MLflow is not installed (checked at start, before any training)."""
    if importlib.util.find_spec("mlflow") is None:
        raise TrackerUnavailable("ZELDA_TRAINER_MLFLOW_URI is set but MLflow is not installed: "
                                 "pip install 'zelda-rlaif[mlflow]', or unset it")


@dataclass(frozen=True)
class _OpenRun:
    client: MlflowClient
    run_id: str  # MLflow's id of the run, not the zelda run id
    metric: type[Metric]


def artifact_location(tracking_uri: str) -> str | None:
    """Where a new experiment keeps its artifacts: beside a local sqlite database (MLflow's own default is
    ./mlruns in whatever the working directory is); a tracking server decides for itself (None)."""
    if tracking_uri.startswith("sqlite:///"):
        return (Path(tracking_uri.removeprefix("sqlite:///")).parent / "mlartifacts").resolve().as_uri()
    return None


class MlflowTracker(Tracker):
    name = "MLflow"
    keeps_artifacts = True

    def __init__(self, tracking_uri: str, experiment: str, run_id: str) -> None:
        self.tracking_uri = tracking_uri
        self.experiment = experiment
        self.run_id = run_id
        self._run: _OpenRun | None = None

    def start(self, params: Mapping[str, str]) -> None:
        try:  # every MLflow import is here, guarded: the trainer's image does not carry MLflow
            from mlflow.entities import Metric, Param
            from mlflow.entities import RunStatus as MlflowRunStatus
            from mlflow.exceptions import MlflowException
            from mlflow.tracking import MlflowClient
        except ImportError as exc:
            raise TrackerUnavailable("MLflow is not installed: pip install 'zelda-rlaif[mlflow]'") from exc

        client = MlflowClient(tracking_uri=self.tracking_uri)
        experiment = client.get_experiment_by_name(self.experiment)
        if experiment is not None:
            experiment_id = experiment.experiment_id
        else:
            try:
                experiment_id = client.create_experiment(self.experiment,
                                                         artifact_location=artifact_location(self.tracking_uri))
            except MlflowException:  # another trainer created it in the meantime
                experiment = client.get_experiment_by_name(self.experiment)
                if experiment is None:
                    raise
                experiment_id = experiment.experiment_id
        found = client.search_runs([experiment_id], filter_string=f"tags.{RUN_TAG} = '{self.run_id}'", max_results=1)
        if found:
            run = found[0]
            client.update_run(run.info.run_id, status=MlflowRunStatus.to_string(MlflowRunStatus.RUNNING))
            log.info("MLflow: continuing run %s of experiment %s", run.info.run_id, self.experiment)
        else:
            run = client.create_run(experiment_id, run_name=self.run_id, tags={RUN_TAG: self.run_id})
        recorded = run.data.params
        # MLflow refuses to change a param: a resumed run keeps the values it started with.
        changed = sorted(k for k, v in params.items() if k in recorded and recorded[k] != v)
        if changed:
            log.info("MLflow: settings changed since the run started keep their first value there: %s",
                     ", ".join(changed))
        new = [Param(k, v) for k, v in params.items() if k not in recorded]
        for first in range(0, len(new), _PARAMS_PER_BATCH):
            client.log_batch(run.info.run_id, params=new[first:first + _PARAMS_PER_BATCH])
        self._run = _OpenRun(client, run.info.run_id, Metric)
        log.info("MLflow: run %s (%s) of experiment %s at %s", self.run_id, run.info.run_id, self.experiment,
                 self.tracking_uri)

    def log_metrics(self, figures: Mapping[str, float], step: int) -> None:
        run = self._started()
        now_ms = int(time.time() * 1000)
        metrics = [run.metric(name, value, now_ms, step) for name, value in figures.items()]
        for first in range(0, len(metrics), _METRICS_PER_BATCH):
            run.client.log_batch(run.run_id, metrics=metrics[first:first + _METRICS_PER_BATCH])

    def log_artifacts(self, local_path: Path, artifact_path: str) -> None:
        run = self._started()
        if local_path.is_dir():
            run.client.log_artifacts(run.run_id, str(local_path), artifact_path)
        else:
            run.client.log_artifact(run.run_id, str(local_path), artifact_path)

    def close(self, status: RunStatus) -> None:
        if self._run is not None:
            self._run.client.set_terminated(self._run.run_id, status)

    def _started(self) -> _OpenRun:
        if self._run is None:
            raise RuntimeError("MlflowTracker.start was not called")
        return self._run
