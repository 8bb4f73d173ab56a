"""``Normalization``: how the reward network's inputs and output are scaled, fitted on the training states.

One object is fitted in training, saved in ``rm.pt``, recorded in ``metadata.json`` (a pydantic model: its
JSON form is the record) and applied by the same ``apply`` in training (once, up front) and in the trainer's
``Potential``. The original design trained on features that were always zero at inference time.
"""

from __future__ import annotations

from typing import Annotated

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field, PlainSerializer, PlainValidator, WithJsonSchema, model_validator

# A feature that never varies in training carries no information; dividing by its tiny spread would turn a
# new value at inference time into an enormous input. Such features are only centred.
MIN_STD = 1e-3
# Inputs far outside the training distribution (a room never seen before) are clipped, as RLlib's
# MeanStdFilter does, so one odd feature cannot dominate Phi.
DEFAULT_CLIP = 10.0

FloatArray = npt.NDArray[np.float32]


def _float32_vector(value: object) -> FloatArray:
    # A read-only copy: the model is frozen, so its statistics must not change through the caller's array.
    vector = np.array(value, dtype=np.float32)
    if vector.ndim != 1:
        raise ValueError(f"expected a 1-D list of numbers, got shape {vector.shape}")
    vector.flags.writeable = False
    return vector


# Held as float32 numpy arrays (what ``apply`` computes with), written as JSON lists of numbers.
Float32Vector = Annotated[
    FloatArray,
    PlainValidator(_float32_vector),
    PlainSerializer(lambda vector: vector.tolist(), return_type=list[float]),
    WithJsonSchema({"type": "array", "items": {"type": "number"}}),
]


class Normalization(BaseModel):
    """Inputs: ``clip((x - input_mean) / input_std, -input_clip, input_clip)`` per feature, in float32.

    Output: the raw network output r was centred and scaled to ``(r - output_mean) / output_std`` on the
    training states. That affine map is folded into the last layer (``RewardNet.fold_output_affine``), so the
    output statistics are a record only; before training they are the identity (0, 1).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    input_mean: Float32Vector
    input_std: Float32Vector
    input_clip: float = Field(DEFAULT_CLIP, gt=0)
    output_mean: float = Field(0.0, description="mean raw r over the training states, folded into the last layer")
    output_std: float = Field(1.0, gt=0, description="std of raw r over the training states, folded into the "
                              "last layer")

    @model_validator(mode="after")
    def _usable_statistics(self) -> Normalization:
        if self.input_mean.shape != self.input_std.shape:
            raise ValueError(f"input_mean {self.input_mean.shape} and input_std {self.input_std.shape} differ")
        if not (np.all(np.isfinite(self.input_mean)) and np.all(self.input_std > 0)):
            raise ValueError("input statistics must be finite with positive std")
        return self

    @property
    def size(self) -> int:
        return int(self.input_mean.shape[0])

    @classmethod
    def fit(cls, states: npt.ArrayLike, clip: float = DEFAULT_CLIP) -> Normalization:
        """The input statistics of ``(n, features)`` training states; the output is left as the identity."""
        data = np.asarray(states, dtype=np.float32)
        if data.ndim != 2 or data.shape[0] == 0:
            raise ValueError(f"need a non-empty (n, features) array to fit the normalization, got {data.shape}")
        mean = data.mean(axis=0, dtype=np.float64)
        std = data.std(axis=0, dtype=np.float64)
        std = np.where(std < MIN_STD, 1.0, std)
        return cls(input_mean=mean, input_std=std, input_clip=clip)

    def with_output(self, mean: float, std: float) -> Normalization:
        """This normalization with the output statistics that were folded into the network."""
        return Normalization(input_mean=self.input_mean, input_std=self.input_std, input_clip=self.input_clip,
                             output_mean=mean, output_std=std)

    def apply(self, states: npt.ArrayLike) -> FloatArray:
        """Normalize ``(features,)`` or ``(n, features)`` observations; always returns a new float32 array."""
        z = np.subtract(np.asarray(states, dtype=np.float32), self.input_mean)
        z /= self.input_std
        # minimum/maximum with float32 bounds: the same values as np.clip, at half its cost per call.
        bound = np.float32(self.input_clip)
        np.minimum(z, bound, out=z)
        np.maximum(z, -bound, out=z)
        return z
