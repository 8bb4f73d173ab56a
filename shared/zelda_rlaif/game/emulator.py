"""The PyBoy binding: load a validated ROM headless, press buttons, advance frames, save and load states."""

from __future__ import annotations

import io
import logging
from pathlib import Path

import numpy as np

from zelda_rlaif.errors import ZeldaRlaifError
from zelda_rlaif.game.actions import BUTTONS, IS_DIRECTION
from zelda_rlaif.game.profiles.base import GameProfile
from zelda_rlaif.game.ram import RamDecoder
from zelda_rlaif.game.rom import RomInfo, read_rom

BUNDLED_ROM = Path(__file__).resolve().parent / "testworld" / "rom" / "testworld.gb"


class SaveStateError(ZeldaRlaifError):
    """The save state is unreadable or belongs to another game."""


class Emulator:
    """One headless PyBoy instance bound to a game profile."""

    def __init__(self, rom_path: Path | str = BUNDLED_ROM, *, profile: GameProfile | None = None,
                 sound_emulated: bool = False) -> None:
        # Imported here so that importing the game layer (e.g. for profiles) does not load the emulator.
        from pyboy import PyBoy

        self.rom: RomInfo = read_rom(rom_path, profile)
        self.profile = self.rom.profile
        self.decoder = RamDecoder(self.profile)
        logging.getLogger("pyboy").setLevel(logging.ERROR)
        self.pyboy = PyBoy(str(self.rom.path), window="null", sound_emulated=sound_emulated,
                           cgb=self.profile.cgb, log_level="ERROR")
        self.pyboy.set_emulation_speed(0)
        self.memory = self.pyboy.memory
        self._held: str | None = None

    def close(self) -> None:
        self.pyboy.stop(save=False)

    def tick(self, frames: int, render_last: bool = False) -> None:
        """Advance ``frames`` frames, rendering only the last one when asked (rendering is ~5x dearer)."""
        if render_last:
            if frames > 1:
                self.pyboy.tick(frames - 1, False)
            self.pyboy.tick(1, True)
        else:
            self.pyboy.tick(frames, False)

    def act(self, action: int, frames: int, press_frames: int, render_last: bool = False) -> None:
        """Hold a direction for the whole step; tap A/B/START for ``press_frames`` then release."""
        button = BUTTONS[action]
        if button is None:
            self.tick(frames, render_last)
        elif IS_DIRECTION[action]:
            self.pyboy.button_press(button)
            self.tick(frames, render_last)
            self.pyboy.button_release(button)
        else:
            self.pyboy.button(button, press_frames)
            self.tick(frames, render_last)

    def screen(self) -> np.ndarray:
        """The last rendered frame as an (144, 160, 3) uint8 copy."""
        rgba = self.pyboy.screen.ndarray
        rgb = np.empty((*rgba.shape[:2], 3), dtype=np.uint8)
        # A channel at a time: NumPy copies three of every four bytes (``rgba[:, :, :3]``) about 5x slower.
        for channel in range(3):
            rgb[:, :, channel] = rgba[:, :, channel]
        return rgb

    def save_state(self) -> bytes:
        buffer = io.BytesIO()
        self.pyboy.save_state(buffer)
        return buffer.getvalue()

    def load_state(self, state: bytes, source: str = "save state") -> None:
        """Load a state and check that it belongs to this ROM and is in gameplay."""
        buffer = io.BytesIO(state)
        try:
            self.pyboy.load_state(buffer)
        except Exception as exc:  # PyBoy raises assorted errors (EOF, mode mismatch) for foreign states
            raise SaveStateError(
                f"{source} cannot be loaded into {self.profile.rom.description} ({exc}); "
                "make a save state with PyBoy from this exact ROM"
            ) from exc
        if buffer.tell() != len(state):
            raise SaveStateError(
                f"{source} does not belong to {self.profile.rom.description} (it has "
                f"{len(state) - buffer.tell()} bytes left over after loading); make it from this exact ROM"
            )
        self.release_all()
        self.check_in_gameplay(source)

    def release_all(self) -> None:
        # Held buttons are not part of a PyBoy state: release everything so a loaded state starts clean.
        for button in ("up", "down", "left", "right", "a", "b", "start", "select"):
            self.pyboy.button_release(button)

    def check_in_gameplay(self, source: str) -> None:
        raw = self.decoder.raw(self.memory)
        game_state = self.decoder.game_state(self.memory)
        problems = []
        if game_state is not None and game_state != self.profile.in_game_state:
            problems.append(f"game state is {game_state}, not {self.profile.in_game_state} (gameplay)")
        if not 0 < raw.get("max_health", 1) <= self.profile.max_health_limit:
            problems.append(f"max health {raw.get('max_health')} is outside 1..{self.profile.max_health_limit}")
        if raw.get("health", 0) > raw.get("max_health", 0):
            problems.append("health exceeds max health")
        if raw.get("group", 0) >= self.profile.geometry.groups:
            problems.append(f"map group {raw.get('group')} does not exist")
        if problems:
            raise SaveStateError(
                f"{source} is not a gameplay state of {self.profile.rom.description}: {'; '.join(problems)}. "
                "Save the state while the player is in control"
            )

    def boot_to_gameplay(self) -> bytes:
        """Run from power-on until the game reports gameplay; returns a save state taken there."""
        for _ in range(self.profile.boot_frames_limit):
            self.pyboy.tick(1, False)
            if self.decoder.game_state(self.memory) == self.profile.in_game_state:
                self.pyboy.tick(2, False)
                return self.save_state()
        raise SaveStateError(
            f"{self.profile.rom.description} did not reach gameplay within {self.profile.boot_frames_limit} "
            "frames of power-on; supply a save state taken in gameplay"
        )
