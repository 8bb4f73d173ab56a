"""The run's epochs as stored (blocking: call in a thread): one row per epoch with the trainer's ``EpochReport``,
the judges' scores per kind and dimension, and the reward model trained on them.

This is what the epoch table and the charts' per-epoch points show, live and for a finished run alike: it needs
only the object store. Metric names are those of ``EpochReport.flat`` and ``zelda_rlaif.judge_figures``, as in
every other output.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from zelda_hud.cache import FinalViews
from zelda_rlaif.episodes import EpochReport
from zelda_rlaif.errors import ObjectNotFound
from zelda_rlaif.events import EpochExported
from zelda_rlaif.judge_figures import read_epoch_figures
from zelda_rlaif.reward_model.metadata import RewardModelMetadata
from zelda_rlaif.storage import ObjectStore, keys

log = logging.getLogger(__name__)

EpochRow = dict[str, Any]


@dataclass
class _EpochKeys:
    """What the store holds for one epoch, from three listings (no object read yet)."""

    report: bool = False
    manifest: bool = False
    scores: bool = False
    reward_model: bool = False
    scored: int = 0
    unjudged: int = 0


def _list_epochs(store: ObjectStore, run_id: str) -> dict[int, _EpochKeys]:
    found: dict[int, _EpochKeys] = defaultdict(_EpochKeys)
    for key in store.list(keys.epoch_reports(run_id)):
        epoch = keys.epoch_of(key)
        if epoch is not None and key == keys.epoch_report(run_id, epoch):
            found[epoch].report = True
    for key in store.list(keys.reward_models(run_id)):
        epoch = keys.epoch_of(key)
        if epoch is not None and key == keys.reward_model_metadata(run_id, epoch):
            found[epoch].reward_model = True
    for key in store.list(keys.run_scores(run_id)):
        epoch = keys.epoch_of(key)
        if epoch is None:
            continue
        entry = found[epoch]
        if key == keys.epoch_scores(run_id, epoch):
            entry.scores = True
        elif key == keys.epoch_manifest(run_id, epoch):
            entry.manifest = True
        elif key.startswith(keys.scored_segments(run_id, epoch)):
            entry.scored += 1
        elif key.startswith(keys.unjudged_segments(run_id, epoch)):
            entry.unjudged += 1
    return found


def list_epochs(store: ObjectStore, run_id: str, final: FinalViews[EpochRow]) -> list[EpochRow]:
    """Every epoch the store knows of, oldest first. Rows of epochs whose report, scores and reward model are all
    stored come from ``final`` once built (they cannot change any more)."""
    rows = []
    for epoch, stored in sorted(_list_epochs(store, run_id).items()):
        row = final.get((run_id, epoch))
        if row is None:
            row = _epoch_row(store, run_id, epoch, stored)
            if stored.report and stored.scores and stored.reward_model and not row["unreadable"]:
                final.put((run_id, epoch), row)
        rows.append(row)
    return rows


def _epoch_row(store: ObjectStore, run_id: str, epoch: int, stored: _EpochKeys) -> EpochRow:
    unreadable: list[str] = []

    def read(key: str, model: Any) -> Any:
        try:
            return model.model_validate_json(store.get_bytes(key))
        except ObjectNotFound:  # removed since the listing (a resumed run rewrites its last epoch)
            return None
        except ValidationError as exc:
            unreadable.append(f"{key}: {exc.error_count()} errors, first: {exc.errors()[0]['msg']}")
            return None

    report: EpochReport | None = read(keys.epoch_report(run_id, epoch), EpochReport) if stored.report else None
    announced: EpochExported | None = (
        read(keys.epoch_manifest(run_id, epoch), EpochExported) if stored.manifest else None
    )
    model: RewardModelMetadata | None = (
        read(keys.reward_model_metadata(run_id, epoch), RewardModelMetadata) if stored.reward_model else None
    )
    metrics: dict[str, float] = dict(report.flat()) if report else {}
    metrics.update(read_epoch_figures(store, run_id, epoch, model.event if model else None))
    if unreadable:
        log.warning("epoch %d of run %s: %d stored objects are unreadable, first: %s", epoch, run_id,
                    len(unreadable), unreadable[0])
    return {
        "epoch": epoch,
        # Where the epoch sits on the charts' x axis: the report's env steps, else those the trainer announced.
        "env_steps": report.env_steps if report else announced.env_steps if announced else None,
        "report": report.model_dump(mode="json") if report else None,
        "episodes_summary": report.episodes.describe() if report else None,
        "metrics": metrics,
        "segments_announced": announced.segments_exported if announced else None,
        "segments_scored": stored.scored,
        "segments_unjudged": stored.unjudged,
        "scores": stored.scores,
        "reward_model": model.event.model_dump(mode="json") if model else None,
        "unreadable": unreadable,
    }
