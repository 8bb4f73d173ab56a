"""Preference pairs from combined judge scores, and the held-out split.

A pair (a, b) carries the probability that a is preferred: 1 or 0 when the combined scores differ by at least
the margin, 0.5 when they are within the near-tie band, and no pair at all in between (too close to call,
too far apart to be a tie).

Segments, not pairs, are held out. Validation pairs join two held-out segments; training pairs join two
held-in ones; mixed pairs are used for neither. A mixed pair would leak: the model has fitted the held-in
segment's score, and ranking a new segment against memorised scores looks far better than chance even when
the scores are noise (measured: 0.70 "accuracy" on shuffled scores).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]

# Scores such as 0.7 and 0.6 differ by 0.0999...; the comparisons forgive that rounding.
_EPS = 1e-9
# Enumerating all n(n-1)/2 candidate pairs is cheapest up to this many; beyond it they are sampled.
MAX_CANDIDATES = 4_000_000


@dataclass(frozen=True)
class Pairs:
    first: IntArray
    second: IntArray
    label: npt.NDArray[np.float32]  # P(first preferred to second)

    def __len__(self) -> int:
        return int(self.first.shape[0])

    @property
    def decisive(self) -> npt.NDArray[np.bool_]:
        return np.asarray(self.label != np.float32(0.5))

    @property
    def decisive_count(self) -> int:
        return int(self.decisive.sum())

    @property
    def tie_count(self) -> int:
        return len(self) - self.decisive_count

    def subset(self, index: npt.NDArray[np.int64] | npt.NDArray[np.bool_]) -> Pairs:
        return Pairs(self.first[index], self.second[index], self.label[index])


@dataclass(frozen=True)
class PreferenceSplit:
    train: Pairs
    validation: Pairs
    held_out: npt.NDArray[np.bool_]  # per segment


def candidate_pairs(n: int, rng: np.random.Generator) -> tuple[IntArray, IntArray]:
    """All index pairs i < j, or a uniform sample of them when there are more than ``MAX_CANDIDATES``."""
    if n < 2:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty.copy()
    if n * (n - 1) // 2 <= MAX_CANDIDATES:
        i, j = np.triu_indices(n, k=1)
        return i.astype(np.int64), j.astype(np.int64)
    a = rng.integers(0, n, size=MAX_CANDIDATES, dtype=np.int64)
    b = rng.integers(0, n, size=MAX_CANDIDATES, dtype=np.int64)
    keep = a != b
    low, high = np.minimum(a[keep], b[keep]), np.maximum(a[keep], b[keep])
    codes = np.unique(low * n + high)
    return codes // n, codes % n


def label_pairs(
    combined: npt.NDArray[np.float64], first: IntArray, second: IntArray, *, margin: float, tie_band: float
) -> Pairs:
    diff = combined[first] - combined[second]
    gap = np.abs(diff)
    decisive = gap >= margin - _EPS
    tie = gap <= tie_band + _EPS
    keep = decisive | tie
    label = np.where(decisive, (diff > 0).astype(np.float32), np.float32(0.5)).astype(np.float32)
    return Pairs(first[keep], second[keep], label[keep])


def build_preferences(
    combined: npt.NDArray[np.float64],
    *,
    margin: float,
    tie_band: float,
    validation_fraction: float,
    max_pairs: int,
    rng: np.random.Generator,
    min_validation_segments: int = 1,
) -> PreferenceSplit:
    n = int(combined.shape[0])
    held_out = np.zeros(n, dtype=bool)
    if n >= 2:
        # A small epoch still holds out enough segments to form a few validation pairs (k segments give
        # k(k-1)/2), but never more than half of them.
        n_held = max(1, min(max(round(validation_fraction * n), min_validation_segments), n // 2))
        held_out[rng.permutation(n)[:n_held]] = True

    first, second = candidate_pairs(n, rng)
    pairs = label_pairs(combined, first, second, margin=margin, tie_band=tie_band)
    first_held, second_held = held_out[pairs.first], held_out[pairs.second]
    train = _at_most(pairs.subset(~first_held & ~second_held), max_pairs, rng)
    validation = _at_most(pairs.subset(first_held & second_held), max_pairs, rng)
    return PreferenceSplit(train, validation, held_out)


def _at_most(pairs: Pairs, limit: int, rng: np.random.Generator) -> Pairs:
    if len(pairs) <= limit:
        return pairs
    return pairs.subset(np.sort(rng.choice(len(pairs), size=limit, replace=False)))
