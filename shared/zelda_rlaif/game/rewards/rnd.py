"""Random Network Distillation in NumPy, one instance per environment.

A fixed random target network and a predictor trained to match it; the prediction error is high for
observations unlike those seen before. NumPy (not torch) on purpose: it is cheap at batch size 1, it has no
thread pools or CUDA state to break in forked or spawned Ray workers (the original implementation's RND
broke there and was removed), and each env runner process simply owns its instances.
"""

from __future__ import annotations

import numpy as np

from zelda_rlaif.segments import OBSERVATION_SIZE


class RndCuriosity:
    def __init__(self, seed: int, hidden: int = 64, features: int = 32, lr: float = 0.5,
                 update_every: int = 16) -> None:
        rng = np.random.default_rng(seed)
        scale1, scale2 = np.sqrt(2.0 / OBSERVATION_SIZE), np.sqrt(2.0 / hidden)
        # Target and predictor first layers side by side: one matmul computes both hidden layers.
        self.w1 = np.concatenate([rng.normal(0, scale1, (OBSERVATION_SIZE, hidden)),
                                  rng.normal(0, scale1, (OBSERVATION_SIZE, hidden))], axis=1).astype(np.float32)
        self.target_w2 = rng.normal(0, scale2, (hidden, features)).astype(np.float32)
        self.pred_w2 = rng.normal(0, scale2, (hidden, features)).astype(np.float32)
        self.hidden = hidden
        self.lr = lr
        self.update_every = update_every
        self._batch: list[np.ndarray] = []
        # Running mean/variance of the raw error, so the bonus keeps a stable scale as the predictor learns.
        self._count = 1e-4
        self._mean = 0.0
        self._var = 0.0

    def _forward(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        h = np.maximum(x @ self.w1, 0.0)
        target = h[..., : self.hidden] @ self.target_w2
        pred_h = h[..., self.hidden:]
        return target, pred_h, pred_h @ self.pred_w2

    def reward(self, observation: np.ndarray) -> float:
        h = observation @ self.w1
        np.maximum(h, 0.0, out=h)
        diff = h[self.hidden:] @ self.pred_w2 - h[: self.hidden] @ self.target_w2
        error = float(diff @ diff) / diff.shape[0]
        self._count += 1.0
        delta = error - self._mean
        self._mean += delta / self._count
        self._var += (delta * (error - self._mean) - self._var) / self._count
        self._batch.append(observation)
        if len(self._batch) >= self.update_every:
            self._train()
        # Relative to the running mean error: familiar states earn nothing (never a penalty), novel ones up to
        # 3, so a single surprise cannot outweigh the game's own rewards.
        return min(max(error / (self._mean + 1e-8) - 1.0, 0.0), 3.0)

    def _train(self) -> None:
        """One normalised least-mean-squares step on the predictor's output layer over the buffered states.

        Only the predictor's second layer learns (its first layer is a fixed random projection): that keeps
        the update one matmul and is enough for novelty to fade with familiarity. Dividing the step by the
        batch's mean squared activation (NLMS) keeps it stable whatever the scale of the observations.
        """
        x = np.stack(self._batch)
        self._batch.clear()
        target, pred_h, pred = self._forward(x)
        power = float(np.mean(np.sum(pred_h * pred_h, axis=1))) + 1e-6
        self.pred_w2 -= (self.lr / power) * (pred_h.T @ (pred - target)) / len(x)
