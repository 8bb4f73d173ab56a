"""A game's walkthrough: where each quest milestone is reached, in the order a player takes them, and how rooms connect.

What an LLM judge that knows the game brings to a segment and a state log alone does not: the way to the next
milestone before it is reached. Judges use it to tell a segment that walked towards the next objective from one
that wandered (``zelda_judge.summary``), which is the difference between exploring a maze and being told
where the exit is. It is plain data beside the profile, like the milestones, and read only by the judges.

Distances are counted in rooms: the doorways to cross from the player's room to the objective's (breadth-first
over ``passages``, locked ones included: a walkthrough names the way, not whether it is open yet), and the
fraction of the room still to walk: to the objective's spot once in its room, else to the exit on the way (where
``exits`` says where a passage is taken). Without that last part a state's distance would change only at
doorways, and a potential built on it could not tell the player walking to the right door from one walking away
from it.

A state's ``stage`` is how far along the walkthrough it stands, from 0 (no objective done, as far from the first
as the map allows) to 1 (every objective done): the objectives done in order, plus how close the player is to
the next. It only grows along the walkthrough's way, so it can serve as a potential for shaping.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property

Location = tuple[int, int]  # (group, room)


@dataclass(frozen=True)
class Objective:
    """Where the walkthrough reaches a milestone: its room, and the spot in it (playfield pixels), if any."""

    milestone: str
    group: int
    room: int
    spot: tuple[int, int] | None = None  # None: entering the room is the milestone
    # How the spot is walked onto: from above or below (lined up with across first, the way stairs and items
    # behind a gap are entered), or, True, from the side (lined up with vertically first).
    from_side: bool = False

    @property
    def location(self) -> Location:
        return (self.group, self.room)


@dataclass(frozen=True)
class Exit:
    """Where in room ``here`` the player stands to take the passage to room ``there`` (playfield pixels)."""

    here: Location
    there: Location
    spot: tuple[int, int]


@dataclass(frozen=True)
class Walkthrough:
    # In the order the walkthrough takes them; milestones that no state shows as done once the moment is past
    # (a text box that closed) are left out: the next objective must be readable from one state.
    objectives: tuple[Objective, ...]
    passages: tuple[tuple[Location, Location], ...]  # doorways, stairs and gates, usable both ways
    room_px: tuple[int, int]  # a room's width and height (the profile's WorldGeometry)
    exits: tuple[Exit, ...] = ()  # where passages are taken; a passage without one counts as a whole room

    def __post_init__(self) -> None:
        linked = {*self.passages, *((b, a) for a, b in self.passages)}
        stray = [f"{e.here} -> {e.there}" for e in self.exits if (e.here, e.there) not in linked]
        if stray:
            raise ValueError(f"walkthrough exits name no passage: {', '.join(stray)}; add the passage or drop the exit")

    @cached_property
    def _exit_spots(self) -> dict[tuple[Location, Location], tuple[int, int]]:
        return {(e.here, e.there): e.spot for e in self.exits}

    @cached_property
    def _neighbours(self) -> dict[Location, list[Location]]:
        graph: dict[Location, list[Location]] = {}
        for a, b in self.passages:
            graph.setdefault(a, []).append(b)
            graph.setdefault(b, []).append(a)
        return graph

    @cached_property
    def _hops(self) -> dict[Location, dict[Location, int]]:
        """Rooms to cross from every room to every objective's room (breadth-first from the objective)."""
        graph = self._neighbours
        table: dict[Location, dict[Location, int]] = {}
        for objective in self.objectives:
            target = objective.location
            hops = {target: 0}
            queue = deque([target])
            while queue:
                here = queue.popleft()
                for there in graph.get(here, ()):
                    if there not in hops:
                        hops[there] = hops[here] + 1
                        queue.append(there)
            table[target] = hops
        return table

    def next_objective(self, state: Mapping[str, int],
                       reached: Mapping[str, Callable[[Mapping[str, int]], bool]]) -> Objective | None:
        """The first objective whose milestone ``state`` does not hold (``reached``: milestone name -> test)."""
        for objective in self.objectives:
            if not reached[objective.milestone](state):
                return objective
        return None

    @cached_property
    def _span(self) -> float:
        """Two more than the most doorways between any room and any objective: ``distance`` stays below it."""
        return 2.0 + max((max(hops.values()) for hops in self._hops.values()), default=0)

    def stage(self, state: Mapping[str, int],
              reached: Mapping[str, Callable[[Mapping[str, int]], bool]]) -> float | None:
        """How far along the walkthrough ``state`` stands, in [0, 1]: (objectives done before the next one +
        closeness to it) / objectives, with closeness 1 - distance / span. A milestone held out of the
        walkthrough's order counts for nothing until the ones before it are done. None when no passage leads
        from the player's room to the next objective."""
        objective = self.next_objective(state, reached)
        if objective is None:
            return 1.0
        distance = self.distance(state, objective)
        if distance is None:
            return None
        done = self.objectives.index(objective)
        return (done + 1.0 - distance / self._span) / len(self.objectives)

    def distance(self, state: Mapping[str, int], objective: Objective) -> float | None:
        """Rooms between the player and the objective: the doorways to cross, plus the share of this room still
        to walk, to the objective's spot in its room (0 on the spot) or to the nearest exit on a shortest way (a
        whole room where no exit is known). It falls as the player walks the way, at doorways too. None when no
        passage leads there."""
        way = self._way(state, objective)
        if way is None:
            return None
        hops, exits = way
        if hops == 0:
            return 0.0 if objective.spot is None else self._walk(state, objective.spot)
        return hops + min((self._walk(state, spot) for spot in exits), default=1.0)

    def waypoint(self, state: Mapping[str, int], objective: Objective) -> tuple[int, int] | None:
        """Where in the player's room to walk next on the way to ``objective`` (playfield pixels): its spot once in
        its room, else the nearest exit on a shortest way. None when no passage leads there, when the objective's
        room is reached and it has no spot, or when the way's exit from this room is not known."""
        way = self._way(state, objective)
        if way is None:
            return None
        hops, exits = way
        if hops == 0:
            return objective.spot
        return min(exits, key=lambda spot: self._walk(state, spot), default=None)

    def _way(self, state: Mapping[str, int], objective: Objective) -> tuple[int, list[tuple[int, int]]] | None:
        """The doorways between the player's room and the objective's, and the known exits from this room that
        lead one room closer (none once in its room). None when no passage leads there."""
        here = (int(state["group"]), int(state["room"]))
        hops_to = self._hops[objective.location]
        hops = hops_to.get(here)
        if hops is None:
            return None
        exits = [spot for there in self._neighbours[here]
                 if hops_to.get(there) == hops - 1 and (spot := self._exit_spots.get((here, there)))] if hops else []
        return hops, exits

    def _walk(self, state: Mapping[str, int], spot: tuple[int, int]) -> float:
        """The share of a room between the player and ``spot``, 0-1 (Manhattan, over the room's width + height)."""
        dx, dy = abs(int(state["x"]) - spot[0]), abs(int(state["y"]) - spot[1])
        return min(1.0, (dx + dy) / sum(self.room_px))
