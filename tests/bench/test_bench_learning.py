"""``bench/bench_learning.py --quick`` end to end: the three trained arms run ``zelda-rlaif up`` and ``zelda-rlaif
eval`` in their own processes, the random policy is evaluated on the first run, the table is written as JSON and
Markdown and the learning curves as a PNG. About 2 minutes on 2 cores; learning quality is the benchmark's business,
not this test's.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "bench_learning.py"
MILESTONES = ["talk_old_man", "take_key", "open_gate", "take_sword", "solve_switch", "reach_treasure"]


@pytest.mark.slow
def test_quick_bench_evaluates_every_arm_on_the_same_episodes(tmp_path: Path) -> None:
    out = tmp_path / "bench"
    # judged_starts is left out: in one epoch it is self_imitation (its states come from judged epochs).
    arms = ["full", "no_shaping", "self_imitation", "random"]
    result = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--out", str(out), "--arms", *arms,
                             "--eval-epoch", "best", "latest", "--shaping-mode", "sync"],
                            capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]

    # A row per trained arm and checkpoint, then the random policy's.
    results = json.loads((out / "results.json").read_text())
    assert results["complete"]  # written after every seed, marked complete once the last arm is in
    assert results["budget"].startswith("1 epochs x 2048 env steps, sync shaping, training seeds [0]")
    rows = results["arms"]
    assert [(row["arm"], row["checkpoint"]) for row in rows] == \
        [(arm, checkpoint) for arm in arms[:-1] for checkpoint in ("best", "latest")] + [("random", None)]
    for row in rows:
        assert list(row["milestones"]) == MILESTONES
        assert all(0.0 <= s["min"] <= s["mean"] <= s["max"] <= 1.0 for s in row["milestones"].values())
        assert row["seeds"] == 1 and row["eval_s"] > 0
        [seed] = row["per_seed"]
        assert seed["seed"] == 0 and list(seed["milestones"]) == MILESTONES
    assert rows[0]["env_steps"] >= 2048 and rows[0]["train_s"] > 0
    assert rows[0]["per_seed"][0]["epoch"] == rows[1]["per_seed"][0]["epoch"] == 0  # one epoch: best is latest

    # Each trained arm's learning curve: its one epoch's training episodes, at the run's env steps.
    for row in rows[:-1]:
        [curve] = row["curves"]
        [point] = curve["points"]
        assert curve["seed"] == 0 and point["epoch"] == 0 and point["env_steps"] == row["env_steps"]
        assert point["episodes"] > 0 and list(point["milestones"]) == MILESTONES and point["rooms_mean"] >= 1
    assert rows[-1]["curves"] == []
    assert (out / "learning.png").read_bytes().startswith(b"\x89PNG")

    # Every arm played the same eval episode seeds, and the shaping-off arm really trained without shaping.
    reports = {arm: json.loads(next((out / arm / "seed0" / "eval").glob("epoch_*-4x-seed0.json")).read_text())
               for arm in ("full", "no_shaping", "self_imitation")}
    random_report = json.loads(next((out / "full" / "seed0" / "eval").glob("random-*.json")).read_text())
    assert all(report["seeds"] == random_report["seeds"] for report in reports.values())
    assert random_report["policy"] == "random"
    results_md = (out / "results.md").read_text()
    assert "| full | best | 1 |" in results_md and "| self_imitation | latest | 1 |" in results_md
    assert "| full | latest | 0 | 0 |" in results_md  # per seed: arm, checkpoint, seed, epoch
    assert "Learning curves: learning.png" in results_md
