"""Per-episode exploration bookkeeping shared by the coverage rewards and the observation.

The counts live in NumPy arrays (not dicts) so that the observation kernel reads them directly; their layout
is documented in ``kernels/observation.py``. The arrays cover the profile's world: its groups, the rooms of its
largest room-id grid, and every one-byte sprite coordinate (large rooms scroll, so positions run past
``room_width_px``). A step or entry outside that grows the arrays first, so every count stays exact whatever
the RAM says.
"""

from __future__ import annotations

import numpy as np

from zelda_rlaif.game.kernels import observation as kernels
from zelda_rlaif.game.profiles.base import WorldGeometry

# Sprite coordinates are one byte, whatever the room size.
COORDINATE_SPAN_PX = 256


class CoverageTracker:
    def __init__(self, geometry: WorldGeometry) -> None:
        self.tile_px = geometry.tile_px
        groups = max(geometry.groups, 1)
        width, height = geometry.grid_width, geometry.grid_height
        rooms = max(width.get(g, kernels.DEFAULT_GRID) * height.get(g, kernels.DEFAULT_GRID) for g in range(groups))
        rows = self._cells(max(geometry.room_height_px, COORDINATE_SPAN_PX))
        cols = self._cells(max(geometry.room_width_px, COORDINATE_SPAN_PX))
        self.room_counts = np.zeros((2, groups, rooms), np.int32)
        self.tile_steps = np.zeros((groups, rooms, rows, cols), np.int32)
        self.totals = np.zeros(2, np.int64)

    def _cells(self, span_px: int) -> int:
        return -(-span_px // self.tile_px) + 2 * kernels.MARGIN

    def reset(self) -> None:
        self.room_counts.fill(0)
        self.tile_steps.fill(0)
        self.totals.fill(0)

    def enter_room(self, group: int, room: int) -> int:
        """Count an entry; returns the number of earlier entries."""
        self.grow_to_cover(group, room, 0, 0)
        before = int(self.room_counts[kernels.ENTRIES, group, room])
        self.room_counts[kernels.ENTRIES, group, room] = before + 1
        if before == 0:
            self.totals[kernels.ROOMS] += 1
        return before

    def visit_tile(self, group: int, room: int, x: int, y: int) -> int:
        """Count a step on a tile; returns the number of earlier steps there."""
        self.grow_to_cover(group, room, x, y)
        return int(kernels.visit_tile(self.tile_steps, self.room_counts, self.totals, group, room, x, y,
                                     self.tile_px))

    def rooms(self) -> list[tuple[int, int]]:
        return [(int(group), int(room)) for group, room in np.argwhere(self.room_counts[kernels.ENTRIES])]

    def rooms_visited(self) -> int:
        return int(self.totals[kernels.ROOMS])

    def room_seen(self, group: int, room: int) -> bool:
        return self.room_visits(group, room) > 0

    def room_visits(self, group: int, room: int) -> int:
        return int(kernels.room_count(self.room_counts, kernels.ENTRIES, group, room))

    def tile_visits(self, group: int, room: int, x: int, y: int) -> int:
        return int(kernels.tile_visits(self.tile_steps, group, room, x, y, self.tile_px))

    def tiles_in_room(self, group: int, room: int) -> int:
        return int(kernels.room_count(self.room_counts, kernels.TILES, group, room))

    def tiles_visited(self) -> int:
        return int(self.totals[kernels.TILES])

    def grow_to_cover(self, group: int, room: int, x: int, y: int) -> None:
        """Enlarge the arrays, if needed, so that they hold the tile under (x, y) of this room (existing cells
        keep their indices: growth is at the end of each axis)."""
        _, row, col = kernels.tile_cell(self.tile_steps, group, room, x, y, self.tile_px)
        if min(group, room, row, col) < 0:
            raise ValueError(f"coverage counts non-negative rooms and positions, not group {group} room {room} "
                             f"at ({x}, {y})")
        needed = (group + 1, room + 1, row + 1, col + 1)
        if all(need <= size for need, size in zip(needed, self.tile_steps.shape, strict=True)):
            return
        shape = tuple(max(size, need) for size, need in zip(self.tile_steps.shape, needed, strict=True))
        self.tile_steps = _enlarged(self.tile_steps, shape)
        self.room_counts = _enlarged(self.room_counts, (self.room_counts.shape[0], *shape[:2]))


def _enlarged(counts: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    if counts.shape == shape:
        return counts
    grown = np.zeros(shape, counts.dtype)
    grown[tuple(slice(0, size) for size in counts.shape)] = counts
    return grown
