"""The end-of-run summary of ``zelda-rlaif up`` (printed, and saved as ``summary.json`` in the run directory)."""

from __future__ import annotations

import logging
import statistics
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ValidationError
from rich.console import Console
from rich.table import Table

from zelda_rlaif.errors import ObjectNotFound
from zelda_rlaif.events import LiveMetrics
from zelda_rlaif.storage import ObjectStore, keys
from zelda_rlaif.up.watch import PipelineWatch

log = logging.getLogger(__name__)


class EpochSummary(BaseModel):
    epoch: int
    segments_exported: int
    segments_scored: int
    segments_unjudged: int
    mean_combined_score: float | None
    scores_ready_events: int
    reward_model_accepted: bool | None
    reward_model_pairs: int | None
    reward_model_validation_accuracy: float | None


class RunSummary(BaseModel):
    run_id: str
    env_steps: int
    rooms_visited: list[tuple[int, int]]
    dead_letters: int
    epochs: list[EpochSummary]
    timeline: list[tuple[str, str]]
    run_dir: str
    store: str
    logs: str
    hud_url: str


def build_summary(run_id: str, run_dir: Path, store: ObjectStore, watch: PipelineWatch, hud_port: int) -> RunSummary:
    try:
        progress = LiveMetrics.model_validate(store.get_json(keys.progress(run_id)))
    except ObjectNotFound:
        progress = None
    except ValidationError as exc:
        log.warning("%s is unreadable, the summary leaves out steps and rooms: %s", keys.progress(run_id), exc)
        progress = None
    epochs = sorted(set(watch.epochs_exported) | set(watch.scores_ready) | set(watch.reward_models))
    rows = []
    for epoch in epochs:
        try:
            scores = store.get_jsonl(keys.epoch_scores(run_id, epoch))
        except ObjectNotFound:
            scores = []
        exported = watch.epochs_exported.get(epoch)
        model = watch.reward_models.get(epoch)
        rows.append(EpochSummary(
            epoch=epoch,
            segments_exported=exported.segments_exported if exported else watch.exported[epoch],
            segments_scored=len(scores),
            segments_unjudged=sum(1 for _ in store.list(keys.unjudged_segments(run_id, epoch))),
            mean_combined_score=statistics.fmean(s["combined"] for s in scores) if scores else None,
            scores_ready_events=len(watch.scores_ready.get(epoch, [])),
            reward_model_accepted=model.accepted if model else None,
            reward_model_pairs=model.pairs if model else None,
            reward_model_validation_accuracy=model.validation_accuracy if model else None,
        ))
    return RunSummary(
        run_id=run_id,
        env_steps=progress.env_steps if progress else 0,
        rooms_visited=progress.rooms_visited if progress else [],
        dead_letters=watch.dead_letters,
        epochs=rows,
        timeline=[(datetime.fromtimestamp(t, UTC).isoformat(timespec="seconds"), what) for t, what in watch.timeline],
        run_dir=str(run_dir), store=store.url, logs=str(run_dir / "logs"),
        hud_url=f"http://127.0.0.1:{hud_port}/",
    )


def print_summary(summary: RunSummary, console: Console) -> None:
    table = Table(title=f"run {summary.run_id}: {summary.env_steps} env steps, "
                        f"{len(summary.rooms_visited)} rooms visited, {summary.dead_letters} dead letters")
    for column in ("epoch", "segments", "scored", "unjudged", "mean score", "scores.ready", "reward model"):
        table.add_column(column)
    for row in summary.epochs:
        if row.reward_model_accepted is None:
            model = "-"
        else:
            accuracy = row.reward_model_validation_accuracy
            model = (f"{'accepted' if row.reward_model_accepted else 'kept previous'}, "
                     f"{row.reward_model_pairs} pairs, acc {accuracy if accuracy is None else round(accuracy, 3)}")
        table.add_row(str(row.epoch), str(row.segments_exported), str(row.segments_scored),
                      str(row.segments_unjudged),
                      "-" if row.mean_combined_score is None else f"{row.mean_combined_score:.3f}",
                      str(row.scores_ready_events), model)
    console.print(table)
    for when, what in summary.timeline:
        console.print(f"  {when}  {what}")
    console.print(f"artifacts: store {summary.store}; logs {summary.logs}; summary {summary.run_dir}/summary.json")
