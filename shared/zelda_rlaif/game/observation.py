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

import math
from typing import Protocol

import numpy as np

from zelda_rlaif.game.profiles.base import GameProfile
from zelda_rlaif.segments import OBSERVATION_SIZE

_TWO_PI = 2.0 * math.pi
# Bit patterns of every byte value, so a flag byte becomes 8 entries with one slice assignment.
_BITS = tuple(tuple(float((value >> bit) & 1) for bit in range(8)) for value in range(256))
_ONE_HOT_4 = tuple(tuple(1.0 if i == k else 0.0 for i in range(4)) for k in range(4))


class ObservationBuilder:
    """Builds the vector from the decoded state and the episode's trackers.

    This runs every step, so it fills a Python list (cheap item stores) and converts once, and caches the
    room-grid neighbours instead of recomputing them.
    """

    def __init__(self, profile: GameProfile, max_steps: int) -> None:
        self.profile = profile
        self.geometry = profile.geometry
        self.max_steps = max(1, max_steps)
        self.width = float(self.geometry.room_width_px)
        self.height = float(self.geometry.room_height_px)
        self._neighbours: dict[tuple[int, int], tuple[int | None, ...]] = {}

    def _neighbours_of(self, group: int, room: int) -> tuple[int | None, ...]:
        key = (group, room)
        cached = self._neighbours.get(key)
        if cached is None:
            cached = tuple(self.geometry.neighbour(group, room, d) for d in range(4))
            self._neighbours[key] = cached
        return cached

    def build(
        self,
        raw: dict[str, int],
        *,
        enemies: list[tuple[int, int]],
        tracker: CoverageView,
        recent_actions: list[int],
        step: int,
        health_delta: int,
        new_room: bool,
        still_steps: int,
        steps_since_new_room: int,
        pressed_start: bool,
    ) -> np.ndarray:
        v = [0.0] * OBSERVATION_SIZE
        get = raw.get
        x, y = get("x", 0), get("y", 0)
        group, room = get("group", 0), get("room", 0)
        width, height = self.width, self.height
        v[0] = x / width
        v[1] = y / height
        direction = get("direction", 0)
        if 0 <= direction < 4:
            v[2:6] = _ONE_HOT_4[direction]
        if 0 <= group < 8:
            v[6 + group] = 1.0
        row, col = self.geometry.row_col(group, room)
        v[14] = min(row, 15) / 15.0
        v[15] = min(col, 15) / 15.0
        health, max_health = get("health", 0), get("max_health", 0)
        v[16] = health / max_health if max_health else 0.0
        v[17] = min(max_health / self.profile.max_health_limit, 1.0)
        rupees, keys, sword = get("rupees", 0), get("keys", 0), get("sword_level", 0)
        v[18] = min(rupees / 999.0, 1.0)
        v[19] = min(keys / 9.0, 1.0)
        v[20] = min(sword / 4.0, 1.0)
        v[21] = 1.0 if get("text_active") else 0.0
        v[22] = 1.0 if get("menu_open") else 0.0
        v[23] = math.tanh(get("deaths", 0) / 5.0)
        v[24] = min(get("enemies", 0) / 8.0, 1.0)
        v[25:33] = _BITS[get("puzzle_flags", 0) & 0xFF]
        v[33:41] = _BITS[get("door_flags", 0) & 0xFF]
        v[41:49] = _BITS[get("treasure_flags", 0) & 0xFF]
        v[49:57] = _BITS[get("essences", 0) & 0xFF]
        v[57] = min(tracker.rooms_visited() / max(self.geometry.total_rooms, 1), 1.0)
        for index, neighbour in enumerate(self._neighbours_of(group, room)):
            if neighbour is not None and tracker.room_seen(group, neighbour):
                v[58 + index] = 1.0
        v[62] = math.tanh(tracker.room_visits(group, room) / 10.0)
        v[63] = math.tanh(tracker.tile_visits(group, room, x, y) / 10.0)
        for slot, action in enumerate(recent_actions[:4]):
            v[64 + slot * 8 + action] = 1.0
        tile = self.geometry.tile_px
        if enemies:
            nearest = sorted(enemies, key=lambda e: (e[0] - x) ** 2 + (e[1] - y) ** 2)[:2]
            for slot, (ex, ey) in enumerate(nearest):
                v[96 + slot * 3] = (ex - x) / width
                v[97 + slot * 3] = (ey - y) / height
                v[98 + slot * 3] = 1.0
            v[123] = 1.0 if any(abs(ex - x) < tile and abs(ey - y) < tile for ex, ey in enemies) else 0.0
        v[102] = math.tanh(steps_since_new_room / 100.0)
        v[103] = min(step / self.max_steps, 1.0)
        index = 104
        for dy in (-tile, 0, tile):
            for dx in (-tile, 0, tile):
                if tracker.tile_visits(group, room, x + dx, y + dy):
                    v[index] = 1.0
                index += 1
        v[113] = math.tanh(still_steps / 20.0)
        v[114] = float((health_delta > 0) - (health_delta < 0))
        v[115] = 1.0 if new_room else 0.0
        v[116] = math.sin(_TWO_PI * x / width)
        v[117] = math.cos(_TWO_PI * x / width)
        v[118] = math.sin(_TWO_PI * y / height)
        v[119] = math.cos(_TWO_PI * y / height)
        v[120] = 1.0 if keys > 0 else 0.0
        v[121] = 1.0 if sword > 0 else 0.0
        v[122] = 1.0 if pressed_start else 0.0
        v[124] = math.tanh(tracker.tiles_in_room(group, room) / 40.0)
        v[125] = math.tanh(tracker.tiles_visited() / 400.0)
        v[126] = 1.0 if group == 0 else 0.0
        v[127] = 1.0
        return np.array(v, dtype=np.float32)


class CoverageView(Protocol):
    """What the observation needs from the episode's coverage tracker (see rewards/coverage.py)."""

    def rooms_visited(self) -> int: ...

    def room_seen(self, group: int, room: int) -> bool: ...

    def room_visits(self, group: int, room: int) -> int: ...

    def tile_visits(self, group: int, room: int, x: int, y: int) -> int: ...

    def tiles_in_room(self, group: int, room: int) -> int: ...

    def tiles_visited(self) -> int: ...
