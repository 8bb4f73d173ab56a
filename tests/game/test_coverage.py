"""``CoverageTracker``: exact per-episode counts, wherever the RAM puts the player."""

from __future__ import annotations

from zelda_rlaif.game.profiles.testworld import TESTWORLD
from zelda_rlaif.game.rewards.coverage import CoverageTracker


def tracker() -> CoverageTracker:
    return CoverageTracker(TESTWORLD.geometry)


def test_steps_are_counted_per_tile_and_rooms_per_entry() -> None:
    coverage = tracker()
    assert coverage.enter_room(0, 0x11) == 0
    assert [coverage.visit_tile(0, 0x11, x, 72) for x in (80, 84, 95, 96)] == [0, 1, 2, 0]
    assert coverage.enter_room(0, 0x11) == 1
    assert coverage.tile_visits(0, 0x11, 90, 79) == 3  # the same 16x16 tile as (80, 72)
    assert coverage.tiles_in_room(0, 0x11) == coverage.tiles_visited() == 2
    assert coverage.room_visits(0, 0x11) == 2 and coverage.rooms_visited() == 1
    assert coverage.room_seen(0, 0x11) and not coverage.room_seen(0, 0x12)
    assert coverage.rooms() == [(0, 0x11)]


def test_positions_past_the_room_and_before_its_edge_are_their_own_tiles() -> None:
    coverage = tracker()
    # Scrolling rooms put sprites past the 160x128 room; every byte coordinate is a tile of its own.
    assert coverage.visit_tile(0, 0x11, 250, 200) == 0
    assert coverage.visit_tile(0, 0x11, 255, 207) == 1
    assert coverage.tile_visits(0, 0x11, 250 - 16, 200) == 0
    # Neighbours of an edge tile (negative offsets) and far-away cells read as never stepped on.
    assert coverage.tile_visits(0, 0x11, -8, -8) == 0
    assert coverage.tile_visits(0, 0x11, 4000, 4000) == 0


def test_rooms_and_positions_outside_the_geometry_are_counted_exactly() -> None:
    coverage = tracker()
    group, room = TESTWORLD.geometry.groups + 3, 200  # beyond the profile's groups and room grid
    assert coverage.enter_room(group, room) == 0
    assert coverage.visit_tile(group, room, 300, 400) == 0  # beyond a byte, too
    assert coverage.visit_tile(group, room, 300, 400) == 1
    assert coverage.room_visits(group, room) == 1 and coverage.tiles_in_room(group, room) == 1
    assert coverage.rooms() == [(group, room)]


def test_reset_forgets_everything() -> None:
    coverage = tracker()
    coverage.enter_room(1, 2)
    coverage.visit_tile(1, 2, 72, 56)
    coverage.reset()
    assert coverage.rooms() == [] and coverage.rooms_visited() == coverage.tiles_visited() == 0
    assert coverage.tile_visits(1, 2, 72, 56) == 0 and coverage.room_visits(1, 2) == 0
