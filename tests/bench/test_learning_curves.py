"""``bench/learning_curves.py`` on run directories laid out as ``zelda-rlaif up`` leaves them (run.json and a file
store holding the trainer's ``EpochReport``s), written by hand so that no training has to run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from bench.learning_curves import plot, read_curve
from tests.bench.hand_made_runs import MILESTONES, episode, write_run


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
