"""Optimism for places the judges have not seen: the potential of a state whose place no judged segment visited.

A reward model fitted to judged segments can only rank the states the policy visited. Beyond them its output
is an extrapolation, and a first policy that walked one way gets a potential that peaks at the edge of what it
saw, so the shaping holds the agent back from every other way (docs/results.md, sections 13 and 14). Here a
state whose *place* is in none of the window's segments gets a high quantile of Phi over the training states
instead ("optimism in the face of uncertainty", as R-max does for unknown states): walking somewhere new pays,
the judges score what the agent finds there, and the next model ranks it with the rest.

A place is where the player stands, read from the observation (``observation.py``): map group, room row and
column, and a cell of a ``CELLS`` x ``CELLS`` grid over the room. The quest flags held are not part of it:
with them, every place after a milestone was new, so the optimism drowned out the judges' ranking exactly where
it leads on to the next objective (section 14: the gate fell from 32% to 20% of the episodes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import numpy.typing as npt

CELLS = 4  # per side of a room: a cell is about 2.5 x 2 tiles of a Game Boy screen

_GROUPS = slice(6, 14)
_ROOM_ROW, _ROOM_COLUMN = 14, 15
_PLACE_FEATURES = _ROOM_COLUMN + 1  # position, facing, group and room all lie before this index

Int64Array = npt.NDArray[np.int64]
_Index = TypeVar("_Index", int, Int64Array)


def _key(group: _Index, row: _Index, column: _Index, cell_x: _Index, cell_y: _Index) -> _Index:
    """The place's key from its parts, for one place (ints) or many (arrays). Low to high: cell y and cell x
    (``CELLS`` values each), room column and row (16 each), map group."""
    return ((group * 16 + row) * 16 + column) * CELLS * CELLS + cell_x * CELLS + cell_y


def place_keys(observations: npt.ArrayLike) -> Int64Array:
    """One int64 key per ``(n, 128)`` observation; equal keys mean the same place."""
    obs = np.asarray(observations, dtype=np.float32)
    if obs.ndim != 2:
        raise ValueError(f"place_keys takes (n, features) observations, got shape {obs.shape}")
    group = np.argmax(obs[:, _GROUPS], axis=1).astype(np.int64)
    row = np.clip(np.rint(obs[:, _ROOM_ROW] * 15), 0, 15).astype(np.int64)
    column = np.clip(np.rint(obs[:, _ROOM_COLUMN] * 15), 0, 15).astype(np.int64)
    cell_x = np.clip(np.floor(obs[:, 0] * CELLS), 0, CELLS - 1).astype(np.int64)
    cell_y = np.clip(np.floor(obs[:, 1] * CELLS), 0, CELLS - 1).astype(np.int64)
    return _key(group, row, column, cell_x, cell_y)


def place_key(observation: npt.NDArray[np.float32]) -> int:
    """``place_keys`` of one ``(128,)`` observation, in plain Python: the env runners call it every step, where
    numpy's per-call overhead on 1-row arrays would cost several times as much."""
    v = observation[:_PLACE_FEATURES].tolist()
    groups = v[_GROUPS]
    group = groups.index(max(groups))
    row = min(max(round(v[_ROOM_ROW] * 15), 0), 15)
    column = min(max(round(v[_ROOM_COLUMN] * 15), 0), 15)
    cell_x = min(max(math.floor(v[0] * CELLS), 0), CELLS - 1)
    cell_y = min(max(math.floor(v[1] * CELLS), 0), CELLS - 1)
    return _key(group, row, column, cell_x, cell_y)


@dataclass(frozen=True)
class UnseenPlaces:
    """The places of the states a model was trained on, and the Phi a state anywhere else gets."""

    seen: Int64Array  # sorted, unique place keys
    phi: float

    @classmethod
    def fit(cls, observations: npt.ArrayLike, phi: npt.ArrayLike, quantile: float) -> UnseenPlaces:
        """The places of ``observations`` and the ``quantile`` of their ``phi`` (the model's output on them)."""
        values = np.asarray(phi, dtype=np.float64)
        if values.size == 0:
            raise ValueError("need at least one state to fit the unseen-place potential")
        if not 0.0 <= quantile <= 1.0:
            raise ValueError(f"quantile must lie in [0, 1], got {quantile}")
        return cls(np.unique(place_keys(observations)), float(np.quantile(values, quantile)))

    def unseen(self, observations: npt.ArrayLike) -> npt.NDArray[np.bool_]:
        """Which of ``(n, 128)`` observations stand in a place none of the training states did."""
        return ~np.isin(place_keys(observations), self.seen)
