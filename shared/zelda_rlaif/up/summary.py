"""The end-of-run summary of ``zelda-rlaif up`` (printed, and saved as ``summary.json`` in the run directory).

Per epoch: what the agent did (its ``EpochReport``: env steps, steps/s, the episodes' returns, length, rooms,
tiles and milestones) and what the pipeline did with it (segments, judging, the reward model).
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError
from rich.console import Console
from rich.table import Table

from zelda_rlaif.episodes import EpochReport
from zelda_rlaif.errors import ObjectNotFound
from zelda_rlaif.events import LiveMetrics
from zelda_rlaif.judge_figures import read_epoch_figures
from zelda_rlaif.scores import read_epoch_scores
from zelda_rlaif.storage import ObjectStore, keys
from zelda_rlaif.up import figures
from zelda_rlaif.up.watch import PipelineWatch

log = logging.getLogger(__name__)


class EpochSummary(BaseModel):
    epoch: int
    report: EpochReport | None = Field(description="the trainer's report of the epoch; None if it never stored one")
    segments_exported: int
    segments_scored: int
    segments_unjudged: int
    scores_ready_events: int
    reward_model_accepted: bool | None
    figures: dict[str, float] = Field(description="the judges' and the reward model's figures under their metric "
                                      "names (judge/<kind>/<dimension>, judge/combined, reward_model/accuracy, "
                                      "reward_model/pairs), as the HUD and the trackers show them")


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
        scores = read_epoch_scores(store, run_id, epoch)  # unreadable lines: read_epoch_figures warns of them
        exported = watch.epochs_exported.get(epoch)
        model = watch.reward_models.get(epoch)
        rows.append(EpochSummary(
            epoch=epoch,
            report=watch.reports.get(epoch) or _report(store, run_id, epoch),
            segments_exported=exported.segments_exported if exported else watch.exported[epoch],
            segments_scored=len(scores.rows) if scores is not None else 0,
            segments_unjudged=sum(1 for _ in store.list(keys.unjudged_segments(run_id, epoch))),
            scores_ready_events=len(watch.scores_ready.get(epoch, [])),
            reward_model_accepted=model.accepted if model else None,
            figures=read_epoch_figures(store, run_id, epoch, model),
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


def _report(store: ObjectStore, run_id: str, epoch: int) -> EpochReport | None:
    try:
        return EpochReport.model_validate(store.get_json(keys.epoch_report(run_id, epoch)))
    except ObjectNotFound:
        return None


def print_summary(summary: RunSummary, console: Console) -> None:
    console.print(agent_table(summary))
    console.print(pipeline_table(summary))
    for when, what in summary.timeline:
        console.print(f"  {when}  {what}")
    console.print(f"artifacts: store {summary.store}; logs {summary.logs}; summary {summary.run_dir}/summary.json")


def agent_table(summary: RunSummary) -> Table:
    """What the agent did, epoch by epoch: the mean and median return of the env reward, the mean return of the
    reward model (its shaping and preference reward), episode length, rooms and tiles per episode, the
    milestones' score and who reached them."""
    table = Table(title=f"run {summary.run_id}: {summary.env_steps} env steps, "
                        f"{len(summary.rooms_visited)} rooms visited in all")
    for column in ("epoch", "env steps", "steps/s", "episodes", "env return (median)", "reward model return",
                   "length", "rooms", "tiles", "milestones"):
        table.add_column(column)
    for row in summary.epochs:
        report = row.report
        if report is None:
            table.add_row(str(row.epoch), "no report")
            continue
        stats = report.episodes
        head = (str(row.epoch), str(report.env_steps), f"{report.env_steps_per_s:.0f}", figures.episodes(stats))
        if stats.count == 0:
            table.add_row(*head)
            continue
        table.add_row(
            *head,
            f"{figures.number(stats.return_env_mean)} ({figures.number(stats.return_env_median)})",
            figures.number(stats.return_reward_model_mean), figures.number(stats.length_mean, 0),
            figures.number(stats.rooms_mean, 1), figures.number(stats.tiles_mean, 0), figures.milestones(stats))
    return table


def pipeline_table(summary: RunSummary) -> Table:
    """What the judges and the reward model made of each epoch."""
    table = Table(title=f"judging and reward models: {summary.dead_letters} dead letters")
    for column in ("epoch", "segments", "scored", "unjudged", "judge/combined", "scores.ready", "reward model"):
        table.add_column(column)
    for row in summary.epochs:
        if row.reward_model_accepted is None:
            model = "-"
        else:
            accuracy = row.figures.get("reward_model/accuracy")
            model = (f"{'accepted' if row.reward_model_accepted else 'kept previous'}, "
                     f"{row.figures.get('reward_model/pairs', 0):.0f} pairs, acc "
                     f"{'-' if accuracy is None else round(accuracy, 3)}")
        combined = row.figures.get("judge/combined")
        table.add_row(str(row.epoch), str(row.segments_exported), str(row.segments_scored),
                      str(row.segments_unjudged), "-" if combined is None else f"{combined:.3f}",
                      str(row.scores_ready_events), model)
    return table
