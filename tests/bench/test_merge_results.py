"""``bench/merge_results.py``: results of one budget run as separate processes (one per seed) joined into one table."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from bench import merge_results

MILESTONES = ["take_key", "open_gate"]


def result(seed: int, key: float, gate: float, rooms: float, budget: str = "30 epochs x 16384 env steps") -> dict:
    def row(checkpoint: str) -> dict[str, Any]:
        per_seed = {"seed": seed, "epoch": 29, "milestones": {"take_key": key, "open_gate": gate},
                    "rooms_mean": rooms, "return_env_mean": 10.0 + seed, "length_mean": 600.0}
        one = {"mean": 0.0, "min": 0.0, "max": 0.0}  # stale on purpose: the merge recomputes every spread
        return {"arm": "self_imitation", "what": "loop", "checkpoint": checkpoint, "seeds": 1, "train_s": 100.0,
                "eval_s": 5.0, "env_steps": 491520, "milestones": {m: one for m in MILESTONES},
                "rooms_mean": one, "return_env_mean": one, "length_mean": one, "per_seed": [per_seed],
                "curves": [{"seed": seed, "points": []}]}
    return {"budget": f"{budget}, training seeds [{seed}], 32 eval episodes", "arms": [row("best"), row("latest")]}


def test_rows_join_per_arm_and_checkpoint_with_spreads_over_all_seeds() -> None:
    merged = merge_results.merge([result(1, 0.5, 0.25, 6.0), result(0, 1.0, 0.75, 8.0)])
    assert merged["budget"] == "30 epochs x 16384 env steps, training seeds [0, 1], 32 eval episodes"
    assert [(row["arm"], row["checkpoint"]) for row in merged["arms"]] == [("self_imitation", "best"),
                                                                           ("self_imitation", "latest")]
    best = merged["arms"][0]
    assert best["seeds"] == 2 and [s["seed"] for s in best["per_seed"]] == [0, 1]
    assert best["milestones"]["open_gate"] == {"mean": 0.5, "min": 0.25, "max": 0.75}
    assert best["rooms_mean"] == {"mean": 7.0, "min": 6.0, "max": 8.0}
    assert best["train_s"] == 200.0 and best["eval_s"] == 10.0
    assert [c["seed"] for c in best["curves"]] == [0, 1]
    assert merged["complete"]  # files from before the bench marked partial results count as complete


def test_a_partial_input_makes_the_merge_partial() -> None:
    stopped = {**result(1, 0.5, 0.25, 6.0), "complete": False}
    assert not merge_results.merge([{**result(0, 1.0, 0.75, 8.0), "complete": True}, stopped])["complete"]


def test_a_repeated_seed_or_another_budget_is_refused() -> None:
    with pytest.raises(SystemExit, match=r"seed \[0\] is in two inputs"):
        merge_results.merge([result(0, 1.0, 0.0, 6.0), result(0, 0.5, 0.0, 6.0)])
    with pytest.raises(SystemExit, match="different budgets"):
        merge_results.merge([result(0, 1.0, 0.0, 6.0), result(1, 1.0, 0.0, 6.0, budget="2 epochs x 2048 env steps")])


def test_the_command_writes_the_table_and_the_plot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = []
    for seed in (0, 1):
        path = tmp_path / f"s{seed}.json"
        path.write_text(json.dumps(result(seed, 1.0, 0.5 * seed, 6.0)))
        paths.append(str(path))
    monkeypatch.setattr(sys, "argv", ["merge_results.py", *paths, "--out", str(tmp_path / "merged")])
    merge_results.main()
    assert "| self_imitation | best | 2 |" in (tmp_path / "merged" / "results.md").read_text()
    assert json.loads((tmp_path / "merged" / "results.json").read_text())["arms"][1]["seeds"] == 2
    assert (tmp_path / "merged" / "learning.png").read_bytes().startswith(b"\x89PNG")
