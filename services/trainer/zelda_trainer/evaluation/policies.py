"""What picks the actions of an evaluation: a trained RLModule (sampled or greedy) or the uniform random baseline.

Each episode draws from its own generator (seeded by the episode's seed), so an episode plays the same whether it
runs alone or beside others, and every policy meets the same episode starts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np
import torch
from ray.rllib.core.columns import Columns

from zelda_rlaif.game.actions import NUM_ACTIONS
from zelda_trainer.env_runner import sample_categorical

if TYPE_CHECKING:
    from ray.rllib.core.rl_module.rl_module import RLModule


class Policy(Protocol):
    def actions(self, observations: np.ndarray, rngs: Sequence[np.random.Generator]) -> np.ndarray:
        """One action per row of ``observations``, row i drawing from ``rngs[i]``."""
        ...


class RandomPolicy:
    """Every button with the same probability: what the agent does before any training."""

    def actions(self, observations: np.ndarray, rngs: Sequence[np.random.Generator]) -> np.ndarray:
        return np.array([rng.integers(NUM_ACTIONS) for rng in rngs], dtype=np.int64)


class ModulePolicy:
    """A trained RLModule: actions sampled from its distribution as in training, or its most likely ones."""

    def __init__(self, module: RLModule, *, greedy: bool) -> None:
        self.module = module
        self.greedy = greedy

    def actions(self, observations: np.ndarray, rngs: Sequence[np.random.Generator]) -> np.ndarray:
        with torch.inference_mode():
            output = self.module.forward_inference({Columns.OBS: torch.from_numpy(observations)})
        logits = output[Columns.ACTION_DIST_INPUTS].cpu().numpy()
        if self.greedy:
            return np.asarray(logits.argmax(axis=1), dtype=np.int64)
        return np.array([sample_categorical(logits[i:i + 1], rng)[0][0] for i, rng in enumerate(rngs)],
                        dtype=np.int64)
