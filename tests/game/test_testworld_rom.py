"""The bundled test world ROM, played in raw PyBoy through its fixed WRAM contract.

Every feature is reached by walking there with scripted, closed-loop inputs (read the player's
position from WRAM, press towards the next waypoint), so the routes document the world map in
shared/zelda_rlaif/game/testworld/rom/README.md and break loudly if the map changes.
"""

from __future__ import annotations

import io
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from pyboy import PyBoy

ROM_DIR = Path(__file__).resolve().parents[2] / "shared" / "zelda_rlaif" / "game" / "testworld" / "rom"
ROM = ROM_DIR / "testworld.gb"

# The WRAM contract (README.md of the ROM).
GAME_STATE = 0xC000
GROUP = 0xC001
ROOM = 0xC002
PLAYER_X = 0xC003
PLAYER_Y = 0xC004
PLAYER_DIR = 0xC005
HEALTH = 0xC006
MAX_HEALTH = 0xC007
RUPEES = 0xC008
KEYS = 0xC00A
SWORD_LEVEL = 0xC00B
TEXT_ACTIVE = 0xC00C
MENU_OPEN = 0xC00D
DEATH_COUNTER = 0xC00E
NUM_ENEMIES = 0xC010
PUZZLE_FLAGS = 0xC011
DOOR_FLAGS = 0xC012
TREASURE_FLAGS = 0xC013
KEYS_PRESSED = 0xC014
SWORD_TIMER = 0xC015
INVINCIBLE_TIMER = 0xC016
FRAME_COUNTER = 0xC017
ENEMIES_DEFEATED = 0xC018
ENEMY_SLOTS = 0xC020
ROOM_FLAGS_OVERWORLD = 0xC040
ROOM_FLAGS_INDOORS = 0xC080
VISITED = 0x10
ITEM = 0x20

START_ROOM = 0x11
START_POS = (80, 72)

DIRECTIONS = ("up", "down", "left", "right")


class Pad:
    """Holds a set of buttons across frames; PyBoy keeps a button down until it is released."""

    def __init__(self, pb: PyBoy) -> None:
        self.pb = pb
        self.held: set[str] = set()

    def set(self, *buttons: str) -> None:
        wanted = set(buttons)
        for button in self.held - wanted:
            self.pb.button_release(button)
        for button in wanted - self.held:
            self.pb.button_press(button)
        self.held = wanted

    def frames(self, n: int, *buttons: str) -> None:
        self.set(*buttons)
        self.pb.tick(n, False)

    def tap(self, button: str) -> None:
        """A fresh press for one frame, then released (the game reacts to new presses)."""
        self.frames(1)
        self.frames(1, button)
        self.frames(1)

    def ram(self, addr: int) -> int:
        return int(self.pb.memory[addr])

    @property
    def pos(self) -> tuple[int, int]:
        return self.ram(PLAYER_X), self.ram(PLAYER_Y)

    @property
    def where(self) -> tuple[int, int]:
        return self.ram(GROUP), self.ram(ROOM)

    def until(self, done: Callable[[], bool], *buttons: str, limit: int = 600, what: str = "") -> None:
        """Hold `buttons` until `done()` holds, or fail after `limit` frames."""
        for _ in range(limit):
            if done():
                self.set()
                return
            self.frames(1, *buttons)
        raise AssertionError(f"gave up waiting for {what or done}: at {self.where} {self.pos}")


@pytest.fixture(scope="module")
def emulator() -> Iterator[tuple[PyBoy, bytes]]:
    pb = PyBoy(str(ROM), window="null", sound_emulated=False)
    for _ in range(600):
        if pb.memory[GAME_STATE] == 2:
            break
        pb.tick(1, False)
    state = io.BytesIO()
    pb.save_state(state)
    yield pb, state.getvalue()
    pb.stop(save=False)


@pytest.fixture
def pad(emulator: tuple[PyBoy, bytes]) -> Pad:
    """The game right after boot, in gameplay; each test starts from the same snapshot."""
    pb, booted = emulator
    pb.load_state(io.BytesIO(booted))
    for button in ("a", "b", "start", "select", *DIRECTIONS):
        pb.button_release(button)
    pb.tick(1, False)
    return Pad(pb)


# --- Routes. Coordinates are the player's centre in playfield pixels (rooms are 160x128,
# --- 10x8 cells of 16 px); doorways are cells 4-5 on top/bottom edges (x 64-95) and rows 3-4
# --- on left/right edges (y 48-79).


