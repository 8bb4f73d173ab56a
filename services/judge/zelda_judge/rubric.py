"""How the dimensions of all judge kinds combine into one number per segment.

The dimensions, their meaning and their default weights are declared per kind in ``zelda_judge.kinds``. The
combined score is the weighted mean ``sum(w_d * s_d) / sum(w_d)`` over every dimension.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import ConfigDict, Field, RootModel, model_validator

from zelda_judge.kinds import ALL_DIMENSIONS, KINDS

DEFAULT_WEIGHTS: dict[str, float] = {d.name: d.weight for spec in KINDS.values() for d in spec.dimensions}

Weight = Annotated[float, Field(ge=0.0, allow_inf_nan=False)]


class RubricWeights(RootModel[dict[str, Weight]]):
    """Weight of each dimension in the combined score: ``ZELDA_JUDGE_RUBRIC__PROGRESS=0.5``, or a JSON object in
    ``ZELDA_JUDGE_RUBRIC``. A dimension left out keeps its default from ``zelda_judge.kinds``."""

    model_config = ConfigDict(frozen=True)

    root: dict[str, Weight] = Field(default_factory=lambda: dict(DEFAULT_WEIGHTS))

    @model_validator(mode="before")
    @classmethod
    def _known_dimensions_over_defaults(cls, value: Any) -> Any:
        if isinstance(value, Mapping):
            unknown = sorted(str(name) for name in value if name not in DEFAULT_WEIGHTS)
            if unknown:
                raise ValueError(f"no judge kind scores {', '.join(unknown)}; the dimensions are "
                                 f"{', '.join(ALL_DIMENSIONS)}")
            return {**DEFAULT_WEIGHTS, **value}
        return value

    @model_validator(mode="after")
    def _not_all_zero(self) -> RubricWeights:
        if sum(self.root.values()) <= 0:
            raise ValueError("at least one rubric weight must be > 0")
        return self

    def as_dict(self) -> dict[str, float]:
        return {name: float(self.root[name]) for name in ALL_DIMENSIONS}


def combine(scores: Mapping[str, float], weights: RubricWeights) -> float:
    """Weighted mean of all dimensions; every dimension must be present (never a default score)."""
    missing = [d for d in ALL_DIMENSIONS if d not in scores]
    if missing:
        raise ValueError(f"cannot combine a segment without {', '.join(missing)}")
    w = weights.as_dict()
    # fsum: the result does not depend on the order the kinds are declared in.
    return round(math.fsum(w[d] * scores[d] for d in ALL_DIMENSIONS) / math.fsum(w.values()), 6)
