"""Join ``bench_learning.py`` results of the same budget run as separate processes, e.g. one per seed side by side
on a machine with more cores, into one table over all their seeds.

    python bench/merge_results.py runs/s0/results.json runs/s1/results.json runs/s2/results.json --out runs/merged

Rows are joined per (arm, checkpoint): each figure's mean and spread are recomputed from the per-seed results,
times are summed, curves concatenated. Writes OUT/results.json, OUT/results.md and OUT/learning.png as
``bench_learning.py`` does, marked partial where an input is (a bench stopped part-way). Refuses inputs whose
budgets differ (other than in their seeds) or that repeat a seed.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/ is no installed package

from bench.bench_learning import FIGURES, markdown, spread, write_results
from bench.learning_curves import plot

_SEEDS = re.compile(r"training seeds \[[^\]]*\]")


def merge(results: list[dict[str, Any]]) -> dict[str, Any]:
    budgets = {_SEEDS.sub("training seeds [...]", r["budget"]) for r in results}
    if len(budgets) > 1:
        raise SystemExit("the results have different budgets, so they cannot share a table:\n  " + "\n  ".join(budgets))
    joined: dict[tuple[str, str | None], dict[str, Any]] = {}
    for result in results:
        for row in result["arms"]:
            key = (row["arm"], row["checkpoint"])
            if key not in joined:
                joined[key] = {**row, "per_seed": [], "curves": [], "train_s": 0.0, "eval_s": 0.0}
            into = joined[key]
            repeated = {s["seed"] for s in row["per_seed"]} & {s["seed"] for s in into["per_seed"]}
            if repeated:
                raise SystemExit(f"{row['arm']} ({row['checkpoint']}): seed {sorted(repeated)} is in two inputs")
            into["per_seed"] += row["per_seed"]
            into["curves"] += row["curves"]
            into["train_s"] += row["train_s"]
            into["eval_s"] += row["eval_s"]
    for row in joined.values():
        seeds = sorted(row["per_seed"], key=lambda s: s["seed"])
        row["per_seed"], row["seeds"] = seeds, len(seeds)
        row["curves"] = sorted(row["curves"], key=lambda c: c["seed"])
        row["milestones"] = {name: spread([s["milestones"][name] for s in seeds]) for name in row["milestones"]}
        row.update({figure: spread([s[figure] for s in seeds]) for figure in FIGURES})
    all_seeds = sorted({s["seed"] for row in joined.values() for s in row["per_seed"]})
    budget = _SEEDS.sub(f"training seeds {all_seeds}", results[0]["budget"])
    # Files written before the bench marked partial results have no "complete": they were written at its end.
    complete = all(r.get("complete", True) for r in results)
    return {"budget": budget, "complete": complete, "arms": list(joined.values())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, nargs="+", help="results.json files written by bench_learning.py")
    parser.add_argument("--out", type=Path, required=True, help="where results.json, results.md and learning.png go")
    args = parser.parse_args()
    merged = merge([json.loads(path.read_text()) for path in args.results])
    rows = merged["arms"]
    checkpoints = {row["checkpoint"] for row in rows}
    table = markdown(rows, by_checkpoint=len(checkpoints) > 1)
    write_results(args.out, merged["budget"], rows, table, merged["complete"],
                  partial_why="an input's bench had seeds or arms still to run")
    print(merged["budget"])
    print(table)
    first = rows[0]["checkpoint"]
    plot([row for row in rows if row["checkpoint"] in (None, first)], args.out / "learning.png",
         f"Training episodes per epoch: fraction reaching each milestone\n{merged['budget'].split(',')[0]}")
    print(f"written: {args.out / 'results.json'}, {args.out / 'results.md'}, {args.out / 'learning.png'}")


if __name__ == "__main__":
    main()
