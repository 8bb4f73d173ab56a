"""``bench/compare_arms.py``: two arms of learning-bench results, milestone by milestone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench import compare_arms


def results(arm: str, gates: dict[int, float], keys: dict[int, float], checkpoints: tuple[str, ...] = ("latest",)
            ) -> dict[str, Any]:
    per_seed = [{"seed": seed, "epoch": 44, "milestones": {"take_key": keys[seed], "open_gate": gate},
                 "rooms_mean": 5.0, "return_env_mean": 10.0 + seed, "length_mean": 600.0}
                for seed, gate in gates.items()]
    return {"budget": "45 epochs", "arms": [{"arm": arm, "checkpoint": checkpoint, "per_seed": per_seed}
                                            for checkpoint in checkpoints]}


@pytest.fixture
def files(tmp_path: Path) -> tuple[str, str]:
    loop = tmp_path / "loop.json"
    loop.write_text(json.dumps(results("preference", {0: 0.1, 1: 0.5, 2: 0.9}, {0: 1.0, 1: 0.9, 2: 1.0})))
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps(results("no_shaping", {0: 0.0, 1: 0.0, 2: 0.05, 3: 0.0},
                                        {0: 1.0, 1: 0.2, 2: 0.0, 3: 0.5})))
    return f"{loop}:preference", f"{plain}:no_shaping"


def test_a_milestone_separates_only_where_the_worst_candidate_seed_beats_the_best_baseline(
        files: tuple[str, str]) -> None:
    loop, plain = (compare_arms.load_arm(spec, "latest") for spec in files)
    rows = {row.name: row for row in compare_arms.comparisons(loop, plain)}
    gate, key = rows["open_gate"], rows["take_key"]
    assert gate.separates and not key.separates  # key: the baseline's seed 0 holds it as often as the loop's best
    assert (gate.ahead, gate.behind) == (3, 0)  # paired on seeds 0-2; the baseline's seed 3 has no pair
    assert gate.mann_whitney_p < 0.05 < key.mann_whitney_p
    assert key.ahead == 2 and key.behind == 0 and key.wilcoxon_p is not None  # seed 0's tie is left out
    assert rows["rooms_mean"].wilcoxon_p is None  # every pair equal: nothing to rank


def test_the_command_prints_the_table_and_counts_the_milestones_that_separate(
        files: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    compare_arms.main([*files, "--checkpoint", "latest"])
    out = capsys.readouterr().out
    assert "| open_gate | 10%-90% [10% 50% 90%] | 0%-5% [0% 0% 5% 0%] | yes |" in out
    assert out.rstrip().endswith("milestones that separate: 1 (open_gate) (the goal: at least 2)")


def test_a_wrong_arm_or_checkpoint_says_what_the_file_has(files: tuple[str, str]) -> None:
    loop, _ = files
    with pytest.raises(SystemExit, match="RESULTS_JSON:ARM"):
        compare_arms.load_arm("preference", "latest")
    with pytest.raises(SystemExit, match="has no arm 'full'"):
        compare_arms.load_arm(loop.replace(":preference", ":full"), "latest")
    with pytest.raises(SystemExit, match="no 'best' checkpoint, only latest"):
        compare_arms.load_arm(loop, "best")
