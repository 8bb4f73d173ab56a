"""Compare two arms of ``bench_learning.py`` results milestone by milestone: issue 20's test (does the candidate's
worst seed beat the baseline's best?) beside rank tests over the seeds, so every figure docs/results.md quotes
can be rerun from the committed results.

    python bench/compare_arms.py docs/results/results-45x16k.json:preference \\
        docs/results/results-45x16k.json:no_shaping --checkpoint latest

Each arm is ``RESULTS_JSON:ARM``; the two may come from different files (an arm run later against a baseline
already measured on the same seeds and budget). Per milestone, and for rooms and env return, it prints:

- the per-seed values of each arm and their min-max;
- ``separates``: the candidate's worst seed above the baseline's best (the issue's "non-overlapping spread");
- a one-sided Mann-Whitney U test over the seeds (candidate above baseline), which needs no pairing;
- on the seeds both arms ran, how many the candidate is ahead of and behind on, and a one-sided Wilcoxon
  signed-rank test over those pairs. Two runs of one seed can differ as much as two seeds (docs/results.md,
  section 19), so the pairing is by seed number, not by a shared game.

The last line counts the milestones that separate: the goal asks for at least two.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scipy import stats

FIGURES = {"rooms_mean": "rooms", "return_env_mean": "env return"}


@dataclass(frozen=True)
class ArmResults:
    label: str
    by_seed: dict[int, dict[str, float]]  # seed -> milestone or figure -> value

    def values(self, name: str) -> list[float]:
        return [figures[name] for figures in self.by_seed.values()]


@dataclass(frozen=True)
class Comparison:
    name: str
    candidate: list[float]
    baseline: list[float]
    mann_whitney_p: float
    ahead: int
    behind: int
    wilcoxon_p: float | None  # None: no seed pair differs

    @property
    def separates(self) -> bool:
        return min(self.candidate) > max(self.baseline)


def load_arm(spec: str, checkpoint: str) -> ArmResults:
    """``spec`` is ``RESULTS_JSON:ARM``; the arm's row at ``checkpoint`` (a single-checkpoint file's only row)."""
    path, _, arm = spec.rpartition(":")
    if not path or not arm:
        raise SystemExit(f"{spec!r}: give an arm as RESULTS_JSON:ARM, e.g. docs/results/results-45x16k.json:preference")
    rows = [row for row in json.loads(Path(path).read_text())["arms"] if row["arm"] == arm]
    if not rows:
        raise SystemExit(f"{path} has no arm {arm!r}")
    at = [row for row in rows if row["checkpoint"] == checkpoint] or [row for row in rows if row["checkpoint"] is None]
    if not at:
        kept = sorted(str(row["checkpoint"]) for row in rows)
        raise SystemExit(f"{path}: arm {arm!r} has no {checkpoint!r} checkpoint, only {', '.join(kept)}")
    by_seed = {seed["seed"]: {**seed["milestones"], **{name: seed[name] for name in FIGURES}}
               for seed in at[0]["per_seed"]}
    return ArmResults(f"{arm} ({Path(path).name})", by_seed)


def compare(candidate: ArmResults, baseline: ArmResults, name: str) -> Comparison:
    ours, theirs = candidate.values(name), baseline.values(name)
    paired = sorted(candidate.by_seed.keys() & baseline.by_seed.keys())
    differences = [candidate.by_seed[s][name] - baseline.by_seed[s][name] for s in paired]
    nonzero = [d for d in differences if d != 0]
    wilcoxon_p = float(stats.wilcoxon(nonzero, alternative="greater").pvalue) if nonzero else None
    return Comparison(name, ours, theirs, float(stats.mannwhitneyu(ours, theirs, alternative="greater").pvalue),
                      ahead=sum(d > 0 for d in differences), behind=sum(d < 0 for d in differences),
                      wilcoxon_p=wilcoxon_p)


def comparisons(candidate: ArmResults, baseline: ArmResults) -> list[Comparison]:
    first = next(iter(candidate.by_seed.values()))
    return [compare(candidate, baseline, name) for name in first]


def _values(values: list[float], percent: bool) -> str:
    shown = [f"{v:.0%}" if percent else f"{v:.1f}" for v in values]
    low, high = (f"{v:.0%}" if percent else f"{v:.1f}" for v in (min(values), max(values)))
    return f"{low}-{high} [{' '.join(shown)}]"


def markdown(candidate: ArmResults, baseline: ArmResults, rows: list[Comparison]) -> str:
    lines = [f"candidate: {candidate.label}, seeds {sorted(candidate.by_seed)}",
             f"baseline: {baseline.label}, seeds {sorted(baseline.by_seed)}", "",
             "| | candidate min-max [per seed] | baseline min-max [per seed] | separates | Mann-Whitney p "
             "| ahead / behind (paired seeds) | Wilcoxon p |",
             "|---|---|---|---|---:|---|---:|"]
    for row in rows:
        percent = row.name not in FIGURES
        wilcoxon = "-" if row.wilcoxon_p is None else f"{row.wilcoxon_p:.3g}"
        lines.append(f"| {FIGURES.get(row.name, row.name)} | {_values(row.candidate, percent)} "
                     f"| {_values(row.baseline, percent)} | {'yes' if row.separates else 'no'} "
                     f"| {row.mann_whitney_p:.3g} | {row.ahead} / {row.behind} | {wilcoxon} |")
    separate = [row.name for row in rows if row.separates and row.name not in FIGURES]
    lines += ["", f"milestones that separate: {len(separate)}" + (f" ({', '.join(separate)})" if separate else "")
              + " (the goal: at least 2)"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("candidate", help="RESULTS_JSON:ARM, the arm that should be ahead (e.g. the loop)")
    parser.add_argument("baseline", help="RESULTS_JSON:ARM, the arm it is compared with (e.g. plain PPO)")
    parser.add_argument("--checkpoint", default="latest", help="best or latest (default: latest)")
    args: Any = parser.parse_args(argv)
    candidate, baseline = load_arm(args.candidate, args.checkpoint), load_arm(args.baseline, args.checkpoint)
    print(markdown(candidate, baseline, comparisons(candidate, baseline)))


if __name__ == "__main__":
    main()
