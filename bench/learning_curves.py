"""Learning curves for ``bench/bench_learning.py``: what each training run's episodes reached, epoch by epoch.

``read_curve`` reads a finished ``zelda-rlaif up`` run's ``EpochReport``s from its store: per epoch the run's env
steps at the epoch's end and the figures of the training episodes that finished in it. ``plot`` draws the arms'
curves into one PNG: a subplot per milestone and one for rooms per episode, per arm the mean over training seeds
as a line and the min-max over seeds as a band, the random policy's eval value as a dashed line.

These are training episodes (sampled actions, shaping on where the arm shapes), not the eval of the final
checkpoint that the bench's table reports.
"""

from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import Any

from zelda_rlaif.episodes import EpochReport
from zelda_rlaif.storage import keys
from zelda_rlaif.up.run_dir import open_run

ROOMS = "rooms_mean"


def read_curve(run_dir: Path) -> list[dict[str, Any]]:
    """One point per epoch of the run in ``run_dir``, in epoch order: ``epoch``, ``env_steps`` (the run's, at the
    epoch's end), ``episodes`` (how many finished in it), ``rooms_mean`` and ``milestones`` (name -> fraction of
    those episodes that reached it); an epoch where no episode finished has ``rooms_mean`` None and no milestones."""
    run_id, store = open_run(run_dir)
    epochs = sorted(epoch for key in store.list(keys.epoch_reports(run_id))
                    if (epoch := keys.epoch_of(key)) is not None and key == keys.epoch_report(run_id, epoch))
    if not epochs:
        raise ValueError(f"run {run_id} in {run_dir} stored no epoch report: see {run_dir / 'up.log'}")
    points = []
    for epoch in epochs:
        report = EpochReport.model_validate(store.get_json(keys.epoch_report(run_id, epoch)))
        points.append({"epoch": report.epoch, "env_steps": report.env_steps, "episodes": report.episodes.count,
                       ROOMS: report.episodes.rooms_mean, "milestones": report.episodes.milestones})
    return points


def _figure(point: dict[str, Any], figure: str) -> float | None:
    return point[ROOMS] if figure == ROOMS else point["milestones"].get(figure)


def _over_seeds(curves: list[list[dict[str, Any]]], figure: str) -> tuple[list[float], list[list[float]]]:
    """Per epoch: the mean env steps over the seeds, and the figure's values over the seeds that have it. The
    seeds of an arm train the same epochs of the same size, so they are lined up by epoch, not by exact step."""
    by_epoch: dict[int, list[dict[str, Any]]] = {}
    for curve in curves:
        for point in curve:
            by_epoch.setdefault(point["epoch"], []).append(point)
    steps, values = [], []
    for epoch in sorted(by_epoch):
        points = by_epoch[epoch]
        steps.append(statistics.fmean(point["env_steps"] for point in points))
        values.append([v for point in points if (v := _figure(point, figure)) is not None])
    return steps, values


def plot(rows: list[dict[str, Any]], path: Path, title: str) -> None:
    """Draw the arms of ``rows`` (the bench's results rows: ``arm``, ``curves`` as a list over seeds of
    ``{"seed", "points"}``, and the eval's ``milestones`` and ``rooms_mean`` spreads) into the PNG ``path``. An arm
    without curves (the random policy) is drawn as a dashed line at its eval mean."""
    try:
        import matplotlib
    except ImportError as exc:
        raise RuntimeError("matplotlib is not installed: pip install -e '.[bench]'") from exc
    matplotlib.use("Agg")  # files only: no display on the machines that run the bench
    import matplotlib.pyplot as plt
    from matplotlib.ticker import EngFormatter

    figures = [*rows[0]["milestones"], ROOMS]
    columns = 4
    fig, axes = plt.subplots(math.ceil((len(figures) + 1) / columns), columns, figsize=(4 * columns, 7),
                             squeeze=False, constrained_layout=True)
    cells = list(axes.flat)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, figure in zip(cells, figures, strict=False):
        ax.set_title("rooms per episode" if figure == ROOMS else figure)
        ax.set_xlabel("env steps")
        ax.xaxis.set_major_formatter(EngFormatter(sep=""))  # 400k: plain integers ran into each other
        ax.set_ylabel("rooms" if figure == ROOMS else "fraction of episodes")
        if figure != ROOMS:
            ax.set_ylim(-0.03, 1.03)
        for index, row in enumerate(rows):
            color = colors[index % len(colors)]
            if not row["curves"]:
                evaluated = row[ROOMS] if figure == ROOMS else row["milestones"][figure]
                ax.axhline(evaluated["mean"], color=color, linestyle="--", label=f"{row['arm']} (eval)")
                continue
            steps, values = _over_seeds([curve["points"] for curve in row["curves"]], figure)
            nan = float("nan")  # an epoch where no seed finished an episode: a gap, not a made-up value
            ax.plot(steps, [statistics.fmean(v) if v else nan for v in values], color=color, marker="o",
                    label=row["arm"])
            ax.fill_between(steps, [min(v) if v else nan for v in values], [max(v) if v else nan for v in values],
                            color=color, alpha=0.2, linewidth=0)
    legend = cells[len(figures)]
    legend.axis("off")
    legend.legend(*cells[0].get_legend_handles_labels(), loc="center", title="arm (line: mean over seeds, "
                  "band: min-max)")
    for unused in cells[len(figures) + 1:]:
        unused.axis("off")
    fig.suptitle(title)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
