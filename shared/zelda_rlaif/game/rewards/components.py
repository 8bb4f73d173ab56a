"""Composable reward components. Each adds its named parts to the step's component dict.

Components see a ``StepContext`` (the previous and current decoded RAM, the action and the coverage
facts of this step) and never touch the emulator, so they are easy to test with hand-made contexts.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection
from operator import itemgetter

import numpy as np

from zelda_rlaif.game.actions import START
from zelda_rlaif.game.rewards.config import RewardConfig
from zelda_rlaif.game.rewards.guidance import GuidanceBonus
from zelda_rlaif.game.rewards.interface import RewardComponent, StatePotential, StepContext, SuggestionFeed
from zelda_rlaif.game.rewards.rnd import RndCuriosity


class _Stateless:
    def reset(self, obs: np.ndarray) -> None:
        pass

    def reseed(self, seed: int) -> None:
        pass


def _nothing(record: dict[str, int]) -> None:
    return None


class GameEvents(_Stateless):
    """Rooms, health, rupees, keys, sword, essences, puzzle flags, dialog and deaths."""

    def __init__(self, config: RewardConfig, state_fields: Collection[str]) -> None:
        """``state_fields``: the fields of the decoded records (the profile's)."""
        self.c = config
        # (field, weight) pairs built once: this runs every step.
        self._counters = (("rupees", config.rupee), ("keys", config.key), ("sword_level", config.sword))
        self._bitsets = (("essences", config.essence), ("puzzle_flags", config.puzzle),
                         ("door_flags", config.puzzle))
        # On most steps none of the fields rewarded here changes: one C-level read of them all tells.
        rewarded = ("deaths", "health", "text_active", *(name for name, _ in self._counters + self._bitsets))
        watched = [name for name in rewarded if name in state_fields]
        self._events_of: Callable[[dict[str, int]], object] = itemgetter(*watched) if watched else _nothing

    def add(self, ctx: StepContext, out: dict[str, float]) -> None:
        c = self.c
        if ctx.room_changed:
            if ctx.room_entries_before == 0:
                out["new_room"] = c.new_room
            else:
                out["room_revisit"] = c.room_revisit * c.revisit_decay ** ctx.room_entries_before
        if self._events_of(ctx.cur) == self._events_of(ctx.prev):
            return
        prev, cur = ctx.prev.get, ctx.cur.get
        deaths = cur("deaths", 0) - prev("deaths", 0)
        if deaths > 0:
            out["death"] = c.death * deaths
        else:  # a respawn refills health: that is not a reward
            health_delta = cur("health", 0) - prev("health", 0)
            if health_delta < 0:
                out["health"] = c.health_lost * -health_delta
            elif health_delta > 0:
                out["health"] = c.health_gained * health_delta
        for name, weight in self._counters:
            gained = cur(name, 0) - prev(name, 0)
            if gained > 0:
                out[name] = weight * gained
        for name, weight in self._bitsets:
            new_bits = cur(name, 0) & ~prev(name, 0)
            if new_bits:
                out[name] = out.get(name, 0.0) + weight * new_bits.bit_count()
        if cur("text_active") and not prev("text_active"):
            out["dialog"] = c.dialog


class Coverage(_Stateless):
    """Tile-level exploration: a bonus the first time each 16x16 tile is stepped on."""

    def __init__(self, config: RewardConfig) -> None:
        self.c = config

    def add(self, ctx: StepContext, out: dict[str, float]) -> None:
        if ctx.tile_visits_before == 0:
            out["new_tile"] = self.c.new_tile


class QuestNovelty:
    """Count-based novelty over (group, room, quest progress) cells whose counts last across episodes.

    The per-episode room bonus pays every room again in every episode, so once the start area is known nothing
    says that walking it *with the key* is new. Here a cell pays on its first entry in an episode, decaying with
    the number of earlier episodes (of this emulator) that entered it, as in count-based exploration (Bellemare et
    al., 2016); reaching a milestone makes every room a new cell. The route past a milestone was found too rarely
    to imitate or shape towards (docs/results.md, section 7): this pays for looking for it. A seeded reset
    forgets the counts, so that the same seed and actions give the same rewards.
    """

    def __init__(self, config: RewardConfig) -> None:
        self.c = config
        self._episodes_entered: dict[tuple[int, int, int], int] = {}
        self._entered: set[tuple[int, int, int]] = set()
        self._progress = -1

    def reset(self, obs: np.ndarray) -> None:
        self._entered.clear()
        self._progress = -1  # the first step marks the start cell, which pays nothing: the episode began there

    def reseed(self, seed: int) -> None:
        self._episodes_entered.clear()

    def add(self, ctx: StepContext, out: dict[str, float]) -> None:
        if self._progress < 0:
            self._entered.add((ctx.prev.get("group", 0), ctx.prev.get("room", 0), 0))
            self._progress = 0
        if not ctx.room_changed and ctx.progress == self._progress:
            return
        self._progress = ctx.progress
        cell = (ctx.cur.get("group", 0), ctx.cur.get("room", 0), ctx.progress)
        if cell in self._entered:
            return
        self._entered.add(cell)
        before = self._episodes_entered.get(cell, 0)
        self._episodes_entered[cell] = before + 1
        out["quest_novelty"] = self.c.quest_novelty / math.sqrt(1 + before)


class Behaviour(_Stateless):
    """Penalties for standing still too long and for pressing START (menu surfing)."""

    def __init__(self, config: RewardConfig) -> None:
        self.c = config

    def add(self, ctx: StepContext, out: dict[str, float]) -> None:
        if ctx.still_steps >= self.c.stuck_after:
            out["stuck"] = self.c.stuck
        if ctx.action == START:
            out["start_press"] = self.c.start_press


class Curiosity:
    """RND intrinsic reward, scaled. Its predictor keeps learning across episodes; a seeded reset restarts it,
    so that the same seed and actions give the same rewards."""

    def __init__(self, config: RewardConfig, seed: int) -> None:
        self.c = config
        self.rnd = RndCuriosity(seed=seed)

    def reset(self, obs: np.ndarray) -> None:
        pass

    def reseed(self, seed: int) -> None:
        self.rnd = RndCuriosity(seed=seed)

    def add(self, ctx: StepContext, out: dict[str, float]) -> None:
        out["rnd"] = self.c.rnd * self.rnd.reward(ctx.obs)


# The components that come from the reward model: an episode's env return leaves them out.
LEARNED_COMPONENTS = ("shaping", "preference")


class Shaping:
    """What the reward model adds, zero until one is loaded: potential-based shaping F = gamma * Phi(s') - Phi(s)
    and, where ``RewardConfig.preference`` is set, the per-step preference reward preference * Phi(s').

    Potential-based shaping leaves the optimal policy unchanged (Ng et al., 1999) only when gamma equals the
    learner's discount, so the trainer passes PPO's gamma into RewardConfig.gamma. The preference term is meant to
    change it: one Phi per step serves both.
    """

    def __init__(self, config: RewardConfig, tile_px: int) -> None:
        self.c = config
        # The preference reward's episodic counts are per coverage tile of the profile (16 px: a Game Boy
        # background tile pair, crossed in about four env steps of walking).
        self.tile_px = tile_px
        self.potential: StatePotential | None = None
        self._phi_prev = 0.0
        # Steps this episode per (group, room, tile x, tile y, quest progress), for preference_count_power.
        self._tile_steps: dict[tuple[int, int, int, int, int], int] = {}

    def set_potential(self, potential: StatePotential | None, current_obs: np.ndarray | None) -> None:
        self.potential = potential
        self._phi_prev = potential.phi(current_obs) if potential is not None and current_obs is not None else 0.0

    def reset(self, obs: np.ndarray) -> None:
        self._phi_prev = self.potential.phi(obs) if self.potential is not None else 0.0
        self._tile_steps.clear()

    def reseed(self, seed: int) -> None:
        pass

    def add(self, ctx: StepContext, out: dict[str, float]) -> None:
        if self.potential is None:
            return
        phi = self.potential.phi(ctx.obs)
        out["shaping"] = self.c.shaping * (self.c.gamma * phi - self._phi_prev)
        if self.c.preference:
            # The count runs on every step, paid or not: a tile's n is the steps spent on it.
            count = self._count(ctx)
            threshold = self.c.preference_threshold
            if threshold is None or phi >= threshold:
                out["preference"] = self.c.preference * phi / count ** self.c.preference_count_power
        self._phi_prev = phi

    def _count(self, ctx: StepContext) -> int:
        if not self.c.preference_count_power:
            return 1
        cur = ctx.cur
        tile = (cur.get("group", 0), cur.get("room", 0), cur.get("x", 0) // self.tile_px,
                cur.get("y", 0) // self.tile_px, ctx.progress)
        steps = self._tile_steps.get(tile, 0) + 1
        self._tile_steps[tile] = steps
        return steps


def default_components(config: RewardConfig, seed: int, state_fields: Collection[str], tile_px: int,
                       guidance: SuggestionFeed | None = None) -> tuple[list[RewardComponent], Shaping]:
    """The standard reward stack for records with ``state_fields``; the shaping component is returned separately
    so models can be swapped in. With online guidance enabled (``guidance`` given) the alignment bonus joins the
    stack."""
    shaping = Shaping(config, tile_px)
    components: list[RewardComponent] = [GameEvents(config, state_fields), Coverage(config), Behaviour(config)]
    if config.quest_novelty > 0:
        components.append(QuestNovelty(config))
    if config.rnd > 0:
        components.append(Curiosity(config, seed))
    if guidance is not None:
        components.append(GuidanceBonus(config, guidance))
    components.append(shaping)
    return components, shaping
