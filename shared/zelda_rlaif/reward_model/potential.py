"""``Potential``: Phi(s) from a saved reward model, for potential-based shaping in the trainer's env runners.

The forward pass is plain numpy over weights exported once at load time: for one observation it costs about
a third of a ``torch.no_grad()`` call (measured by ``bench/bench_reward_model.py``), needs no torch threads in
forked workers, and holds no mutable buffers, so one instance is safe to share between threads.

Usage::

    potential = Potential.from_bytes(store.get_bytes(keys.reward_model(run_id, epoch)))
    shaping = gamma * potential.phi(next_obs) - potential.phi(obs)
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from zelda_rlaif.reward_model.model_file import RewardModelFile
from zelda_rlaif.reward_model.normalization import FloatArray, Normalization
from zelda_rlaif.reward_model.places import UnseenPlaces, place_key


class Potential:
    """Phi(s) = r(normalize(s)), with r centred and scaled on the states the model was trained on; where the
    model holds unseen places (``places.py``), a state in none of them gets their Phi instead."""

    def __init__(self, model: RewardModelFile) -> None:
        self.run_id = model.run_id
        self.epoch = model.epoch
        self.normalization: Normalization = model.normalization
        layers = model.layers()
        # Transposed and contiguous once, so every call is ``h @ w`` on row-major data.
        self._hidden = [(np.ascontiguousarray(w.T), b) for w, b in layers[:-1]]
        out_weight, out_bias = layers[-1]
        self._out_weight = np.ascontiguousarray(out_weight[0])
        self._out_bias = np.float32(out_bias[0])
        self.unseen_places: UnseenPlaces | None = model.unseen_places
        # A frozenset answers the per-step question in well under a microsecond; np.isin serves batches.
        self._seen: frozenset[int] = frozenset()
        if model.unseen_places is not None:
            self._seen = frozenset(model.unseen_places.seen.tolist())

    @classmethod
    def from_bytes(cls, data: bytes, source: str = "reward model") -> Potential:
        return cls(RewardModelFile.from_bytes(data, source))

    @property
    def observation_size(self) -> int:
        return self.normalization.size

    def _forward(self, normalized: FloatArray) -> FloatArray:
        h = normalized
        for weight, bias in self._hidden:
            h = h @ weight
            h += bias
            np.maximum(h, 0.0, out=h)
        out: FloatArray = np.asarray(h @ self._out_weight + self._out_bias, dtype=np.float32)
        return out

    def phi(self, observation: npt.ArrayLike) -> float:
        """Phi of one ``(128,)`` observation, as a Python float: the env runners' per-step call."""
        x = np.asarray(observation, dtype=np.float32)
        if x.shape != (self.observation_size,):
            raise ValueError(
                f"phi takes one observation of shape ({self.observation_size},), got {x.shape}; "
                "use phi_batch for several"
            )
        if self.unseen_places is not None and place_key(x) not in self._seen:
            return self.unseen_places.phi
        return float(self._forward(self.normalization.apply(x)))

    def phi_batch(self, observations: npt.ArrayLike) -> FloatArray:
        """Phi of ``(n, 128)`` observations as an ``(n,)`` float32 array."""
        x = np.asarray(observations, dtype=np.float32)
        if x.ndim != 2 or x.shape[1] != self.observation_size:
            raise ValueError(f"phi_batch takes observations of shape (n, {self.observation_size}), got {x.shape}")
        values = self._forward(self.normalization.apply(x))
        if self.unseen_places is not None:
            values[self.unseen_places.unseen(x)] = self.unseen_places.phi
        return values

    def mean_phi(self, observations: npt.ArrayLike) -> float:
        """A segment's reward R: the mean of Phi over its ``(n, 128)`` states (what the judges' scores rank)."""
        values = self.phi_batch(observations)
        if values.size == 0:
            raise ValueError("a segment needs at least one state")
        return float(values.mean(dtype=np.float64))
