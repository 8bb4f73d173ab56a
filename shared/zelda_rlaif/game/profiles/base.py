"""A game profile: everything the environment needs to know about one game, and nothing else.

Adding a game means adding a profile: how to recognise its ROM, where its variables live in RAM and how
they are encoded, the shape of its world, and how to tell a save state is plausible for it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from zelda_rlaif.game.profiles.walkthrough import Walkthrough


class Encoding(StrEnum):
    U8 = "u8"
    U16LE = "u16le"
    BCD16LE = "bcd16le"  # two BCD bytes, low byte first: 0x34 0x12 -> 1234
    BOOL = "bool"  # nonzero -> 1
    POPCOUNT = "popcount"  # number of set bits over `size` bytes (bitsets of obtained things)
    SUM = "sum"  # sum of `size` bytes (per-dungeon counters)
    ROOM_FLAGS = "room_flags"  # the current room's byte in the profile's room-flag table, masked
    BIT = "bit"  # 1 when the byte has any bit of `mask` set, else 0: one flag of a bitset (one treasure)


@dataclass(frozen=True)
class RamField:
    address: int  # unused for ROOM_FLAGS (the table is chosen by the current group)
    encoding: Encoding = Encoding.U8
    size: int = 1
    doc: str = ""
    mask: int = 0xFF


@dataclass(frozen=True)
class RomIdentity:
    """What the cartridge header must say."""

    title: str  # at $134, ASCII, NUL/space padded
    cgb_flag: int | None  # $143 (0x80 CGB-compatible, 0xC0 CGB-only, other values DMG); None: any
    header_checksum: int | None  # $14D; None when the profile accepts rebuilt ROMs with any checksum
    description: str


@dataclass(frozen=True)
class EnemySlot:
    """Where one enemy object keeps its enabled flag and position."""

    active: int
    x: int
    y: int


@dataclass(frozen=True)
class WorldGeometry:
    """Map shape for coverage, observations and the HUD's world map."""

    groups: int  # number of map groups (0 = overworld)
    grid_width: dict[int, int]  # per group: rooms per row of the room-id grid (room id = row * width + col)
    grid_height: dict[int, int]  # per group: rows of the room-id grid
    room_width_px: int = 160
    room_height_px: int = 128
    tile_px: int = 16  # coverage cell size
    total_rooms: int = 0  # rooms that exist, for "rooms discovered" ratios

    def row_col(self, group: int, room: int) -> tuple[int, int]:
        width = self.grid_width.get(group, 16)
        return divmod(room, width)

    def neighbour(self, group: int, room: int, direction: int) -> int | None:
        """Room id next to ``room`` in ``direction`` (0 up, 1 right, 2 down, 3 left), if on the grid."""
        width, height = self.grid_width.get(group, 16), self.grid_height.get(group, 16)
        row, col = divmod(room, width)
        row += (-1, 0, 1, 0)[direction]
        col += (0, 1, 0, -1)[direction]
        if 0 <= row < height and 0 <= col < width:
            return row * width + col
        return None


@dataclass(frozen=True)
class Landmark:
    """Something worth walking to that the RAM map does not expose, e.g. where an NPC stands (used by the
    guidance rules planner)."""

    group: int
    room: int
    x: int
    y: int
    name: str


@dataclass(frozen=True)
class Milestone:
    """A step of the game's quest: reached in an episode once ``reached`` holds for a decoded RAM state.

    Milestones are what "the agent got further" means for a game; the trainer, ``eval`` and the trackers report
    the fraction of episodes that reached each one (``zelda_rlaif.episodes``).
    """

    name: str  # a metric name part: lower_snake_case
    description: str
    reached: Callable[[Mapping[str, int]], bool]
    # Profile-only RAM fields (not in ``segments.GameState``) that ``reached`` reads: the decoder reads them every
    # step only for the profiles whose milestones need them.
    reads: tuple[str, ...] = ()


@dataclass(frozen=True)
class GameProfile:
    name: str
    rom: RomIdentity
    # Field names are those of segments.GameState (minus derived ones) plus a few profile-only helpers.
    ram: dict[str, RamField]
    geometry: WorldGeometry
    enemy_slots: tuple[EnemySlot, ...] = ()
    room_flags: dict[int, int] = field(default_factory=dict)  # group -> address of its room-flag table
    room_visited_bit: int = 0x10
    in_game_state: int = 2  # value of the `game_state` field during gameplay
    max_health_limit: int = 80  # quarter hearts; a larger value means the state is not this game's
    cgb: bool = False  # run PyBoy in CGB mode
    needs_user_state: bool = True  # True: a save state must be supplied (no boot-to-gameplay route)
    boot_frames_limit: int = 600  # frames to wait for gameplay after power-on when no state is supplied
    landmarks: tuple[Landmark, ...] = ()
    milestones: tuple[Milestone, ...] = ()  # in quest order
    walkthrough: Walkthrough | None = None  # the way to the milestones, for judges that know the game
    notes: str = ""

    def __post_init__(self) -> None:
        if self.walkthrough is not None:
            unknown = [o.milestone for o in self.walkthrough.objectives if o.milestone not in self.milestone_names]
            if unknown:
                raise ValueError(f"profile {self.name}: the walkthrough names {', '.join(unknown)}, which are not "
                                 f"among its milestones ({', '.join(self.milestone_names)})")

    @property
    def milestone_names(self) -> list[str]:
        """In quest order: what ``EpisodeStats.of`` reports a fraction for."""
        return [milestone.name for milestone in self.milestones]