def walk_to(pad: Pad, x: int | None = None, y: int | None = None, limit: int = 400) -> None:
    """Walk in a straight line along one axis to x (or y); the route must be clear."""
    if x is not None:
        button = "right" if x > pad.pos[0] else "left"
        pad.until(lambda: pad.pos[0] == x, button, limit=limit, what=f"x={x}")
    if y is not None:
        button = "down" if y > pad.pos[1] else "up"
        pad.until(lambda: pad.pos[1] == y, button, limit=limit, what=f"y={y}")


def walk_out(pad: Pad, direction: str, limit: int = 400) -> None:
    """Hold a direction until the room (or group) changes: through a doorway, door or stairs."""
    start = pad.where
    pad.until(lambda: pad.where != start, direction, limit=limit, what=f"leaving {start} {direction}")


def start_to_house(pad: Pad) -> None:
    """Start room $11 -> west to $10 -> round the house to its door -> indoor room 0."""
    walk_out(pad, "left")  # arrive in $10 at (151, 72)
    walk_to(pad, x=120)
    walk_to(pad, y=100)  # below the house
    walk_to(pad, x=64)  # under the two door cells (x 48-79)
    walk_out(pad, "up")


def start_to_puzzle_room(pad: Pad) -> None:
    """$11 -> $10 -> south to $20 -> round the rocks to the stairs -> indoor room 1."""
    walk_out(pad, "left")
    walk_to(pad, x=120)
    walk_to(pad, y=100)
    walk_to(pad, x=80)
    walk_out(pad, "down")  # $20 at (80, 8)
    walk_to(pad, y=24)
    walk_to(pad, x=120)  # east of the rock ring around the stairs
    walk_to(pad, y=88)
    walk_to(pad, x=80)
    walk_out(pad, "up")  # onto the stairs


def start_to_key(pad: Pad) -> None:
    """$11 -> north to $01, walk up onto the key (cell 4,3)."""
    walk_out(pad, "up")  # $01 at (80, 119)
    pad.until(lambda: pad.ram(KEYS) > 0, "up", what="the key")


def key_to_east_column(pad: Pad) -> None:
    """$01 -> back to $11 -> east to $12, push into the locked block -> $13."""
    walk_out(pad, "down")  # $11 at (80, 8)
    walk_to(pad, y=72)  # row 4: below the start room's rupee
    walk_out(pad, "right")  # $12 at (8, 72)
    walk_out(pad, "right", limit=600)  # opens the lock on contact, then walks through to $13


def east_column_to_sword(pad: Pad) -> None:
    """$13 -> north to $03, walk up onto the sword (cell 4,3)."""
    walk_to(pad, x=80)
    walk_out(pad, "up")  # $03 at (80, 119)
    pad.until(lambda: pad.ram(SWORD_LEVEL) == 1, "up", what="the sword")


def enemy(pad: Pad, slot: int = 0) -> tuple[int, int, int]:
    base = ENEMY_SLOTS + 4 * slot
    return pad.ram(base), pad.ram(base + 1), pad.ram(base + 2)


def chase(pad: Pad, done: Callable[[], bool], limit: int = 3000) -> None:
    """Walk diagonally into enemy slot 0 every frame until `done()`."""
    for _ in range(limit):
        if done():
            pad.set()
            return
        _, ex, ey = enemy(pad)
        px, py = pad.pos
        buttons = []
        if ex != px:
            buttons.append("right" if ex > px else "left")
        if ey != py:
            buttons.append("down" if ey > py else "up")
        pad.frames(1, *buttons)
    raise AssertionError(f"chase gave up at {pad.where} {pad.pos}, enemy {enemy(pad)}")


def fight(pad: Pad, limit: int = 3000) -> None:
    """Line up with enemy slot 0 on one axis, at most 20 px away, face it and swing (B).

    The sword hits an enemy whose centre is within 10 px of a point 14 px in front of the player.
    """
    defeated = pad.ram(ENEMIES_DEFEATED)
    for _ in range(limit):
        active, ex, ey = enemy(pad)
        if pad.ram(ENEMIES_DEFEATED) > defeated or not active:
            pad.set()
            return
        if pad.ram(SWORD_TIMER):
            pad.frames(1)
            continue
        px, py = pad.pos
        dx, dy = ex - px, ey - py
        if abs(dx) >= abs(dy):
            towards, across, gap = ("right" if dx > 0 else "left"), ("down" if dy > 0 else "up"), abs(dx)
            off_line, facing = abs(dy), (1 if dx > 0 else 3)
        else:
            towards, across, gap = ("down" if dy > 0 else "up"), ("right" if dx > 0 else "left"), abs(dy)
            off_line, facing = abs(dx), (2 if dy > 0 else 0)
        if off_line > 3:
            pad.frames(1, across)
        elif gap > 20 or pad.ram(PLAYER_DIR) != facing:
            pad.frames(1, towards)  # close in, or just turn to face it
        else:
            pad.frames(1)
            pad.frames(1, "b")
    raise AssertionError(f"fight gave up at {pad.where} {pad.pos}, enemy {enemy(pad)}")


