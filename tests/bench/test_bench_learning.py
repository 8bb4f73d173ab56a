"""``bench/bench_learning.py --quick`` end to end: both trained arms run ``zelda-rlaif up`` and ``zelda-rlaif eval``
in their own processes, the random policy is evaluated on the first run, and the table is written as JSON and
Markdown. About 80 s on 2 cores; learning quality is the benchmark's business, not this test's.
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
    result = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--out", str(out)],
                            capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]

    rows = json.loads((out / "results.json").read_text())["arms"]
    assert [row["arm"] for row in rows] == ["full", "no_shaping", "random"]
    for row in rows:
        assert list(row["milestones"]) == MILESTONES
        assert all(0.0 <= s["min"] <= s["mean"] <= s["max"] <= 1.0 for s in row["milestones"].values())
        assert row["seeds"] == 1 and row["eval_s"] > 0
    assert rows[0]["env_steps"] >= 2048 and rows[0]["train_s"] > 0

    # Every arm played the same eval episode seeds, and the shaping-off arm really trained without shaping.
    reports = {arm: json.loads(next((out / arm / "seed0" / "eval").glob(f"{prefix}*-4x-seed0.json")).read_text())
               for arm, prefix in (("full", "epoch_"), ("no_shaping", "epoch_"))}
    random_report = json.loads(next((out / "full" / "seed0" / "eval").glob("random-*.json")).read_text())
    assert reports["full"]["seeds"] == reports["no_shaping"]["seeds"] == random_report["seeds"]
    assert random_report["policy"] == "random"
    assert "| full | 1 |" in (out / "results.md").read_text()
    assert "self-imitation" in result.stdout  # arm 3 is named as not yet implemented
