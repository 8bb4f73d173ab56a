"""The 128-D observation vector: the same meaning in every game profile, every entry roughly in [-1, 1].

| Index   | Meaning |
|---------|---------|
| 0-1     | player x / room width, y / room height |
| 2-5     | facing direction, one-hot (up, right, down, left) |
| 6-13    | map group, one-hot (groups 0-7) |
| 14-15   | room row / 15, room column / 15 on the room-id grid |
| 16      | health / max health |
| 17      | max health / profile limit |
| 18      | rupees / 999 |
| 19      | small keys / 9 (clipped) |
| 20      | sword level / 4 (clipped) |
| 21      | a text box is showing |
| 22      | a menu is open |
| 23      | tanh(deaths / 5) |
| 24      | live enemies / 8 (clipped) |
| 25-32   | puzzle flags, bits 0-7 |
| 33-40   | door flags, bits 0-7 |
| 41-48   | treasure flags (or their count, for counted encodings), bits 0-7 |
| 49-56   | essences, bits 0-7 |
| 57      | rooms visited this episode / profile's room count |
| 58-61   | neighbour room visited this episode: up, right, down, left |
| 62      | tanh(visits of the current room / 10) |
| 63      | tanh(visits of the current tile / 10) |
| 64-95   | last 4 actions, one-hot 8 each (most recent first) |
| 96-101  | two nearest enemies: dx / room width, dy / room height, present |
| 102     | tanh(steps since the last new room / 100) |
| 103     | episode progress: step / max steps |
| 104-112 | 3x3 tiles around the player visited this episode (row-major, centre = current) |
| 113     | tanh(steps without moving / 20) |
| 114     | health changed last step: -1 lost, +1 gained, 0 none |
| 115     | entered a room never seen this episode on the last step |
| 116-119 | sin/cos of 2*pi*x / room width, sin/cos of 2*pi*y / room height |
| 120     | holds at least one small key |
| 121     | has a sword |
| 122     | START pressed on the last step |
| 123     | player overlaps an enemy's tile |
| 124     | tanh(distinct tiles visited in this room / 40) |
| 125     | tanh(distinct tiles visited this episode / 400) |
| 126     | 1 in the overworld (group 0), 0 elsewhere |
| 127     | constant 1 (bias) |
"""

from __future__ import annotations

from itertools import chain
from operator import itemgetter

import numpy as np

from zelda_rlaif.game.kernels import observation as kernel
from zelda_rlaif.game.profiles.base import GameProfile, WorldGeometry
from zelda_rlaif.game.rewards.coverage import CoverageTracker
from zelda_rlaif.segments import OBSERVATION_SIZE

_NO_ENEMIES = np.zeros(0, np.int64)
_ACTION_MASK = (1 << kernel.ACTION_BITS) - 1
_HISTORY_MASK = (1 << (kernel.ACTION_BITS * kernel.RECENT_ACTIONS)) - 1


def push_action(recent_actions: int, action: int) -> int:
    """The packed recent actions (``kernels/observation.py``) after ``action``: one int the kernel reads as is."""
    return ((recent_actions << kernel.ACTION_BITS) | (action + 1)) & _HISTORY_MASK


def unpack_actions(recent_actions: int) -> list[int]:
    """The packed recent actions as a list, most recent first."""
    actions = []
    while recent_actions:
        actions.append((recent_actions & _ACTION_MASK) - 1)
        recent_actions >>= kernel.ACTION_BITS
    return actions


def _room_grids(geometry: WorldGeometry) -> list[tuple[int, int]]:
    """(rooms per row, rows) of each group's room-id grid, for the groups the profile describes."""
    groups = max([geometry.groups, *(g + 1 for g in (*geometry.grid_width, *geometry.grid_height))])
    width, height = geometry.grid_width, geometry.grid_height
    return [(width.get(g, kernel.DEFAULT_GRID), height.get(g, kernel.DEFAULT_GRID)) for g in range(groups)]


class ObservationBuilder:
    """Builds the vector from the decoded state and the episode's trackers (the work is ``kernels/observation.py``).

    ``build`` also counts the step's tile in the coverage tracker: the kernel does both in one call.
    """

    def __init__(self, profile: GameProfile, max_steps: int) -> None:
        geometry = profile.geometry
        mapped = [name for name in kernel.FIELDS if name in profile.ram]
        self._values_of = itemgetter(*mapped)  # one C call, and a tuple of ints is a cheap kernel argument
        world = {"room_width_px": geometry.room_width_px, "room_height_px": geometry.room_height_px,
                 "tile_px": geometry.tile_px, "max_steps": max(1, max_steps),
                 "max_health_limit": profile.max_health_limit, "total_rooms": geometry.total_rooms}
        self._constants = kernel.profile_constants(
            [mapped.index(name) if name in mapped else -1 for name in kernel.FIELDS],
            [world[name] for name in kernel.WORLD], _room_grids(geometry))

    def build(
        self,
        raw: dict[str, int],
        *,
        enemies: list[tuple[int, int]],
        tracker: CoverageTracker,
        recent_actions: int,
        step: int,
        health_delta: int,
        new_room: bool,
        still_steps: int,
        steps_since_new_room: int,
        pressed_start: bool,
    ) -> tuple[np.ndarray, int]:
        """Count the player's step on its tile in ``tracker`` (the coverage of the same profile), then build the
        observation; returns it (a new array) and the earlier steps on that tile. ``raw`` is the decoder's
        record, ``recent_actions`` packed by ``push_action``."""
        out = np.empty(OBSERVATION_SIZE, np.float32)
        values = self._values_of(raw)
        positions = np.fromiter(chain.from_iterable(enemies), np.int64) if enemies else _NO_ENEMIES
        while True:
            tile_before: int = kernel.build(
                out, values, self._constants, positions, tracker.room_counts, tracker.tile_steps, tracker.totals,
                recent_actions, step, health_delta, new_room, still_steps, steps_since_new_room, pressed_start)
            if tile_before >= 0:
                return out, tile_before
            # The tile lies outside the coverage arrays (never with the bundled profiles): grow them, count again.
            tracker.grow_to_cover(raw.get("group", 0), raw.get("room", 0), raw.get("x", 0), raw.get("y", 0))
