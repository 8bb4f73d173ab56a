"""The test world's walkthrough: the next objective from one state, and the rooms between the player and it."""

from __future__ import annotations

import pytest

from zelda_rlaif.game.profiles import get_profile
from zelda_rlaif.game.profiles.base import GameProfile
from zelda_rlaif.game.profiles.walkthrough import Exit, Objective, Walkthrough

PROFILE = get_profile("testworld")


def _walkthrough() -> Walkthrough:
    assert PROFILE.walkthrough is not None, "the test world has a walkthrough"
    return PROFILE.walkthrough


WALKTHROUGH = _walkthrough()
REACHED = {m.name: m.reached for m in PROFILE.milestones}
START = {"group": 0, "room": 0x11, "x": 80, "y": 72, "text_active": 0, "treasure_flags": 0, "door_flags": 0,
         "puzzle_flags": 0}


def state(**changes: int) -> dict[str, int]:
    return {**START, **changes}


def next_milestone(s: dict[str, int]) -> str | None:
    objective = WALKTHROUGH.next_objective(s, REACHED)
    return objective.milestone if objective else None


def test_objectives_follow_the_quest_from_one_state() -> None:
    assert next_milestone(state()) == "take_key"
    assert next_milestone(state(treasure_flags=1)) == "open_gate"
    assert next_milestone(state(treasure_flags=1, door_flags=1)) == "take_sword"
    assert next_milestone(state(treasure_flags=3, door_flags=1)) == "solve_switch"
    assert next_milestone(state(treasure_flags=3, door_flags=1, puzzle_flags=1)) == "reach_treasure"
    assert next_milestone(state(group=1, room=2, treasure_flags=3, door_flags=1, puzzle_flags=1)) is None


def objective(milestone: str) -> Objective:
    return next(o for o in WALKTHROUGH.objectives if o.milestone == milestone)


def test_distances_follow_the_doorways_of_the_map() -> None:
    sword, switch = objective("take_sword"), objective("solve_switch")

    def distance(target: Objective, **changes: int) -> float:
        value = WALKTHROUGH.distance(state(**changes), target)
        assert value is not None
        return value

    # The east column is reached through the gate only: $11 -> $12 -> $13 -> $03, not over the pond at $02.
    assert 3.0 <= distance(sword) < 4.0 and 3.0 <= distance(sword, room=0x02) < 4.0
    # Down the stairs in $20 to the puzzle room.
    assert 3.0 <= distance(switch) < 4.0 and 1.0 <= distance(switch, room=0x20) < 2.0
    # Within a room: the share still to walk to the exit on the way, so walking to the right door counts.
    assert distance(sword, x=144, y=56) == 3.0 < distance(sword) < distance(sword, x=0, y=56)
    assert distance(switch, room=0x20, x=72, y=48) == 1.0
    # In the objective's room: the share of the room still to walk, 0 on the spot.
    key = objective("take_key")
    assert distance(key, room=0x01, x=72, y=56) == 0.0
    assert 0.0 < distance(key, room=0x01, x=72, y=120) < 1.0 <= distance(key, x=72, y=0) < distance(key)
    # A room the walkthrough's passages do not reach.
    assert WALKTHROUGH.distance(state(group=3, room=0), key) is None


def test_the_waypoint_is_the_exit_on_the_way_then_the_objectives_spot() -> None:
    sword = objective("take_sword")
    # From the fork in $13 the sword room $03 lies north; from $12 the way is the gate east into $13.
    assert WALKTHROUGH.waypoint(state(room=0x13, x=40, y=100), sword) == (72, 0)
    assert WALKTHROUGH.waypoint(state(room=0x12, x=40, y=100), sword) == (144, 56)
    assert WALKTHROUGH.waypoint(state(room=0x03, x=72, y=100), sword) == sword.spot
    # Two exits lead one room closer to the key from $22 ($12 north and $21 west): the nearer one is taken.
    key = objective("take_key")
    assert WALKTHROUGH.waypoint(state(room=0x22, x=140, y=20), key) == (72, 0)
    assert WALKTHROUGH.waypoint(state(room=0x22, x=4, y=100), key) == (0, 56)
    assert WALKTHROUGH.waypoint(state(group=1, room=2), objective("reach_treasure")) is None  # no spot: arrived


def test_the_stage_only_grows_along_the_walkthrough() -> None:
    def stage(**changes: int) -> float:
        value = WALKTHROUGH.stage(state(**changes), REACHED)
        assert value is not None
        return value

    way = [
        stage(),  # the start room, one room below the key's
        stage(x=72, y=0),  # at its north doorway
        stage(room=0x01, x=72, y=112),  # in the key's room
        stage(room=0x01, x=72, y=56),  # on the key's spot
        stage(room=0x01, x=72, y=56, treasure_flags=1),  # key taken
        stage(x=72, y=8, treasure_flags=1),  # back in the start room
        stage(x=144, y=56, treasure_flags=1),  # at its east doorway
        stage(room=0x12, x=8, y=56, treasure_flags=1),  # the gate's room
        stage(room=0x12, x=152, y=64, treasure_flags=1, door_flags=1),  # gate open
        stage(room=0x13, x=8, y=56, treasure_flags=1, door_flags=1),
    ]
    assert way == sorted(way) and len(set(way)) == len(way)
    assert 0.0 < way[0] < 0.2 < way[4] < 0.4 < way[8] < 0.6
    assert stage(group=1, room=2, treasure_flags=3, door_flags=1, puzzle_flags=1) == 1.0
    # A milestone out of order (the switch before the key) counts for nothing until the ones before it are done.
    assert stage(puzzle_flags=1) == stage()
    assert WALKTHROUGH.stage(state(group=3, room=0), REACHED) is None


def test_a_walkthrough_must_name_the_profile_milestones() -> None:
    stray = Walkthrough(objectives=(Objective("find_the_moon", 0, 0),), passages=(), room_px=(160, 128))
    with pytest.raises(ValueError, match="find_the_moon"):
        GameProfile(name="x", rom=PROFILE.rom, ram=PROFILE.ram, geometry=PROFILE.geometry,
                    milestones=PROFILE.milestones, walkthrough=stray)


def test_an_exit_must_take_a_passage() -> None:
    with pytest.raises(ValueError, match=r"exits name no passage: \(0, 0\) -> \(0, 3\)"):
        Walkthrough(objectives=(), passages=(((0, 0), (0, 1)),), room_px=(160, 128),
                    exits=(Exit((0, 1), (0, 0), (0, 56)), Exit((0, 0), (0, 3), (144, 56))))
