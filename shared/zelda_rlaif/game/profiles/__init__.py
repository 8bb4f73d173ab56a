"""Game profiles by name. Adding a game = adding a profile module and listing it here."""

from __future__ import annotations

from zelda_rlaif.game.profiles.base import GameProfile
from zelda_rlaif.game.profiles.oracle_of_seasons import ORACLE_OF_SEASONS
from zelda_rlaif.game.profiles.testworld import TESTWORLD

PROFILES: dict[str, GameProfile] = {p.name: p for p in (TESTWORLD, ORACLE_OF_SEASONS)}


def get_profile(name: str) -> GameProfile:
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown game profile {name!r}; known profiles: {', '.join(PROFILES)}") from None


__all__ = ["PROFILES", "GameProfile", "get_profile"]
