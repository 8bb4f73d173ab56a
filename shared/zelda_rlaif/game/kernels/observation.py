"""The observation kernel and the coverage kernels it calls (one file: see the package's docstring).

Coverage arrays (owned by ``rewards/coverage.py``):

- ``room_counts[ENTRIES | TILES, group, room]``: entries into each room, distinct tiles stepped on in it.
- ``tile_steps[group, room, tile_row + MARGIN, tile_col + MARGIN]``: steps on each tile. The one-cell margin
  holds the row and column just before 0, which the observation's 3x3 neighbourhood reads at the top and left
  edges.
- ``totals[ROOMS | TILES]``: distinct rooms entered and tiles stepped on this episode.

A cell outside the arrays has never been stepped on (the tracker grows the arrays before counting a step
there), so reading it gives 0.

The observation kernel (``build``) counts the step's tile, then fills the 128-D vector documented in
``game/observation.py``. Counting and reading the coverage in one call saves a second call into compiled code per
step; each call costs about a microsecond once the emulator has pushed the env's data out of the CPU caches.
Values are computed in float64 (Python's float) and stored as float32, so the vector is bit for bit what the same
formulas give in Python.
"""

from __future__ import annotations

import math

import numba
import numpy as np

# Coverage counts

MARGIN = 1
ENTRIES, TILES = 0, 1  # first index of room_counts
ROOMS = 0  # totals[ROOMS]; totals[TILES] counts tiles


@numba.njit(cache=True, nogil=True)
def tile_cell(tile_steps: np.ndarray, group: int, room: int, x: int, y: int,
              tile_px: int) -> tuple[bool, int, int]:
    """(inside the arrays, row index, column index) of the tile under pixel (x, y)."""
    row, col = y // tile_px + MARGIN, x // tile_px + MARGIN
    inside = (0 <= group < tile_steps.shape[0] and 0 <= room < tile_steps.shape[1]
              and 0 <= row < tile_steps.shape[2] and 0 <= col < tile_steps.shape[3])
    return inside, row, col


@numba.njit(cache=True, nogil=True)
def tile_visits(tile_steps: np.ndarray, group: int, room: int, x: int, y: int, tile_px: int) -> int:
    inside, row, col = tile_cell(tile_steps, group, room, x, y, tile_px)
    return tile_steps[group, room, row, col] if inside else 0


@numba.njit(cache=True, nogil=True)
def room_count(room_counts: np.ndarray, kind: int, group: int, room: int) -> int:
    """``room_counts[kind, group, room]``, 0 for a room outside the arrays."""
    inside = 0 <= group < room_counts.shape[1] and 0 <= room < room_counts.shape[2]
    return room_counts[kind, group, room] if inside else 0


@numba.njit(cache=True, nogil=True)
def visit_tile(tile_steps: np.ndarray, room_counts: np.ndarray, totals: np.ndarray, group: int, room: int,
               x: int, y: int, tile_px: int) -> int:
    """Count a step on the tile under (x, y); returns the earlier steps there, or -1 when the tile is outside the
    arrays (nothing is counted then: the tracker grows them first)."""
    inside, row, col = tile_cell(tile_steps, group, room, x, y, tile_px)
    if not inside:
        return -1
    before = tile_steps[group, room, row, col]
    tile_steps[group, room, row, col] = before + 1
    if before == 0:
        room_counts[TILES, group, room] += 1
        totals[TILES] += 1
    return before


# The observation

# The decoded fields the kernel reads. They arrive as a tuple of the fields the profile maps, in the profile's
# order; the profile's constants say where each one is in that tuple.
FIELDS = ("x", "y", "group", "room", "direction", "health", "max_health", "rupees", "keys", "sword_level",
          "text_active", "menu_open", "deaths", "enemies", "puzzle_flags", "door_flags", "treasure_flags",
          "essences")
(X, Y, GROUP, ROOM, DIRECTION, HEALTH, MAX_HEALTH, RUPEES, KEYS, SWORD_LEVEL, TEXT_ACTIVE, MENU_OPEN, DEATHS,
 ENEMIES, PUZZLE_FLAGS, DOOR_FLAGS, TREASURE_FLAGS, ESSENCES) = range(len(FIELDS))

