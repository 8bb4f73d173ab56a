"""Bad ROMs and bad save states fail with one clear sentence, never a PyBoy traceback."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from pyboy import PyBoy

from zelda_rlaif.game.config import EnvConfig
from zelda_rlaif.game.emulator import BUNDLED_ROM, SaveStateError
from zelda_rlaif.game.env import ZeldaEnv
from zelda_rlaif.game.profiles import get_profile
from zelda_rlaif.game.rom import RomError, read_rom


def fix_header_checksum(data: bytearray) -> bytearray:
    checksum = 0
    for byte in data[0x134:0x14D]:
        checksum = (checksum - byte - 1) & 0xFF
    data[0x14D] = checksum
    return data


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_bundled_rom_is_recognised() -> None:
    info = read_rom(BUNDLED_ROM)
    assert info.profile.name == "testworld" and info.title == "TESTWORLD"


def test_missing_rom(tmp_path: Path) -> None:
    with pytest.raises(RomError, match=r"no ROM at .*give the path"):
        read_rom(tmp_path / "zelda.gbc")


def test_not_a_game_boy_rom(tmp_path: Path) -> None:
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 200
    with pytest.raises(RomError, match="not a valid Game Boy ROM"):
        read_rom(write(tmp_path, "picture.gbc", png))
    with pytest.raises(RomError, match="too small to be a Game Boy ROM"):
        read_rom(write(tmp_path, "tiny.gbc", b"\x00" * 100))


def test_corrupt_rom(tmp_path: Path) -> None:
    data = bytearray(BUNDLED_ROM.read_bytes())
    data[0x140] ^= 0xFF  # a damaged header byte
    with pytest.raises(RomError, match="header checksum does not match"):
        read_rom(write(tmp_path, "corrupt.gb", bytes(data)))


def test_truncated_rom(tmp_path: Path) -> None:
    data = BUNDLED_ROM.read_bytes()
    with pytest.raises(RomError, match="truncated"):
        read_rom(write(tmp_path, "half.gb", data[: len(data) // 2]))


def test_oracle_of_ages_is_named_and_refused(tmp_path: Path) -> None:
    data = bytearray(BUNDLED_ROM.read_bytes())
    data[0x134:0x144] = b"ZELDA NAYRUAZ8E\xc0"
    with pytest.raises(RomError, match=r"Oracle of Ages .*not supported; expected one of: .*ZELDA DIN"):
        read_rom(write(tmp_path, "ages.gbc", bytes(fix_header_checksum(data))))


def test_rom_of_another_profile_is_refused(tmp_path: Path) -> None:
    with pytest.raises(RomError, match="profile 'oracle-of-seasons' expects"):
        read_rom(BUNDLED_ROM, get_profile("oracle-of-seasons"))


def test_env_reports_rom_errors_not_tracebacks(tmp_path: Path) -> None:
    with pytest.raises(RomError):
        ZeldaEnv(EnvConfig(rom=tmp_path / "missing.gbc"))


def test_save_state_of_another_machine_mode(tmp_path: Path) -> None:
    # A state made in CGB mode cannot belong to this DMG game.
    pb = PyBoy(str(BUNDLED_ROM), window="null", sound_emulated=False, cgb=True)
    pb.tick(120, False)
    buffer = io.BytesIO()
    pb.save_state(buffer)
    pb.stop(save=False)
    state = write(tmp_path, "cgb.state", buffer.getvalue())
    with pytest.raises(SaveStateError, match="cannot be loaded into the bundled zelda-rlaif test world"):
        ZeldaEnv(EnvConfig(state=state))


def test_truncated_and_garbage_save_states(tmp_path: Path) -> None:
    env = ZeldaEnv()
    good = env.emulator.save_state()
    env.close()
    with pytest.raises(SaveStateError, match="make a save state with PyBoy from this exact ROM"):
        ZeldaEnv(EnvConfig(state=write(tmp_path, "short.state", good[: len(good) // 3])))
    with pytest.raises(SaveStateError):
        ZeldaEnv(EnvConfig(state=write(tmp_path, "long.state", good + b"\x00" * 64)))


def test_save_state_before_gameplay(tmp_path: Path) -> None:
    pb = PyBoy(str(BUNDLED_ROM), window="null", sound_emulated=False)
    buffer = io.BytesIO()
    pb.save_state(buffer)  # power-on: the boot ROM is still running
    pb.stop(save=False)
    with pytest.raises(SaveStateError, match="not a gameplay state"):
        ZeldaEnv(EnvConfig(state=write(tmp_path, "boot.state", buffer.getvalue())))


def test_oracle_needs_a_state(oracle_paths: tuple[Path, Path]) -> None:
    rom, _ = oracle_paths
    with pytest.raises(ValueError, match="needs a save state"):
        ZeldaEnv(EnvConfig(rom=rom))


def test_oracle_puzzle_state_is_the_current_rooms_flags() -> None:
    """Decoded from RAM alone (no ROM needed): the flags of the room the player is in, per map group."""
    from zelda_rlaif.game.ram import RamDecoder

    memory = dict.fromkeys(range(0xC000, 0xE000), 0)
    memory[0xCC49], memory[0xCC4C] = 0, 0x5A  # overworld, room $5A
    memory[0xC700 + 0x5A] = 0x10 | 0x20 | 0x03  # VISITED | ITEM | two door/switch bits
    memory[0xC900 + 0x5A] = 0xFF  # another group's table: must not leak in
    decoder = RamDecoder(get_profile("oracle-of-seasons"))
    assert decoder.raw(memory)["puzzle_flags"] == 0x03
    memory[0xCC49] = 4  # a dungeon: its own table
    assert decoder.raw(memory)["puzzle_flags"] == 0xCF
