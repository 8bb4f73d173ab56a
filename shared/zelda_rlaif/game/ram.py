"""Decode a profile's RAM map into ``GameState`` records.

This runs every environment step, so the field readers are prepared once per profile and each step only
reads the bytes it needs (``pyboy.memory[addr]`` costs about 0.1 us).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from zelda_rlaif.game.profiles.base import Encoding, GameProfile, RamField
from zelda_rlaif.segments import GameState


class Memory(Protocol):
    def __getitem__(self, address: int) -> int: ...


Reader = Callable[[Memory], int]

STATE_FIELDS = tuple(name for name in GameState.model_fields if name != "rooms_visited")


def _bcd(byte: int) -> int:
    return (byte >> 4) * 10 + (byte & 0x0F)


def make_reader(field: RamField) -> Reader:
    address, size = field.address, field.size
    match field.encoding:
        case Encoding.U8:
            return lambda m: m[address]
        case Encoding.BOOL:
            return lambda m: 1 if m[address] else 0
        case Encoding.U16LE:
            return lambda m: m[address] | (m[address + 1] << 8)
        case Encoding.BCD16LE:
            return lambda m: _bcd(m[address]) + 100 * _bcd(m[address + 1])
        case Encoding.POPCOUNT:
            return lambda m: sum(m[address + i].bit_count() for i in range(size))
        case Encoding.SUM:
            return lambda m: sum(m[address + i] for i in range(size))
    raise ValueError(f"encoding {field.encoding} needs the profile (see RamDecoder)")


def room_flags_reader(profile: GameProfile, field: RamField) -> Reader:
    """The current room's entry in the room-flag table of the current group (indirect: group, room, table)."""
    group, room = make_reader(profile.ram["group"]), make_reader(profile.ram["room"])
    tables, mask = profile.room_flags, field.mask

    def read(m: Memory) -> int:
        table = tables.get(group(m))
        return m[table + room(m)] & mask if table is not None else 0

    return read


class RamDecoder:
    """Reads the ``GameState`` fields (and enemy positions) of one profile."""

    def __init__(self, profile: GameProfile) -> None:
        self.profile = profile
        self._readers = tuple(
            (name, self._reader_for(profile.ram[name])) for name in STATE_FIELDS if name in profile.ram
        )
        self._game_state = make_reader(profile.ram["game_state"]) if "game_state" in profile.ram else None

    def raw(self, memory: Memory) -> dict[str, int]:
        """Every mapped state field as an integer (the cheap form used inside a step)."""
        return {name: read(memory) for name, read in self._readers}

    def _reader_for(self, field: RamField) -> Reader:
        if field.encoding is Encoding.ROOM_FLAGS:
            return room_flags_reader(self.profile, field)
        return make_reader(field)

    def enemies(self, memory: Memory) -> list[tuple[int, int]]:
        """(x, y) of each active enemy slot."""
        return [(memory[s.x], memory[s.y]) for s in self.profile.enemy_slots if memory[s.active]]

    def game_state(self, memory: Memory) -> int | None:
        return self._game_state(memory) if self._game_state else None

    @staticmethod
    def state(raw: dict[str, int], rooms_visited: int = 0) -> GameState:
        values: dict[str, int | bool] = {name: raw.get(name, 0) for name in STATE_FIELDS}
        for name in ("text_active", "menu_open"):
            values[name] = bool(values[name])
        return GameState(**values, rooms_visited=rooms_visited)
