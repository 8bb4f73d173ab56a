"""What a guidance request knows about the moment it was asked: a frozen snapshot and its text summary.

A snapshot is taken only on the few steps that send a request, from the env's own trackers (coverage,
recent actions, enemies), so it costs nothing on the other steps. The same snapshot feeds the rules
planner and the text of an LLM request, so both reason from identical facts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from zelda_rlaif.game.actions import ACTION_NAMES
from zelda_rlaif.game.profiles.base import GameProfile, Landmark
from zelda_rlaif.game.profiles.walkthrough import Objective
from zelda_rlaif.game.rewards.coverage import CoverageTracker

DIRECTIONS = ("up", "right", "down", "left")  # the profile's facing order (0 up, 1 right, 2 down, 3 left)


class EmulatorView(Protocol):
    @property
    def decoder(self) -> Any: ...

    @property
    def memory(self) -> Any: ...


class PlayView(Protocol):
    """The parts of ``ZeldaEnv`` that guidance reads (the env itself satisfies it)."""

    @property
    def profile(self) -> GameProfile: ...

    @property
    def coverage(self) -> CoverageTracker: ...

    @property
    def recent_actions(self) -> list[int]: ...

    @property
    def step_count(self) -> int: ...

    @property
    def emulator(self) -> EmulatorView: ...

    def screen(self) -> np.ndarray: ...


@dataclass(frozen=True)
class Neighbour:
    room: int
    visits: int  # entries this episode; 0 = never seen


@dataclass(frozen=True)
class Snapshot:
    step: int
    profile: str
    landmarks: tuple[Landmark, ...]  # the profile's, for the planner
    state: dict[str, int]
    rooms_visited: int
    room_visits: int
    neighbours: tuple[Neighbour | None, ...]  # up, right, down, left; None off the room grid
    enemies: tuple[tuple[int, int], ...]
    still_steps: int
    recent_actions: tuple[int, ...]  # most recent first
    room_width: int
    room_height: int
    # The game profile's walkthrough, where the snapshot was asked to know it (``GuidanceConfig.follow_walkthrough``):
    # the objective next in line, and where in this room to walk next on the way there (None: not known).
    objective: Objective | None = None
    waypoint: tuple[int, int] | None = None

    @property
    def location(self) -> tuple[int, int]:
        return (self.state.get("group", 0), self.state.get("room", 0))


def take_snapshot(view: PlayView, state: dict[str, int], still_steps: int, *, walkthrough: bool = False) -> Snapshot:
    """``walkthrough``: also name the profile's next walkthrough objective and the way there, where it has one."""
    profile = view.profile
    geometry = profile.geometry
    coverage = view.coverage
    group, room = state.get("group", 0), state.get("room", 0)
    neighbours = []
    for direction in range(4):
        other = geometry.neighbour(group, room, direction)
        neighbours.append(None if other is None else Neighbour(other, coverage.room_visits(group, other)))
    emulator = view.emulator
    objective = waypoint = None
    if walkthrough and profile.walkthrough is not None:
        objective = profile.walkthrough.next_objective(state, {m.name: m.reached for m in profile.milestones})
        waypoint = profile.walkthrough.waypoint(state, objective) if objective is not None else None
    return Snapshot(
        step=view.step_count,
        profile=profile.name,
        landmarks=profile.landmarks,
        state=dict(state),
        rooms_visited=coverage.rooms_visited(),
        room_visits=coverage.room_visits(group, room),
        neighbours=tuple(neighbours),
        enemies=tuple(emulator.decoder.enemies(emulator.memory)),
        still_steps=still_steps,
        recent_actions=tuple(view.recent_actions),
        room_width=geometry.room_width_px,
        room_height=geometry.room_height_px,
        objective=objective,
        waypoint=waypoint,
    )


def describe(s: Snapshot) -> str:
    """The state summary of a text request: short, factual, one fact per line."""
    get = s.state.get
    facing = DIRECTIONS[get("direction", 0)] if 0 <= get("direction", 0) < 4 else "unknown"
    place = "the overworld" if get("group", 0) == 0 else f"map group {get('group', 0)} (indoors or a dungeon)"
    lines = [
        f"Game profile: {s.profile}. Step {s.step} of the episode.",
        f"Location: {place}, room 0x{get('room', 0):02X}, entered {s.room_visits} time(s) this episode; "
        f"{s.rooms_visited} room(s) visited so far.",
        f"Player at x={get('x', 0)}, y={get('y', 0)} in a {s.room_width}x{s.room_height} px room "
        f"(y grows downwards), facing {facing}.",
        f"Health {get('health', 0)}/{get('max_health', 0)} quarter hearts; rupees {get('rupees', 0)}; "
        f"small keys {get('keys', 0)}; sword level {get('sword_level', 0)}.",
        f"Text box showing: {'yes' if get('text_active') else 'no'}. Menu open: {'yes' if get('menu_open') else 'no'}.",
    ]
    rooms = []
    for name, neighbour in zip(DIRECTIONS, s.neighbours, strict=True):
        if neighbour is None:
            rooms.append(f"{name}: edge of the map")
        else:
            seen = f"visited {neighbour.visits}x" if neighbour.visits else "not visited yet"
            rooms.append(f"{name}: room 0x{neighbour.room:02X} ({seen})")
    lines.append("Neighbouring rooms: " + "; ".join(rooms) + ".")
    if s.enemies:
        spots = ", ".join(f"({x}, {y})" for x, y in s.enemies)
        lines.append(f"Enemies at {spots}.")
    else:
        lines.append("No enemies in the room.")
    if s.objective is not None:
        way = f"; walk to ({s.waypoint[0]}, {s.waypoint[1]}) in this room next" if s.waypoint is not None else ""
        lines.append(f"Next objective of the game's walkthrough: {s.objective.milestone.replace('_', ' ')} in room "
                     f"0x{s.objective.room:02X}{way}.")
    lines.append(f"Steps without moving: {s.still_steps}. "
                 f"Last actions (newest first): {', '.join(ACTION_NAMES[a] for a in s.recent_actions) or 'none'}.")
    return "\n".join(lines)
