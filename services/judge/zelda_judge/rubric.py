"""What each judge kind scores, and how the five dimensions combine into one number per segment.

Every dimension is a score in [0, 1], higher is better:

| Dimension  | Judge  | Meaning                                                              |
|------------|--------|----------------------------------------------------------------------|
| progress   | state  | the game moved forward: new rooms, items, keys, essences, no deaths  |
| dialog     | state  | the agent engaged with characters and signs (text boxes read)        |
| efficiency | state  | steps were used well: not stuck against walls, no menu surfing       |
| puzzle     | puzzle | puzzles and doors solved: switch/door flags newly set                |
| novelty    | vision | new places and views explored rather than revisited                  |

The combined score is the weighted mean ``sum(w_d * s_d) / sum(w_d)``: with the default weights (which sum
to 1) that is the plain weighted sum of the design (progress 0.4, dialog 0.2, puzzle 0.2, novelty 0.1,
efficiency 0.1); dividing by the sum keeps the result in [0, 1] when someone changes one weight.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field, model_validator

from zelda_rlaif.events import JudgeKind

DIMENSIONS: dict[JudgeKind, tuple[str, ...]] = {
    JudgeKind.STATE: ("progress", "dialog", "efficiency"),
    JudgeKind.PUZZLE: ("puzzle",),
    JudgeKind.VISION: ("novelty",),
}

ALL_DIMENSIONS: tuple[str, ...] = ("progress", "dialog", "puzzle", "novelty", "efficiency")

DESCRIPTIONS: dict[str, str] = {
    "progress": "did the game move forward: new rooms reached, rupees, keys, items or essences gained, no deaths",
    "dialog": "did the player read text boxes, talk to characters or signs (1 = meaningful dialog engagement)",
    "efficiency": "were steps used well: moving with purpose, not stuck against walls, no menu surfing",
    "puzzle": "were puzzles or locked doors solved: switches, blocks, keys used, door/puzzle flags newly set",
    "novelty": "were new areas and views explored rather than the same rooms revisited",
}


class RubricWeights(BaseModel):
    """Weights of the combined score (``ZELDA_JUDGE_RUBRIC__PROGRESS=0.5`` or a JSON object)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    progress: float = Field(0.4, ge=0.0)
    dialog: float = Field(0.2, ge=0.0)
    puzzle: float = Field(0.2, ge=0.0)
    novelty: float = Field(0.1, ge=0.0)
    efficiency: float = Field(0.1, ge=0.0)

    @model_validator(mode="after")
    def _not_all_zero(self) -> RubricWeights:
        if sum(self.as_dict().values()) <= 0:
            raise ValueError("at least one rubric weight must be > 0")
        return self

    def as_dict(self) -> dict[str, float]:
        return {name: float(getattr(self, name)) for name in ALL_DIMENSIONS}


def combine(scores: Mapping[str, float], weights: RubricWeights) -> float:
    """Weighted mean of all five dimensions; every dimension must be present (never a default score)."""
    missing = [d for d in ALL_DIMENSIONS if d not in scores]
    if missing:
        raise ValueError(f"cannot combine a segment without {', '.join(missing)}")
    w = weights.as_dict()
    return round(sum(w[d] * scores[d] for d in ALL_DIMENSIONS) / sum(w.values()), 6)
