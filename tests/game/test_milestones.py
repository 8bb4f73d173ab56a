"""Quest milestones: the test world's six fire on the routes its README describes, through the real env; the
Oracle of Seasons predicates on hand-made RAM (no Oracle ROM is bundled); and ``EpisodeStats`` over records.

Routes: shared/zelda_rlaif/game/testworld/rom/README.md ("Routes"), walked closed-loop with the helpers of
``test_rewards.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.game.test_rewards import act, hold, state, walk_out, walk_to
from zelda_rlaif.episodes import EpisodeRecord, EpisodeStats
from zelda_rlaif.game.actions import Action
from zelda_rlaif.game.config import EnvConfig
from zelda_rlaif.game.env import ZeldaEnv
from zelda_rlaif.game.profiles import get_profile
from zelda_rlaif.game.ram import RamDecoder
from zelda_rlaif.game.rewards.config import RewardConfig

TESTWORLD_MILESTONES = ["talk_old_man", "take_key", "open_gate", "take_sword", "solve_switch", "reach_treasure"]


def test_the_test_world_declares_its_quest_in_order() -> None:
    assert [m.name for m in get_profile("testworld").milestones] == TESTWORLD_MILESTONES


def test_key_gate_and_sword_fire_in_quest_order_and_reach_the_episode_record(env: ZeldaEnv) -> None:
    walk_out(env, Action.UP)  # $01
    assert env.milestones_reached == set()
    hold(env, Action.UP, lambda s: s["keys"] > 0)
    assert env.milestones_reached == {"take_key"}
    walk_out(env, Action.DOWN)  # $11
    walk_to(env, y=72)
    walk_out(env, Action.RIGHT)  # $12
    hold(env, Action.RIGHT, lambda s: s["room"] == 0x13, limit=600)  # the gate opens on contact
    assert env.milestones_reached == {"take_key", "open_gate"}
    walk_to(env, x=80)
    walk_out(env, Action.UP)  # $03
    hold(env, Action.UP, lambda s: s["sword_level"] > 0)
    record = env.episode_record()
    assert record.milestones == ["take_key", "open_gate", "take_sword"]
    assert record.steps == env.step_count and record.rooms_visited == 5  # $11 $01 $12 $13 $03
    assert record.tiles_visited > 0
    assert record.env_return == pytest.approx(env.episode_return) and record.reward_model_return == 0.0


def test_talking_to_the_old_man(env: ZeldaEnv) -> None:
    walk_out(env, Action.LEFT)
    walk_to(env, x=120)
    walk_to(env, y=100)
    walk_to(env, x=64)
    walk_out(env, Action.UP)  # into the house
    walk_to(env, x=72)
    hold(env, Action.UP, lambda s: s["y"] <= 56, limit=30)
    for _ in range(3):  # bump into him and face him
        act(env, Action.UP)
    assert "talk_old_man" not in env.milestones_reached, "standing in the house is not talking"
    act(env, Action.A)
    assert env.milestones_reached == {"talk_old_man"}


def test_switch_then_treasure_room(env: ZeldaEnv) -> None:
    walk_out(env, Action.LEFT)  # $10
    walk_to(env, x=120)
    walk_to(env, y=100)
    walk_to(env, x=80)
    walk_out(env, Action.DOWN)  # $20
    walk_to(env, y=24)
    walk_to(env, x=120)  # east of the rocks around the stairs
    walk_to(env, y=88)
    walk_to(env, x=80)
    walk_out(env, Action.UP)  # down the stairs: the puzzle room
    assert (state(env)["group"], state(env)["room"]) == (1, 1)
    walk_to(env, y=72)
    hold(env, Action.RIGHT, lambda s: s["puzzle_flags"] != 0)
    assert env.milestones_reached == {"solve_switch"}
    walk_to(env, x=80)
    walk_out(env, Action.UP)  # through the opened bars
    assert env.episode_record().milestones == ["solve_switch", "reach_treasure"]


def test_a_new_episode_starts_with_no_milestone(env: ZeldaEnv) -> None:
    walk_out(env, Action.UP)
    hold(env, Action.UP, lambda s: s["keys"] > 0)
    assert env.milestones_reached == {"take_key"}
    env.reset(seed=1)
    assert env.milestones_reached == set() and env.episode_record().milestones == []


def test_milestones_the_start_state_already_holds_are_not_the_episodes(env: ZeldaEnv, tmp_path: Path) -> None:
    walk_out(env, Action.UP)
    hold(env, Action.UP, lambda s: s["keys"] > 0)
    saved = tmp_path / "with-key.state"
    saved.write_bytes(env.emulator.save_state())
    later = ZeldaEnv(EnvConfig(state=saved, max_steps=5000, start_jitter=0, rewards=RewardConfig(rnd=0.0)))
    try:
        later.reset(seed=0)
        assert state(later)["treasure_flags"] & 0x01
        walk_out(later, Action.DOWN)  # $11, the key still held
        walk_to(later, y=72)
        walk_out(later, Action.RIGHT)
        hold(later, Action.RIGHT, lambda s: s["room"] == 0x13, limit=600)
        assert later.episode_record().milestones == ["open_gate"]
    finally:
        later.close()


# Oracle of Seasons: predicates and decoding on hand-made RAM.

OOS = get_profile("oracle-of-seasons")


def oracle_state(**values: int) -> dict[str, int]:
    """A decoded Oracle state at the start of the game: no sword, no key, on the overworld, no essence."""
    return {**dict.fromkeys(RamDecoder(OOS).fields, 0), "dungeon": 0xFF, **values}


def reached(state: dict[str, int]) -> list[str]:
    return [m.name for m in OOS.milestones if m.reached(state)]


def test_oracle_milestones_follow_the_quest() -> None:
    assert [m.name for m in OOS.milestones] == ["take_sword", "take_gnarled_key", "enter_dungeon", "take_essence"]
    assert reached(oracle_state()) == []
    assert reached(oracle_state(dungeon=0)) == [], "Hero's Cave is not an essence dungeon"
    assert reached(oracle_state(sword_level=1, dungeon=0)) == ["take_sword"]
    assert reached(oracle_state(sword_level=1, gnarled_key=1)) == ["take_sword", "take_gnarled_key"]
    assert reached(oracle_state(sword_level=1, gnarled_key=1, dungeon=1, group=4)) == [
        "take_sword", "take_gnarled_key", "enter_dungeon"]
    assert reached(oracle_state(sword_level=1, gnarled_key=1, essences=0b1)) == [
        "take_sword", "take_gnarled_key", "take_essence"]


def test_oracle_decodes_the_gnarled_key_bit_and_the_dungeon_for_its_milestones() -> None:
    """wObtainedTreasureFlags ($C692) bit n is treasure n; the Gnarled Key is treasure $42: $C69A bit 2."""
    memory = dict.fromkeys(range(0xC000, 0xE000), 0)
    memory[0xCC55] = 0xFF  # wDungeonIndex: the overworld
    decoder = RamDecoder(OOS)
    assert {"gnarled_key", "dungeon"} <= set(decoder.fields)
    memory[0xC69A] = 0xFF & ~0x04  # every other treasure of that byte
    raw = decoder.raw(memory)
    assert raw["gnarled_key"] == 0 and reached(raw) == []
    memory[0xC69A] = 0x04
    memory[0xC692] = 1 << 5  # TREASURE_SWORD's bit, and the sword level that comes with it
    memory[0xC6AC] = 1
    memory[0xCC55] = 1  # the Gnarled Root Dungeon
    raw = decoder.raw(memory)
    assert raw["gnarled_key"] == 1 and raw["treasure_flags"] == 2
    assert reached(raw) == ["take_sword", "take_gnarled_key", "enter_dungeon"]


# EpisodeStats: the figures every output reports.

def record(steps: int, env_return: float, reward_model: float, rooms: int, tiles: int,
           milestones: list[str]) -> EpisodeRecord:
    return EpisodeRecord(steps=steps, env_return=env_return, reward_model_return=reward_model, rooms_visited=rooms,
                         tiles_visited=tiles, milestones=milestones)


def test_episode_stats_over_records() -> None:
    names = ["take_key", "open_gate", "take_sword"]
    stats = EpisodeStats.of([record(600, 1.0, 0.5, 2, 10, []),
                             record(600, 2.0, -0.5, 4, 30, ["take_key"]),
                             record(300, 6.0, 3.0, 6, 50, ["take_key", "open_gate"])], names)
    assert stats.count == 3
    assert stats.return_env_mean == pytest.approx(3.0) and stats.return_env_median == 2.0
    assert stats.return_reward_model_mean == pytest.approx(1.0) and stats.return_reward_model_median == 0.5
    assert (stats.length_mean, stats.rooms_mean, stats.tiles_mean) == (500.0, 4.0, 30.0)
    assert stats.milestones == pytest.approx({"take_key": 2 / 3, "open_gate": 1 / 3, "take_sword": 0.0})
    assert list(stats.milestones) == names, "quest order"
    assert stats.milestone_score == pytest.approx((2 / 3 + 1 / 3 + 0) / 3)
    flat = stats.flat()
    assert flat["episode/count"] == 3.0 and flat["milestone/take_key"] == pytest.approx(2 / 3)
    assert flat["milestone/score"] == pytest.approx(1 / 3)
    assert "3 episodes" in stats.describe() and "take_key 67%" in stats.describe()


def test_episode_stats_without_episodes_say_so() -> None:
    stats = EpisodeStats.of([], ["take_key"])
    assert stats.count == 0 and stats.return_env_mean is None and stats.milestones == {}
    assert stats.flat() == {"episode/count": 0.0}
    assert stats.describe().startswith("no episode finished")
