"""Input normalisation: fitted on the training states, saved in ``rm.pt``, applied by the same code in use.

The original design trained on features that were always zero at inference time. Here the one ``apply``
below produces the network's inputs both in training (once, up front) and in the trainer's ``Potential``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

# A feature that never varies in training carries no information; dividing by its tiny spread would turn a
# new value at inference time into an enormous input. Such features are only centred.
MIN_STD = 1e-3
# Inputs far outside the training distribution (a room never seen before) are clipped, as RLlib's
# MeanStdFilter does, so one odd feature cannot dominate Phi.
DEFAULT_CLIP = 10.0

FloatArray = npt.NDArray[np.float32]


@dataclass(frozen=True)
class InputNormalization:
    """``clip((x - mean) / std, -clip, clip)`` per feature, in float32."""

    mean: FloatArray
    std: FloatArray
    clip: float = DEFAULT_CLIP

    def __post_init__(self) -> None:
        if self.mean.shape != self.std.shape or self.mean.ndim != 1:
            raise ValueError(f"mean {self.mean.shape} and std {self.std.shape} must be equal 1-D shapes")
        if not (np.all(np.isfinite(self.mean)) and np.all(self.std > 0)):
            raise ValueError("normalisation statistics must be finite with positive std")
        if self.clip <= 0:
            raise ValueError(f"clip must be positive, got {self.clip}")

    @property
    def size(self) -> int:
        return int(self.mean.shape[0])

    @classmethod
    def fit(cls, states: npt.ArrayLike, clip: float = DEFAULT_CLIP) -> InputNormalization:
        data = np.asarray(states, dtype=np.float32)
        if data.ndim != 2 or data.shape[0] == 0:
            raise ValueError(f"need a non-empty (n, features) array to fit the normalisation, got {data.shape}")
        mean = data.mean(axis=0, dtype=np.float64)
        std = data.std(axis=0, dtype=np.float64)
        std = np.where(std < MIN_STD, 1.0, std)
        return cls(mean.astype(np.float32), std.astype(np.float32), float(clip))

    def apply(self, states: npt.ArrayLike) -> FloatArray:
        """Normalise ``(features,)`` or ``(n, features)`` observations; always returns a new float32 array."""
        z = np.subtract(np.asarray(states, dtype=np.float32), self.mean)
        z /= self.std
        # minimum/maximum with float32 bounds: the same values as np.clip, at half its cost per call.
        bound = np.float32(self.clip)
        np.minimum(z, bound, out=z)
        np.maximum(z, -bound, out=z)
        return z