# The profile's constants travel in one int64 array (one argument is cheaper than many): the position of each
# of FIELDS in the values tuple (-1: not mapped, reads as 0), then WORLD, then (rooms per row, rows) of each
# group's room-id grid.
WORLD = ("room_width_px", "room_height_px", "tile_px", "max_steps", "max_health_limit", "total_rooms")
ROOM_WIDTH_PX, ROOM_HEIGHT_PX, TILE_PX, MAX_STEPS, MAX_HEALTH_LIMIT, TOTAL_ROOMS = range(
    len(FIELDS), len(FIELDS) + len(WORLD))
GRIDS = len(FIELDS) + len(WORLD)
DEFAULT_GRID = 16  # rooms per row and rows of a group the profile does not describe (WorldGeometry's default)

# Recent actions arrive packed in one int, newest in the low 4 bits, each stored as action + 1 (0: none yet).
ACTION_BITS = 4
RECENT_ACTIONS = 4
_TWO_PI = 2.0 * math.pi
_ROW_STEP = (-1, 0, 1, 0)  # directions 0 up, 1 right, 2 down, 3 left
_COL_STEP = (0, 1, 0, -1)


def profile_constants(field_slots: list[int], world: list[int], grids: list[tuple[int, int]]) -> np.ndarray:
    """The constants array in the layout above."""
    return np.array([*field_slots, *world, *(n for grid in grids for n in grid)], dtype=np.int64)


@numba.njit(cache=True, nogil=True)
def _gather(values: tuple[int, ...], constants: np.ndarray) -> np.ndarray:
    """The decoded values in the order of FIELDS."""
    fields = np.zeros(len(FIELDS), np.int64)
    for field in range(len(FIELDS)):
        if constants[field] >= 0:
            fields[field] = values[constants[field]]
    return fields


@numba.njit(cache=True, nogil=True)
def _flag_bits(out: np.ndarray, start: int, value: int) -> None:
    for bit in range(8):
        out[start + bit] = ((value & 0xFF) >> bit) & 1