# --- Tests


def test_boot_starts_gameplay_in_the_start_room(pad: Pad) -> None:
    assert pad.ram(GAME_STATE) == 2
    assert pad.where == (0, START_ROOM)
    assert pad.pos == START_POS
    assert pad.ram(PLAYER_DIR) == 2
    assert (pad.ram(HEALTH), pad.ram(MAX_HEALTH)) == (12, 12)
    assert pad.ram(ROOM_FLAGS_OVERWORLD + START_ROOM) & VISITED
    assert pad.ram(RUPEES) == pad.ram(RUPEES + 1) == 0
    assert (pad.ram(KEYS), pad.ram(SWORD_LEVEL), pad.ram(NUM_ENEMIES)) == (0, 0, 0)
    frame = pad.ram(FRAME_COUNTER)
    pad.frames(10, "right")
    assert pad.ram(KEYS_PRESSED) == 0x10
    assert pad.pos == (START_POS[0] + 10, START_POS[1])
    assert pad.ram(PLAYER_DIR) == 1
    assert (pad.ram(FRAME_COUNTER) - frame) % 256 == 10


def test_doorway_changes_room_and_marks_it_visited(pad: Pad) -> None:
    assert not pad.ram(ROOM_FLAGS_OVERWORLD + 0x01) & VISITED
    walk_out(pad, "up")
    assert pad.where == (0, 0x01)
    assert pad.pos == (80, 119)
    assert pad.ram(ROOM_FLAGS_OVERWORLD + 0x01) & VISITED
    walk_out(pad, "down")
    assert pad.where == (0, START_ROOM)
    assert pad.pos == (80, 8)


def test_walls_block_the_player(pad: Pad) -> None:
    # Row 4 of the start room is open to x 151 (east doorway), but row 1 ends at the border trees.
    walk_to(pad, y=24)
    pad.frames(120, "right")
    assert pad.pos == (138, 24)
    assert pad.where == (0, START_ROOM)


def test_rupee_is_collected_once(pad: Pad) -> None:
    walk_to(pad, x=96)
    pad.until(lambda: pad.ram(RUPEES) != 0, "up", what="the start room's rupee")
    assert (pad.ram(RUPEES), pad.ram(RUPEES + 1)) == (0x05, 0x00)
    assert pad.ram(ROOM_FLAGS_OVERWORLD + START_ROOM) & ITEM
    pad.frames(30, "down")
    pad.frames(30, "up")
    assert pad.ram(RUPEES) == 0x05


def test_house_entrance_and_exit(pad: Pad) -> None:
    start_to_house(pad)
    assert pad.where == (1, 0)
    assert pad.pos == (80, 100)
    assert pad.ram(ROOM_FLAGS_INDOORS + 0) & VISITED
    walk_out(pad, "down")  # onto the exit mat
    assert pad.where == (0, 0x10)
    assert pad.pos == (64, 92)


def test_npc_text_box_opens_and_closes_with_a(pad: Pad) -> None:
    start_to_house(pad)
    walk_to(pad, x=72)
    pad.frames(60, "up")  # stops below the NPC (cell 4,2), facing up
    assert pad.pos == (72, 54)
    pad.frames(1, "a")
    assert pad.ram(TEXT_ACTIVE) == 1
    pad.frames(20, "a")  # holding A must not close it again
    assert pad.ram(TEXT_ACTIVE) == 1
    pad.frames(20, "down")  # the player is frozen while the text shows
    assert pad.pos == (72, 54)
    pad.tap("a")
    assert pad.ram(TEXT_ACTIVE) == 0
    pad.frames(5, "down")
    assert pad.pos == (72, 59)


def test_a_away_from_the_npc_does_nothing(pad: Pad) -> None:
    pad.tap("a")
    assert pad.ram(TEXT_ACTIVE) == 0


def test_start_toggles_the_menu_and_freezes_the_game(pad: Pad) -> None:
    pad.frames(1, "start")
    assert pad.ram(MENU_OPEN) == 1
    frame, pos = pad.ram(FRAME_COUNTER), pad.pos
    pad.frames(30, "start")  # held: stays open
    pad.frames(10, "right")
    assert pad.ram(MENU_OPEN) == 1
    assert (pad.ram(FRAME_COUNTER), pad.pos) == (frame, pos)
    pad.tap("start")
    assert pad.ram(MENU_OPEN) == 0
    pad.frames(10, "right")
    assert pad.pos == (pos[0] + 10, pos[1])


