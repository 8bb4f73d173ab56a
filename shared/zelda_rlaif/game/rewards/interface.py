"""What reward components see and implement, and what they read from the layers around them.

Component modules import these types from here, never from ``components`` (which imports them all to
assemble the stack), so the reward layer has no import cycle. The reward model and the online guidance are
described by protocols: the reward layer imports neither torch nor the guidance machinery, not even for
type checking.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np


@dataclass(slots=True)
class StepContext:
    prev: dict[str, int]
    cur: dict[str, int]
    action: int
    room_changed: bool
    room_entries_before: int  # earlier entries into the current room this episode (valid when room_changed)
    tile_visits_before: int
    still_steps: int
    obs_prev: np.ndarray
    obs: np.ndarray
    # The quest milestones reached so far this episode, one bit each in the profile's order (this step's included).
    progress: int = 0


class RewardComponent(Protocol):
    def reset(self, obs: np.ndarray) -> None: ...

    def reseed(self, seed: int) -> None:
        """Restart any learned state from ``seed`` (called by a seeded ``env.reset``)."""

    def add(self, ctx: StepContext, out: dict[str, float]) -> None: ...


class StatePotential(Protocol):
    """Phi(s) for potential-based shaping; ``zelda_rlaif.reward_model.potential.Potential`` is the one in use."""

    def phi(self, observation: np.ndarray) -> float: ...


class LiveSuggestion(Protocol):
    """What the alignment bonus reads of a guidance suggestion (``zelda_rlaif.game.guidance.runtime``)."""

    @property
    def action(self) -> int: ...

    @property
    def source(self) -> str: ...


class SuggestionFeed(Protocol):
    """The env's guidance runtime, as the alignment bonus sees it."""

    @property
    def live(self) -> LiveSuggestion | None:
        """The suggestion that applies to the step being taken, if any."""
