"""The rules planner on scripted states of the real test world, and the state summary it shares with LLMs.

Routes follow the test world's README: start in overworld room $11 at (80, 72); doorways in the middle of
each edge; the old man stands at cell (4, 2) of the house, reached through the house door in room $10.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

from tests.conftest import EnvFactory
from zelda_rlaif.game.actions import Action
from zelda_rlaif.game.env import ZeldaEnv
from zelda_rlaif.game.guidance.planner import Plan, RulesPlanner
from zelda_rlaif.game.guidance.snapshot import Neighbour, Snapshot, describe, take_snapshot
from zelda_rlaif.game.profiles import get_profile

planner = RulesPlanner()


class Player:
    """Drives the env by decoded position, like the game-layer tests."""

    def __init__(self, env: ZeldaEnv) -> None:
        self.env = env
        self.state: dict[str, Any] = env._info({})["state"]

    def press(self, action: Action) -> dict[str, Any]:
        _, _, _, _, info = self.env.step(action)
        self.state = info["state"]
        return self.state

    def hold(self, action: Action, until: Callable[[dict[str, Any]], bool], limit: int = 200) -> None:
        for _ in range(limit):
            if until(self.press(action)):
                return
        raise AssertionError(f"{action.name} did not get there in {limit} steps; at {self.state}")

    def walk_out(self, action: Action) -> None:
        start = (self.state["group"], self.state["room"])
        self.hold(action, lambda s: (s["group"], s["room"]) != start)

    def walk_to(self, *, x: int | None = None, y: int | None = None) -> None:
        if x is not None and abs(self.state["x"] - x) >= 4:
            self.hold(Action.RIGHT if x > self.state["x"] else Action.LEFT, lambda s: abs(s["x"] - x) < 4)
        if y is not None and abs(self.state["y"] - y) >= 4:
            self.hold(Action.DOWN if y > self.state["y"] else Action.UP, lambda s: abs(s["y"] - y) < 4)

    def snapshot(self, *, walkthrough: bool = False) -> Snapshot:
        return take_snapshot(self.env, self.state, self.env.still_steps, walkthrough=walkthrough)

    def plan(self) -> Plan:
        return planner.suggest(self.snapshot())


@pytest.fixture
def player(make_env: EnvFactory) -> Player:
    # Guidance on but never drawing: the planner is called directly on the env's own snapshots.
    return Player(make_env(text_probability=0.0))


def test_at_the_start_it_heads_for_the_nearest_unvisited_doorway(player: Player) -> None:
    plan = player.plan()
    # (80, 72) in a 160x128 room: the bottom doorway is nearest (56 px) and room $21 is new.
    assert plan.action == Action.DOWN
    assert "room 0x21 (not visited yet)" in plan.reason


def test_it_lines_up_with_a_doorway_before_walking_through(player: Player) -> None:
    player.walk_out(Action.UP)  # room $01 at (80, 119): no room above, $11 below is known
    assert player.state["room"] == 0x01
    plan = player.plan()
    assert plan.action == Action.UP and "line up with the right doorway to room 0x02" in plan.reason
    player.walk_to(y=64)
    plan = player.plan()
    assert plan.action == Action.RIGHT and "through the doorway to room 0x02" in plan.reason


def test_following_the_walkthrough_it_plays_the_quest_to_the_treasure_room(player: Player) -> None:
    profile = get_profile("testworld")
    first = planner.suggest(player.snapshot(walkthrough=True))
    assert "on the way to take key in room 0x01" in first.reason  # not the nearest unvisited doorway (down)
    reached: list[str] = []
    for _ in range(600):  # the way is ~380 steps
        player.press(planner.suggest(player.snapshot(walkthrough=True)).action)
        reached += [m.name for m in profile.milestones if m.reached(player.state) and m.name not in reached]
        if "take_sword" in reached and player.state["room"] == 0x03:
            # With the sword taken, the walkthrough turns to the stairs in $20: back south out of the sword room.
            plan = planner.suggest(player.snapshot(walkthrough=True))
            assert plan.action == Action.DOWN and "solve switch" in plan.reason
        if "reach_treasure" in reached:
            break
    # The switch is walked onto from the side (``Objective.from_side``): straight up from below, pillars block it.
    assert reached == ["take_key", "open_gate", "take_sword", "solve_switch", "reach_treasure"]


def test_the_env_follows_the_walkthrough_only_when_told(make_env: EnvFactory) -> None:
    for follow, expected in ((True, "on the way to take key"), (False, "room 0x21 (not visited yet)")):
        env = make_env(text_probability=1.0, follow_walkthrough=follow)
        env.step(Action.NOP)  # asks; the rules planner's answer is taken in on the next step
        env.step(Action.NOP)
        assert env.guidance is not None and env.guidance.live is not None
        assert expected in env.guidance.live.reason


def test_it_closes_an_open_menu(player: Player) -> None:
    player.press(Action.START)
    player.press(Action.NOP)
    assert player.state["menu_open"]
    assert player.plan().action == Action.START


def test_it_talks_to_the_old_man_when_next_to_him_and_then_closes_the_text(player: Player) -> None:
    player.walk_out(Action.LEFT)
    player.walk_to(x=120)
    player.walk_to(y=100)
    player.walk_to(x=64)
    player.walk_out(Action.UP)
    assert (player.state["group"], player.state["room"]) == (1, 0)
    player.walk_to(x=72)
    player.hold(Action.UP, lambda s: s["y"] <= 56)
    for _ in range(5):  # against him: blocked
        player.press(Action.UP)
    plan = player.plan()
    assert plan.action == Action.A and "talk" in plan.reason and "old man" in plan.reason

    turned = dataclasses.replace(player.snapshot(), state={**player.state, "direction": 3})
    assert planner.suggest(turned).action == Action.UP  # face him first

    player.press(Action.A)
    player.press(Action.NOP)
    assert player.state["text_active"]
    assert player.plan().action == Action.A


def test_a_blocked_direction_is_abandoned_for_the_next_doorway(player: Player) -> None:
    start = player.snapshot()
    stuck = dataclasses.replace(start, still_steps=10, recent_actions=(Action.DOWN,) * 4)
    plan = planner.suggest(stuck)
    assert plan.action != Action.DOWN
    assert plan.action == Action.UP  # the next nearest unvisited doorway (72 px)


def test_with_every_neighbour_visited_it_picks_the_least_visited(player: Player) -> None:
    start = player.snapshot()
    visits = (3, 1, 2, 5)
    rooms = [n.room for n in start.neighbours if n is not None]
    neighbours = tuple(Neighbour(room, v) for room, v in zip(rooms, visits, strict=True))
    plan = planner.suggest(dataclasses.replace(start, neighbours=neighbours))
    assert plan.action == Action.RIGHT  # $12 is visited least; y 72 is within reach of its doorway (y 48-79)
    assert "room 0x12 (visited least)" in plan.reason
    far_from_the_doorway = dataclasses.replace(start, neighbours=neighbours, state={**start.state, "y": 100})
    assert planner.suggest(far_from_the_doorway).action == Action.UP  # line up with the doorway first


def test_it_swings_the_sword_at_an_enemy_in_front(player: Player) -> None:
    start = player.snapshot()
    armed = dataclasses.replace(start, state={**start.state, "sword_level": 1, "direction": 1},
                                enemies=((start.state["x"] + 14, start.state["y"] + 2),))
    assert planner.suggest(armed).action == Action.B
    unarmed = dataclasses.replace(armed, state={**armed.state, "sword_level": 0})
    assert planner.suggest(unarmed).action != Action.B


def test_the_summary_states_the_facts_a_model_needs(player: Player) -> None:
    player.walk_out(Action.UP)
    text = describe(player.snapshot())
    assert "room 0x01, entered 1 time(s) this episode; 2 room(s) visited so far" in text
    assert f"x={player.state['x']}, y={player.state['y']}" in text and "facing up" in text
    assert "up: edge of the map" in text and "down: room 0x11 (visited 1x)" in text
    assert "right: room 0x02 (not visited yet)" in text
    assert "Text box showing: no. Menu open: no." in text
    assert "Last actions (newest first): up, up, up, up." in text
    assert "walkthrough" not in text  # unless asked for: guidance without follow_walkthrough
    # With the key taken, the walkthrough's next objective is the gate in $12, by way of the doorway down to $11.
    player.hold(Action.UP, lambda s: s["keys"] == 1)
    text = describe(player.snapshot(walkthrough=True))
    assert "Next objective of the game's walkthrough: open gate in room 0x12; walk to (" in text
