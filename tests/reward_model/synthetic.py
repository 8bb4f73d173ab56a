"""Synthetic judged segments with a known ground-truth reward over 128-D states, in memory.

A small "world" maps an 8-D latent game state (where the agent is, what it has) to a 128-D observation, as
the real RAM decoder maps a few game variables to the observation vector. Each segment is a random walk in
the latent space; its combined score is the sigmoid of the mean ground-truth reward of its states, so the
preference order of segments is exactly what a perfect reward model would give.

``judged.py`` writes realistic judged epochs to a store for the service tests; this module is the controlled
experiment: the true reward is known, so the learned model's ranking can be scored against it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from zelda_rlaif.segments import OBSERVATION_SIZE

LATENT = 8


@dataclass(frozen=True)
class Segments:
    observations: npt.NDArray[np.float32]  # (segments, steps, 128)
    combined: npt.NDArray[np.float64]  # (segments,) in (0, 1)

    def flat(self) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """Observations concatenated, offsets, lengths: the layout the training code takes."""
        n, steps, _ = self.observations.shape
        lengths = np.full(n, steps, dtype=np.int64)
        return self.observations.reshape(-1, OBSERVATION_SIZE), np.arange(n, dtype=np.int64) * steps, lengths


class World:
    def __init__(self, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        self.embedding = rng.standard_normal((LATENT, OBSERVATION_SIZE)) / np.sqrt(LATENT)

    @staticmethod
    def true_reward(latent: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        return latent[..., 0] + 0.5 * np.sin(2.0 * latent[..., 1]) - 0.3 * latent[..., 2] ** 2

    def segments(self, count: int, steps: int, seed: int, *, informative: bool = True) -> Segments:
        """``count`` segments of ``steps`` states; with ``informative=False`` the scores are shuffled noise."""
        rng = np.random.default_rng(seed)
        start = rng.standard_normal((count, 1, LATENT))
        latent = start + 0.15 * np.cumsum(rng.standard_normal((count, steps, LATENT)), axis=1)
        noise = 0.05 * rng.standard_normal((count, steps, OBSERVATION_SIZE))
        observations = (np.tanh(latent @ self.embedding) + noise).astype(np.float32)
        combined = 1.0 / (1.0 + np.exp(-self.true_reward(latent).mean(axis=1)))
        if not informative:
            combined = rng.permutation(combined)
        return Segments(observations, combined)
