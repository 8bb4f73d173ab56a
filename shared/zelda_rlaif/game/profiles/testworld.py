"""The bundled test world: our own small Game Boy game (source in ../testworld/rom/).

Every variable sits at a fixed WRAM address documented in the ROM's README; this table must match it.
"""

from __future__ import annotations

from zelda_rlaif.game.profiles.base import (
    Encoding,
    EnemySlot,
    GameProfile,
    Landmark,
    Milestone,
    RamField,
    RomIdentity,
    WorldGeometry,
)
from zelda_rlaif.game.profiles.walkthrough import Exit, Objective, Walkthrough


def _overworld_passages() -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """The 4x4 overworld's open doorways (the ROM's README map): every column runs top to bottom; rows are open
    from column 0 to 2 and the locked gate joins $12 to $13, so the east column is reached through the gate only."""
    vertical = [((0, row << 4 | col), (0, (row + 1) << 4 | col)) for col in range(4) for row in range(3)]
    horizontal = [((0, row << 4 | col), (0, row << 4 | (col + 1))) for row in range(4) for col in range(2)]
    return [*vertical, *horizontal, ((0, 0x12), (0, 0x13))]


GEOMETRY = WorldGeometry(groups=2, grid_width={0: 16, 1: 16}, grid_height={0: 4, 1: 1}, total_rooms=18)

# Where the player (its sprite's top-left, playfield pixels) stands to leave a room by each edge's doorway: doorways
# are the middle two cells of the top and bottom edges and rows 3-4 of the left and right ones (rom/src/world.c).
_EDGE_DOORWAY = {(-1, 0): (72, 0), (1, 0): (72, 112), (0, -1): (0, 56), (0, 1): (144, 56)}


def _overworld_exits() -> list[Exit]:
    exits = []
    for a, b in _overworld_passages():
        (row_a, col_a), (row_b, col_b) = GEOMETRY.row_col(*a), GEOMETRY.row_col(*b)
        exits.append(Exit(a, b, _EDGE_DOORWAY[(row_b - row_a, col_b - col_a)]))
        exits.append(Exit(b, a, _EDGE_DOORWAY[(row_a - row_b, col_a - col_b)]))
    return exits


# The way through the quest (the ROM's README): key, gate, sword, then the stairs down to the switch and the
# treasure room. The old man is left out: talking to him leaves nothing in RAM once his text box closes.
TESTWORLD_WALKTHROUGH = Walkthrough(
    objectives=(
        Objective("take_key", 0, 0x01, spot=(72, 56)),
        Objective("open_gate", 0, 0x12, spot=(152, 64)),
        Objective("take_sword", 0, 0x03, spot=(72, 56)),
        Objective("solve_switch", 1, 1, spot=(120, 72), from_side=True),  # pillars below it, open to its left
        Objective("reach_treasure", 1, 2),
    ),
    passages=(*_overworld_passages(),
              ((0, 0x10), (1, 0)),  # the house door
              ((0, 0x20), (1, 1)),  # the stairs down to the puzzle room
              ((1, 1), (1, 2))),  # the bars the switch opens
    room_px=(GEOMETRY.room_width_px, GEOMETRY.room_height_px),
    exits=(*_overworld_exits(),
           Exit((0, 0x10), (1, 0), (56, 64)),  # the house's door
           Exit((1, 0), (0, 0x10), (72, 112)),
           Exit((0, 0x20), (1, 1), (72, 48)),  # the stairs
           Exit((1, 1), (0, 0x20), (72, 112)),
           Exit((1, 1), (1, 2), (72, 0)),  # the bars
           Exit((1, 2), (1, 1), (72, 112))),
)

TESTWORLD = GameProfile(
    name="testworld",
    rom=RomIdentity(title="TESTWORLD", cgb_flag=0x00, header_checksum=None,
                    description="the bundled zelda-rlaif test world"),
    ram={
        "game_state": RamField(0xC000, doc="2 during gameplay"),
        "group": RamField(0xC001, doc="0 overworld, 1 indoors"),
        "room": RamField(0xC002, doc="overworld: (row << 4) | col on a 4x4 grid"),
        "x": RamField(0xC003, doc="player x, pixels within the 160x128 playfield"),
        "y": RamField(0xC004, doc="player y, pixels within the playfield"),
        "direction": RamField(0xC005, doc="0 up, 1 right, 2 down, 3 left"),
        "health": RamField(0xC006, doc="quarter hearts"),
        "max_health": RamField(0xC007, doc="quarter hearts"),
        "rupees": RamField(0xC008, Encoding.BCD16LE, 2),
        "keys": RamField(0xC00A),
        "sword_level": RamField(0xC00B),
        "text_active": RamField(0xC00C, Encoding.BOOL),
        "menu_open": RamField(0xC00D, Encoding.BOOL),
        "deaths": RamField(0xC00E, Encoding.BCD16LE, 2),
        "enemies": RamField(0xC010),
        "puzzle_flags": RamField(0xC011, doc="bit0 switch pressed, bit1 puzzle door open"),
        "door_flags": RamField(0xC012, doc="bit0 locked door unlocked"),
        "treasure_flags": RamField(0xC013, doc="bit0 key obtained, bit1 sword obtained"),
    },
    geometry=GEOMETRY,
    enemy_slots=(EnemySlot(active=0xC020, x=0xC021, y=0xC022), EnemySlot(active=0xC024, x=0xC025, y=0xC026)),
    room_flags={0: 0xC040, 1: 0xC080},
    max_health_limit=40,
    needs_user_state=False,
    # The old man stands at cell (4, 2) of the house (the ROM's README).
    landmarks=(Landmark(group=1, room=0, x=72, y=40, name="the old man"),),
    # The quest the test world is built around (its README): a text box in the house is the old man talking.
    milestones=(
        Milestone("talk_old_man", "talked to the old man in the house",
                  lambda s: bool(s["text_active"]) and (s["group"], s["room"]) == (1, 0)),
        Milestone("take_key", "took the key", lambda s: bool(s["treasure_flags"] & 0x01)),
        Milestone("open_gate", "opened the locked gate", lambda s: bool(s["door_flags"] & 0x01)),
        Milestone("take_sword", "took the sword", lambda s: bool(s["treasure_flags"] & 0x02)),
        Milestone("solve_switch", "pressed the floor switch that opens the bars",
                  lambda s: bool(s["puzzle_flags"] & 0x01)),
        Milestone("reach_treasure", "reached the treasure room", lambda s: (s["group"], s["room"]) == (1, 2)),
    ),
    walkthrough=TESTWORLD_WALKTHROUGH,
    notes="Boots straight into gameplay; the environment makes its start state after boot.",
)