def test_enemy_contact_costs_health_with_invincibility(pad: Pad) -> None:
    walk_out(pad, "down")  # $21: one enemy
    assert pad.where == (0, 0x21)
    assert pad.ram(NUM_ENEMIES) == 1
    chase(pad, lambda: pad.ram(HEALTH) < 12)
    assert pad.ram(HEALTH) == 10
    assert pad.ram(INVINCIBLE_TIMER) > 0
    pad.frames(20)  # still invincible: no second hit while overlapping
    assert pad.ram(HEALTH) == 10


def test_death_counts_and_respawns_in_the_start_room(pad: Pad) -> None:
    walk_out(pad, "down")
    chase(pad, lambda: pad.ram(DEATH_COUNTER) != 0)
    assert (pad.ram(DEATH_COUNTER), pad.ram(DEATH_COUNTER + 1)) == (0x01, 0x00)
    assert pad.where == (0, START_ROOM)
    assert pad.pos == START_POS
    assert pad.ram(HEALTH) == pad.ram(MAX_HEALTH) == 12


def test_switch_opens_the_puzzle_door_to_the_treasure_room(pad: Pad) -> None:
    start_to_puzzle_room(pad)
    assert pad.where == (1, 1)
    assert pad.ram(PUZZLE_FLAGS) == 0
    walk_to(pad, y=72)
    pad.until(lambda: pad.ram(PUZZLE_FLAGS) != 0, "right", what="the switch (cell 7,4)")
    assert pad.ram(PUZZLE_FLAGS) == 0x03
    walk_to(pad, x=80)
    walk_out(pad, "up")  # through the opened bars
    assert pad.where == (1, 2)
    pad.until(lambda: pad.ram(RUPEES) != 0, "up", what="the big rupee")
    assert (pad.ram(RUPEES), pad.ram(RUPEES + 1)) == (0x50, 0x00)


def test_bars_stay_shut_without_the_switch(pad: Pad) -> None:
    start_to_puzzle_room(pad)
    pad.frames(150, "up")
    assert pad.where == (1, 1)
    assert pad.pos == (80, 22)


def test_key_opens_the_locked_door(pad: Pad) -> None:
    start_to_key(pad)
    assert pad.ram(KEYS) == 1
    assert pad.ram(TREASURE_FLAGS) & 0x01
    assert pad.ram(ROOM_FLAGS_OVERWORLD + 0x01) & ITEM
    key_to_east_column(pad)
    assert pad.where == (0, 0x13)
    assert pad.ram(KEYS) == 0
    assert pad.ram(DOOR_FLAGS) & 0x01


def test_locked_door_holds_without_a_key(pad: Pad) -> None:
    walk_out(pad, "right")  # $12
    pad.frames(200, "right")
    assert pad.where == (0, 0x12)
    assert pad.pos == (138, 72)
    assert pad.ram(DOOR_FLAGS) == 0


def test_sword_pickup_and_b_defeats_an_enemy(pad: Pad) -> None:
    pad.tap("b")  # no sword yet: no swing
    assert pad.ram(SWORD_TIMER) == 0
    start_to_key(pad)
    key_to_east_column(pad)
    east_column_to_sword(pad)
    assert pad.ram(SWORD_LEVEL) == 1
    assert pad.ram(TREASURE_FLAGS) & 0x02
    walk_out(pad, "down")  # back to $13 and its enemy
    assert pad.where == (0, 0x13)
    assert pad.ram(NUM_ENEMIES) == 1
    fight(pad)
    assert pad.ram(ENEMIES_DEFEATED) == 1
    assert pad.ram(NUM_ENEMIES) == 0
    assert enemy(pad)[0] == 0


def test_same_inputs_give_the_same_ram() -> None:
    def play() -> bytes:
        pb = PyBoy(str(ROM), window="null", sound_emulated=False)
        try:
            pad = Pad(pb)
            pad.frames(200)
            walk_out(pad, "down")
            pad.frames(300, "left")
            pad.frames(300, "up", "right")
            return bytes(pb.memory[0xC000:0xC100])
        finally:
            pb.stop(save=False)

    assert play() == play()


def test_build_reproduces_the_committed_rom(tmp_path: Path) -> None:
    if shutil.which("sdcc") is None:
        pytest.skip("sdcc is not installed (apt-get install -y sdcc)")
    out = tmp_path / "testworld.gb"
    subprocess.run(["bash", str(ROM_DIR / "build.sh"), str(out)], check=True, capture_output=True, timeout=120)
    assert out.read_bytes() == ROM.read_bytes()
