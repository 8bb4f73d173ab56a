"""Per-episode exploration bookkeeping shared by the coverage rewards and the observation."""

from __future__ import annotations

from collections import Counter


class CoverageTracker:
    def __init__(self, tile_px: int) -> None:
        self.tile_px = tile_px
        self.reset()

    def reset(self) -> None:
        self._rooms: Counter[tuple[int, int]] = Counter()
        self._tiles: Counter[tuple[int, int, int, int]] = Counter()
        self._tiles_per_room: Counter[tuple[int, int]] = Counter()

    def _tile(self, group: int, room: int, x: int, y: int) -> tuple[int, int, int, int]:
        return (group, room, x // self.tile_px, y // self.tile_px)

    def enter_room(self, group: int, room: int) -> int:
        """Count an entry; returns the number of earlier entries."""
        key = (group, room)
        before = self._rooms[key]
        self._rooms[key] = before + 1
        return before

    def visit_tile(self, group: int, room: int, x: int, y: int) -> int:
        """Count a step on a tile; returns the number of earlier steps there."""
        key = self._tile(group, room, x, y)
        before = self._tiles[key]
        self._tiles[key] = before + 1
        if before == 0:
            self._tiles_per_room[(group, room)] += 1
        return before

    def rooms(self) -> list[tuple[int, int]]:
        return sorted(self._rooms)

    def rooms_visited(self) -> int:
        return len(self._rooms)

    def room_seen(self, group: int, room: int) -> bool:
        return (group, room) in self._rooms

    def room_visits(self, group: int, room: int) -> int:
        return self._rooms.get((group, room), 0)

    def tile_visits(self, group: int, room: int, x: int, y: int) -> int:
        return self._tiles.get(self._tile(group, room, x, y), 0)

    def tiles_in_room(self, group: int, room: int) -> int:
        return self._tiles_per_room.get((group, room), 0)

    def tiles_visited(self) -> int:
        return len(self._tiles)
