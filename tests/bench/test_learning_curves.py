"""``bench/learning_curves.py`` on run directories laid out as ``zelda-rlaif up`` leaves them (run.json and a file
store holding the trainer's ``EpochReport``s), written by hand so that no training has to run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from bench.learning_curves import plot, read_curve
from zelda_rlaif.episodes import EpisodeRecord, EpisodeStats, EpochReport
from zelda_rlaif.storage import keys
from zelda_rlaif.storage.file import FileStore
from zelda_rlaif.up.run_dir import write_run_file

MILESTONES = ["talk_old_man", "take_key", "open_gate", "take_sword", "solve_switch", "reach_treasure"]


def episode(rooms: int, *milestones: str) -> EpisodeRecord:
    return EpisodeRecord(steps=200, env_return=1.0, shaping_return=0.0, rooms_visited=rooms, tiles_visited=10,
                         milestones=list(milestones))


def write_run(run_dir: Path, epochs: list[list[EpisodeRecord]], steps_per_epoch: int = 2048) -> None:
    """A finished run with one EpochReport per entry of ``epochs`` (that epoch's training episodes)."""
    run_id = f"full-{run_dir.name}"
    write_run_file(run_dir, run_id)
    store = FileStore(run_dir / "store")
    for epoch, episodes in enumerate(epochs):
        report = EpochReport(run_id=run_id, epoch=epoch, env_steps=(epoch + 1) * steps_per_epoch + epoch,
                             epoch_env_steps=steps_per_epoch, env_steps_per_s=100.0, wall_time_s=20.0,
                             reward_model_epoch=None, episodes=EpisodeStats.of(episodes, MILESTONES))
        store.put_json(keys.epoch_report(run_id, epoch), report)


@pytest.fixture(autouse=True)
def no_store_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    # open_run prefers ZELDA_STORE_URL over the run directory's own store/.
    monkeypatch.delenv("ZELDA_STORE_URL", raising=False)


def test_a_run_s_curve_is_its_epoch_reports_in_epoch_order(tmp_path: Path) -> None:
    write_run(tmp_path / "seed0", [[episode(1), episode(2, "take_key")], [], [episode(3, "take_key")]])

    points = read_curve(tmp_path / "seed0")

    assert [(p["epoch"], p["env_steps"], p["episodes"]) for p in points] == [(0, 2048, 2), (1, 4097, 0), (2, 6146, 1)]
    assert points[0]["milestones"]["take_key"] == 0.5 and points[0]["rooms_mean"] == 1.5
    assert list(points[0]["milestones"]) == MILESTONES
    # An epoch where no episode finished has no figures rather than made-up zeros.
    assert points[1]["milestones"] == {} and points[1]["rooms_mean"] is None
    assert points[2]["milestones"]["take_key"] == 1.0


def test_a_run_without_epoch_reports_is_refused(tmp_path: Path) -> None:
    write_run(tmp_path / "seed0", [])
    with pytest.raises(ValueError, match="stored no epoch report"):
        read_curve(tmp_path / "seed0")


def spread(value: float) -> dict[str, float]:
    return {"mean": value, "min": value, "max": value}


def test_plot_draws_every_arm_into_one_png(tmp_path: Path) -> None:
    write_run(tmp_path / "seed0", [[episode(1)], [episode(2, "take_key")]])
    write_run(tmp_path / "seed1", [[], [episode(2, "take_key"), episode(1)]])
    curves = [{"seed": seed, "points": read_curve(tmp_path / f"seed{seed}")} for seed in (0, 1)]
    eval_figures: dict[str, Any] = {"milestones": {name: spread(0.0) for name in MILESTONES},
                                    "rooms_mean": spread(1.1)}
    rows = [{"arm": "full", "curves": curves, **eval_figures}, {"arm": "random", "curves": [], **eval_figures}]

    plot(rows, tmp_path / "plots" / "learning.png", "training episodes per epoch")

    with Image.open(tmp_path / "plots" / "learning.png") as image:
        assert image.format == "PNG" and image.width > 1000
