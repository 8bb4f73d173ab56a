"""Decode a profile's RAM map into ``GameState`` records.

This runs every environment step. A read of ``pyboy.memory[addr]`` costs a few tens of ns, less than a Python
call, so the readers are compiled once per profile from Python source, the way ``collections.namedtuple`` builds
its methods: the record reader is one dict display whose values read memory directly, with no call per field.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from zelda_rlaif.game.profiles.base import Encoding, GameProfile, RamField
from zelda_rlaif.segments import GameState


class Memory(Protocol):
    def __getitem__(self, address: int) -> int: ...


Reader = Callable[[Memory], int]

STATE_FIELDS = tuple(name for name in GameState.model_fields if name != "rooms_visited")

_BCD = tuple((byte >> 4) * 10 + (byte & 0x0F) for byte in range(256))


def _room_flag(m: Memory, tables: dict[int, int], group: int, room: int, mask: int) -> int:
    """The current room's entry in the room-flag table of the current group."""
    table = tables.get(group)
    return m[table + room] & mask if table is not None else 0


def _field_source(profile: GameProfile, field: RamField) -> str:
    """A Python expression reading ``field`` from memory ``m`` (``_compile`` provides the names it uses)."""
    a, size = field.address, field.size
    match field.encoding:
        case Encoding.U8:
            return f"m[{a}]"
        case Encoding.BOOL:
            return f"(1 if m[{a}] else 0)"
        case Encoding.U16LE:
            return f"(m[{a}] | m[{a + 1}] << 8)"
        case Encoding.BCD16LE:
            return f"(bcd[m[{a}]] + 100 * bcd[m[{a + 1}]])"
        case Encoding.POPCOUNT:
            return "(" + " + ".join(f"m[{a + i}].bit_count()" for i in range(size)) + ")"
        case Encoding.SUM:
            return "(" + " + ".join(f"m[{a + i}]" for i in range(size)) + ")"
        case Encoding.BIT:
            return f"(1 if m[{a}] & {field.mask} else 0)"
        case Encoding.ROOM_FLAGS:  # indirect: the current group picks the table, the current room the entry
            group, room = _field_source(profile, profile.ram["group"]), _field_source(profile, profile.ram["room"])
            return f"room_flag(m, room_tables, {group}, {room}, {field.mask})"
    raise ValueError(f"unknown encoding {field.encoding}")


def _compile(profile: GameProfile, expression: str) -> Callable[[Memory], Any]:
    """``lambda m: expression``; the source comes from ``_field_source``, i.e. from the profile's RAM map only."""
    names = {"bcd": _BCD, "room_flag": _room_flag, "room_tables": profile.room_flags}
    return eval(f"lambda m: {expression}", names)


class RamDecoder:
    """Reads the ``GameState`` fields (and enemy positions) of one profile, and the profile-only fields its
    milestones read."""

    def __init__(self, profile: GameProfile) -> None:
        self.profile = profile
        fields = {name: profile.ram[name] for name in STATE_FIELDS if name in profile.ram}
        for milestone in profile.milestones:
            for name in milestone.reads:
                if name not in profile.ram:
                    raise ValueError(f"milestone {milestone.name!r} of profile {profile.name} reads {name!r}, "
                                     "which its RAM map lacks: add the field to the profile's ram")
                fields[name] = profile.ram[name]
        self.fields = tuple(fields)  # the keys of every record, in order
        display = ", ".join(f"{name!r}: {_field_source(profile, field)}" for name, field in fields.items())
        # ``raw(memory)``: every mapped state field as an integer (the cheap form used inside a step). It is the
        # compiled reader itself, so a call costs no wrapper frame.
        self.raw: Callable[[Memory], dict[str, int]] = _compile(profile, "{" + display + "}")
        game_state = profile.ram.get("game_state")
        self._game_state: Reader | None = None
        if game_state is not None:
            self._game_state = _compile(profile, _field_source(profile, game_state))
        self._enemy_slots = tuple((slot.active, slot.x, slot.y) for slot in profile.enemy_slots)

    def enemies(self, memory: Memory) -> list[tuple[int, int]]:
        """(x, y) of each active enemy slot."""
        return [(memory[x], memory[y]) for active, x, y in self._enemy_slots if memory[active]]

    def game_state(self, memory: Memory) -> int | None:
        return self._game_state(memory) if self._game_state else None

    @staticmethod
    def state(raw: dict[str, int], rooms_visited: int = 0) -> GameState:
        values: dict[str, int | bool] = {name: raw.get(name, 0) for name in STATE_FIELDS}
        for name in ("text_active", "menu_open"):
            values[name] = bool(values[name])
        return GameState(**values, rooms_visited=rooms_visited)
