"""The 8 discrete actions and how each is pressed within a frame-skip window."""

from __future__ import annotations

from enum import IntEnum


class Action(IntEnum):
    NOP = 0
    UP = 1
    DOWN = 2
    LEFT = 3
    RIGHT = 4
    A = 5
    B = 6
    START = 7


ACTION_NAMES = tuple(a.name.lower() for a in Action)
# For per-step comparisons: a plain int compares several times faster than the enum member.
START = int(Action.START)
# PyBoy button names; None for NOP.
BUTTONS: tuple[str | None, ...] = (None, "up", "down", "left", "right", "a", "b", "start")
# Directions are held for the whole step so walking is continuous; A/B/START are tapped (pressed for part of
# the step, then released) so two steps of the same button register as two presses in edge-triggered games.
IS_DIRECTION = (False, True, True, True, True, False, False, False)
NUM_ACTIONS = len(Action)
