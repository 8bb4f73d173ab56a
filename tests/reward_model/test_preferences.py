"""Preference pairs: margin, near-ties as 0.5, held-out segments, determinism, caps."""

from __future__ import annotations

import numpy as np
import pytest

from zelda_reward_model import preferences
from zelda_reward_model.preferences import build_preferences, label_pairs


def test_margin_ties_and_the_gap_in_between() -> None:
    combined = np.array([0.7, 0.6, 0.69, 0.2])
    first, second = np.array([0, 0, 0, 1]), np.array([1, 2, 3, 2])
    pairs = label_pairs(combined, first, second, margin=0.1, tie_band=0.02)
    got = {(int(a), int(b)): float(y) for a, b, y in zip(pairs.first, pairs.second, pairs.label, strict=True)}
    # 0.7 vs 0.6 is exactly the margin despite float rounding; 0.6 vs 0.69 is neither decisive nor a tie.
    assert got == {(0, 1): 1.0, (0, 2): 0.5, (0, 3): 1.0}
    assert (pairs.decisive_count, pairs.tie_count) == (2, 1)


def test_validation_pairs_join_two_held_out_segments() -> None:
    combined = np.random.default_rng(0).random(50)
    split = build_preferences(combined, margin=0.1, tie_band=0.01, validation_fraction=0.2, max_pairs=10**6,
                              rng=np.random.default_rng(3))
    held = split.held_out
    assert held.sum() == 10
    assert not (held[split.train.first] | held[split.train.second]).any()
    # Both sides unseen: a held-in side would let memorised scores pass for generalisation.
    assert (held[split.validation.first] & held[split.validation.second]).all()
    assert len(split.train) > 0 and split.validation.decisive_count > 0


def test_small_epochs_hold_out_enough_segments_but_at_most_half() -> None:
    def held(n: int) -> int:
        return int(build_preferences(np.linspace(0, 1, n), margin=0.1, tie_band=0.0, validation_fraction=0.2,
                                     max_pairs=100, rng=np.random.default_rng(0), min_validation_segments=6
                                     ).held_out.sum())

    assert [held(n) for n in (2, 3, 8, 20, 100)] == [1, 1, 4, 6, 20]


def test_same_seed_same_pairs_and_caps_hold() -> None:
    combined = np.random.default_rng(1).random(80)
    make = lambda seed: build_preferences(combined, margin=0.05, tie_band=0.0, validation_fraction=0.25,  # noqa: E731
                                          max_pairs=300, rng=np.random.default_rng(seed))
    a, b, c = make(7), make(7), make(8)
    assert len(a.train) == 300 and 0 < len(a.validation) <= 300
    assert np.array_equal(a.train.first, b.train.first) and np.array_equal(a.held_out, b.held_out)
    assert not np.array_equal(a.held_out, c.held_out)


def test_too_few_segments_give_no_training_pairs() -> None:
    for n in (0, 1, 2):
        split = build_preferences(np.linspace(0, 1, n), margin=0.1, tie_band=0.0, validation_fraction=0.2,
                                  max_pairs=100, rng=np.random.default_rng(0))
        assert len(split.train) == 0


def test_many_segments_are_sampled_not_enumerated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(preferences, "MAX_CANDIDATES", 1000)
    first, second = preferences.candidate_pairs(400, np.random.default_rng(0))
    assert 900 < len(first) <= 1000
    assert (first < second).all()
    assert len(set(zip(first.tolist(), second.tolist(), strict=True))) == len(first)
