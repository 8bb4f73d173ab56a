"""Curves outside the HUD, kept the way RL users keep them: TensorBoard event files (by default) and an MLflow run
(with ``ZELDA_TRAINER_MLFLOW_URI``). The trainer's driver alone writes to them; env runners never do.

What is logged, every figure at x = the run's env steps:

| when | metrics | artifacts (MLflow) |
|---|---|---|
| start | the trainer settings, as params (no secrets) | |
| an epoch ends | ``EpochReport.flat()``: ``episode/``, ``milestone/``, ``throughput/`` | ``checkpoints/epoch_N/`` |
| its reward model is out | ``judge/<kind>/<dim>``, ``judge/combined``, ``reward_model/`` | ``reward_models/epoch_N/`` |
| an evaluation ends | ``eval/`` + the names of ``EpisodeStats.flat()`` | ``eval/epoch_N/<video>`` |

The metric names are those of ``zelda_rlaif.episodes`` and ``zelda_rlaif.judge_figures``.
"""

from __future__ import annotations

from zelda_rlaif.storage import ObjectStore
from zelda_trainer.settings import TrainerSettings
from zelda_trainer.trackers.base import RunStatus, Tracker, TrackerUnavailable, metric_name
from zelda_trainer.trackers.fanout import Trackers
from zelda_trainer.trackers.mlflow_run import MlflowTracker, require_mlflow
from zelda_trainer.trackers.params import settings_params
from zelda_trainer.trackers.tensorboard_files import TensorBoardTracker

__all__ = ["RunStatus", "Tracker", "TrackerUnavailable", "Trackers", "metric_name", "open_trackers"]


def open_trackers(settings: TrainerSettings, store: ObjectStore) -> Trackers:
    """The trackers ``settings`` ask for (none started yet). Raises ``TrackerUnavailable`` when MLflow is asked
    for but not installed: better said before training than after it."""
    trackers: list[Tracker] = []
    if settings.tensorboard_dir is not None:
        trackers.append(TensorBoardTracker(settings.tensorboard_dir.resolve() / settings.run_id))
    if settings.mlflow_uri is not None:
        require_mlflow()
        trackers.append(MlflowTracker(settings.mlflow_uri, settings.mlflow_experiment, settings.run_id))
    return Trackers(trackers, store, settings.run_id, settings_params(settings))