@numba.njit(cache=True, nogil=True)
def _nearest_two(enemies: np.ndarray, x: int, y: int) -> tuple[int, int]:
    """Indices of the two enemies nearest (x, y), -1 when absent; ties go to the earlier slot (a stable sort)."""
    first, second = -1, -1
    first_d, second_d = 0, 0
    for i in range(enemies.shape[0] // 2):
        dx, dy = enemies[2 * i] - x, enemies[2 * i + 1] - y
        d = dx * dx + dy * dy
        if first < 0 or d < first_d:
            second, second_d = first, first_d
            first, first_d = i, d
        elif second < 0 or d < second_d:
            second, second_d = i, d
    return first, second


@numba.njit(cache=True, nogil=True)
def build(out: np.ndarray, values: tuple[int, ...], constants: np.ndarray, enemies: np.ndarray,
          room_counts: np.ndarray, tile_steps: np.ndarray, totals: np.ndarray, recent_actions: int, step: int,
          health_delta: int, new_room: bool, still_steps: int, steps_since_new_room: int,
          pressed_start: bool) -> int:
    """Count a step on the player's tile and fill ``out`` (float32[128]); returns the earlier steps on that tile,
    or -1 (and does nothing) when the tile is outside the coverage arrays. ``enemies`` holds the x, y pairs of
    the active enemies."""
    fields = _gather(values, constants)
    x, y, group, room = fields[X], fields[Y], fields[GROUP], fields[ROOM]
    tile_px = constants[TILE_PX]
    tile_before = visit_tile(tile_steps, room_counts, totals, group, room, x, y, tile_px)
    if tile_before < 0:
        return tile_before

    out[:] = 0.0
    width, height = float(constants[ROOM_WIDTH_PX]), float(constants[ROOM_HEIGHT_PX])
    out[0] = x / width
    out[1] = y / height
    direction = fields[DIRECTION]
    if 0 <= direction < 4:
        out[2 + direction] = 1.0
    if 0 <= group < 8:
        out[6 + group] = 1.0
    grid_width, grid_height = DEFAULT_GRID, DEFAULT_GRID
    if 0 <= group < (constants.shape[0] - GRIDS) // 2:
        grid_width, grid_height = constants[GRIDS + 2 * group], constants[GRIDS + 2 * group + 1]
    row, col = room // grid_width, room % grid_width
    out[14] = min(row, 15) / 15.0
    out[15] = min(col, 15) / 15.0
    health, max_health = fields[HEALTH], fields[MAX_HEALTH]
    out[16] = health / max_health if max_health else 0.0
    out[17] = min(max_health / constants[MAX_HEALTH_LIMIT], 1.0)
    keys, sword = fields[KEYS], fields[SWORD_LEVEL]
    out[18] = min(fields[RUPEES] / 999.0, 1.0)
    out[19] = min(keys / 9.0, 1.0)
    out[20] = min(sword / 4.0, 1.0)
    out[21] = 1.0 if fields[TEXT_ACTIVE] else 0.0
    out[22] = 1.0 if fields[MENU_OPEN] else 0.0
    out[23] = math.tanh(fields[DEATHS] / 5.0)
    out[24] = min(fields[ENEMIES] / 8.0, 1.0)
    _flag_bits(out, 25, fields[PUZZLE_FLAGS])
    _flag_bits(out, 33, fields[DOOR_FLAGS])
    _flag_bits(out, 41, fields[TREASURE_FLAGS])
    _flag_bits(out, 49, fields[ESSENCES])
    out[57] = min(totals[ROOMS] / max(constants[TOTAL_ROOMS], 1), 1.0)
    for direction in range(4):
        other_row, other_col = row + _ROW_STEP[direction], col + _COL_STEP[direction]
        on_grid = 0 <= other_row < grid_height and 0 <= other_col < grid_width
        if on_grid and room_count(room_counts, ENTRIES, group, other_row * grid_width + other_col) > 0:
            out[58 + direction] = 1.0
    out[62] = math.tanh(room_count(room_counts, ENTRIES, group, room) / 10.0)
    out[63] = math.tanh((tile_before + 1) / 10.0)
    for slot in range(RECENT_ACTIONS):
        stored = (recent_actions >> (slot * ACTION_BITS)) & ((1 << ACTION_BITS) - 1)
        if stored:
            out[64 + slot * 8 + stored - 1] = 1.0
    first, second = _nearest_two(enemies, x, y)
    for slot, index in enumerate((first, second)):
        if index >= 0:
            out[96 + slot * 3] = (enemies[2 * index] - x) / width
            out[97 + slot * 3] = (enemies[2 * index + 1] - y) / height
            out[98 + slot * 3] = 1.0
    for i in range(enemies.shape[0] // 2):
        if abs(enemies[2 * i] - x) < tile_px and abs(enemies[2 * i + 1] - y) < tile_px:
            out[123] = 1.0
    out[102] = math.tanh(steps_since_new_room / 100.0)
    out[103] = min(step / constants[MAX_STEPS], 1.0)
    index = 104
    for dy in (-tile_px, 0, tile_px):
        for dx in (-tile_px, 0, tile_px):
            if tile_visits(tile_steps, group, room, x + dx, y + dy, tile_px):
                out[index] = 1.0
            index += 1
    out[113] = math.tanh(still_steps / 20.0)
    out[114] = 1.0 if health_delta > 0 else -1.0 if health_delta < 0 else 0.0
    out[115] = 1.0 if new_room else 0.0
    out[116] = math.sin(_TWO_PI * x / width)
    out[117] = math.cos(_TWO_PI * x / width)
    out[118] = math.sin(_TWO_PI * y / height)
    out[119] = math.cos(_TWO_PI * y / height)
    out[120] = 1.0 if keys > 0 else 0.0
    out[121] = 1.0 if sword > 0 else 0.0
    out[122] = 1.0 if pressed_start else 0.0
    out[124] = math.tanh(room_count(room_counts, TILES, group, room) / 40.0)
    out[125] = math.tanh(totals[TILES] / 400.0)
    out[126] = 1.0 if group == 0 else 0.0
    out[127] = 1.0
    return tile_before
