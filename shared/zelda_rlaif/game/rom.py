"""Recognise and validate a Game Boy ROM before PyBoy ever sees it.

Every failure is one sentence naming what was expected, because a PyBoy traceback ("Cartridge header
checksum mismatch!") tells a user nothing about which file to fetch instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from zelda_rlaif.errors import ZeldaRlaifError
from zelda_rlaif.game.profiles import PROFILES, GameProfile

HEADER_END = 0x150
TITLE = slice(0x134, 0x144)
CGB_FLAG = 0x143
ROM_SIZE_CODE = 0x148
HEADER_CHECKSUM = 0x14D
KNOWN_OTHER_GAMES = {"ZELDA NAYRU": "The Legend of Zelda: Oracle of Ages"}


class RomError(ZeldaRlaifError):
    """The ROM file is missing, damaged, not a Game Boy ROM, or not a game we have a profile for."""


@dataclass(frozen=True)
class RomInfo:
    path: Path
    title: str
    cgb_flag: int
    header_checksum: int
    size: int
    profile: GameProfile


def _expected() -> str:
    return "; ".join(f"{p.rom.description} (header title {p.rom.title!r})" for p in PROFILES.values())


def header_title(data: bytes) -> str:
    # CGB-era headers reuse the last title bytes for the manufacturer code and CGB flag.
    raw = data[TITLE]
    if data[CGB_FLAG] in (0x80, 0xC0):
        raw = raw[:11] if raw[11:15].isalnum() else raw[:15]
    return raw.split(b"\x00", 1)[0].decode("ascii", errors="replace").strip()


def read_rom(path: Path | str, profile: GameProfile | None = None) -> RomInfo:
    """Validate the ROM at ``path`` and find its profile (or check it against ``profile``)."""
    path = Path(path)
    if not path.is_file():
        raise RomError(f"no ROM at {path}: give the path to a Game Boy ROM file, e.g. --rom path/to/zelda.gbc")
    data = path.read_bytes()
    if len(data) < HEADER_END:
        raise RomError(f"{path} is {len(data)} bytes, too small to be a Game Boy ROM (at least 32 KiB expected)")
    computed = 0
    for byte in data[0x134:HEADER_CHECKSUM]:
        computed = (computed - byte - 1) & 0xFF
    if computed != data[HEADER_CHECKSUM]:
        raise RomError(
            f"{path} is not a valid Game Boy ROM: its header checksum does not match (the file is corrupt, "
            f"or not a ROM); expected one of: {_expected()}"
        )
    declared = 0x8000 << data[ROM_SIZE_CODE] if data[ROM_SIZE_CODE] <= 8 else None
    if declared is not None and len(data) < declared:
        raise RomError(
            f"{path} is truncated: its header declares {declared // 1024} KiB but the file has "
            f"{len(data) // 1024} KiB; copy the complete ROM again"
        )
    title = header_title(data)
    matches = [p for p in PROFILES.values() if p.rom.title == title]
    if not matches:
        other = KNOWN_OTHER_GAMES.get(title)
        what = f"{other} ({title!r})" if other else f"a ROM titled {title!r}"
        raise RomError(f"{path} is {what}, which is not supported; expected one of: {_expected()}")
    found = matches[0]
    if profile is not None and found.name != profile.name:
        raise RomError(f"{path} is {found.rom.description}, but the profile {profile.name!r} expects "
                       f"{profile.rom.description} (header title {profile.rom.title!r})")
    identity = found.rom
    if identity.cgb_flag is not None and data[CGB_FLAG] != identity.cgb_flag:
        raise RomError(f"{path} says {title!r} but its CGB flag is ${data[CGB_FLAG]:02X}, expected "
                       f"${identity.cgb_flag:02X}: this is not the {identity.description} release we support")
    if identity.header_checksum is not None and data[HEADER_CHECKSUM] != identity.header_checksum:
        raise RomError(f"{path} is a different revision or region of {identity.description} (header checksum "
                       f"${data[HEADER_CHECKSUM]:02X}, expected ${identity.header_checksum:02X}); use the US ROM")
    return RomInfo(path, title, data[CGB_FLAG], data[HEADER_CHECKSUM], len(data), found)
