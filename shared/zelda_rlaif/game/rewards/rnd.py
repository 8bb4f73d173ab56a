"""Random Network Distillation on NumPy arrays and a numba kernel (``kernels/rnd.py``), one instance per env.

A fixed random target network and a predictor trained to match it; the prediction error is high for
observations unlike those seen before. Not torch, on purpose: at batch size 1 its per-call overhead alone would
exceed the step's budget, it has thread pools and CUDA state that break in forked or spawned Ray workers (the
original implementation's RND broke there and was removed), and this way each env runner process simply owns
its instances.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np

from zelda_rlaif.game.kernels import rnd as kernel
from zelda_rlaif.segments import OBSERVATION_SIZE


class RndCuriosity:
    """Owns the networks and buffers; ``reward(observation)`` is one call of ``kernels.rnd.reward``.

    Only the predictor's second layer learns (its first layer is a fixed random projection): that keeps the
    update small and is enough for novelty to fade with familiarity. It learns every ``update_every`` states by
    normalised least mean squares: dividing the step by the batch's mean squared activation keeps it stable
    whatever the scale of the observations.
    """

    def __init__(self, seed: int, hidden: int = 64, features: int = 32, lr: float = 0.5,
                 update_every: int = 16) -> None:
        rng = np.random.default_rng(seed)
        scale1, scale2 = np.sqrt(2.0 / OBSERVATION_SIZE), np.sqrt(2.0 / hidden)
        # Target and predictor first layers side by side: one pass computes both hidden layers.
        self.w1 = np.concatenate([rng.normal(0, scale1, (OBSERVATION_SIZE, hidden)),
                                  rng.normal(0, scale1, (OBSERVATION_SIZE, hidden))], axis=1).astype(np.float32)
        target_w2 = rng.normal(0, scale2, (hidden, features))
        pred_w2 = rng.normal(0, scale2, (hidden, features))
        self.w2 = np.stack([target_w2, pred_w2]).astype(np.float32)  # indexed by kernel.TARGET, kernel.PREDICTOR
        self.lr = lr
        # The states since the last update, as the update needs them: predictor activations, then output error.
        self._batch = np.zeros((update_every, hidden + features), np.float32)
        # Running count, mean and variance of the raw error (so the bonus keeps a stable scale as the predictor
        # learns), and how many states the batch holds.
        self._state = np.zeros(4)
        self._state[kernel.COUNT] = 1e-4
        # ``reward(observation)``: the kernel bound to this instance's arrays, so a call costs no Python frame.
        self.reward: Callable[[np.ndarray], float] = partial(kernel.reward, self.w1, self.w2, self._batch,
                                                             self._state, self.lr)
