"""Scripted play through the real environment proves each reward component and each decoded field.

Routes follow the test world's map (shared/zelda_rlaif/game/testworld/rom/README.md): the start room is
$11 with the player at (80, 72); doorways sit in the middle of each edge. One env step is 4 frames, so the
player moves 4 px per step; walking is closed-loop on the decoded position.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from zelda_rlaif.game.actions import Action
from zelda_rlaif.game.config import EnvConfig
from zelda_rlaif.game.env import ZeldaEnv
from zelda_rlaif.game.rewards.config import RewardConfig
from zelda_rlaif.game.rewards.rnd import RndCuriosity

Step = tuple[float, dict[str, float], dict[str, Any]]


def act(env: ZeldaEnv, action: Action) -> Step:
    _, reward, _, _, info = env.step(action)
    return reward, info["components"], info["state"]


def state(env: ZeldaEnv) -> dict[str, Any]:
    return env._info({})["state"]


def hold(env: ZeldaEnv, action: Action, until: Callable[[dict[str, Any]], bool], limit: int = 200) -> list[Step]:
    steps: list[Step] = []
    for _ in range(limit):
        steps.append(act(env, action))
        if until(steps[-1][2]):
            return steps
    raise AssertionError(f"{action.name} did not reach the goal in {limit} steps; at {steps[-1][2]}")


def walk_out(env: ZeldaEnv, action: Action) -> list[Step]:
    start = (state(env)["group"], state(env)["room"])
    return hold(env, action, lambda s: (s["group"], s["room"]) != start)


def walk_to(env: ZeldaEnv, *, x: int | None = None, y: int | None = None) -> None:
    if x is not None and abs(state(env)["x"] - x) >= 4:
        action = Action.RIGHT if x > state(env)["x"] else Action.LEFT
        hold(env, action, lambda s: abs(s["x"] - x) < 4)
    if y is not None and abs(state(env)["y"] - y) >= 4:
        action = Action.DOWN if y > state(env)["y"] else Action.UP
        hold(env, action, lambda s: abs(s["y"] - y) < 4)


def chase_enemy(env: ZeldaEnv, until: Callable[[dict[str, Any]], bool], limit: int = 1500) -> list[Step]:
    steps: list[Step] = []
    for _ in range(limit):
        enemies = env.emulator.decoder.enemies(env.emulator.memory)
        s = state(env)
        ex, ey = enemies[0]
        if abs(ex - s["x"]) >= abs(ey - s["y"]):
            action = Action.RIGHT if ex > s["x"] else Action.LEFT
        else:
            action = Action.DOWN if ey > s["y"] else Action.UP
        steps.append(act(env, action))
        if until(steps[-1][2]):
            return steps
    raise AssertionError("never reached the enemy")


def test_doorway_gives_the_new_room_reward_once(env: ZeldaEnv) -> None:
    steps = walk_out(env, Action.UP)
    assert steps[-1][2]["room"] == 0x01
    assert [c.get("new_room") for _, c, _ in steps].count(1.0) == 1
    assert steps[-1][1]["new_room"] == 1.0
    back = walk_out(env, Action.DOWN)
    assert "new_room" not in back[-1][1]
    assert back[-1][1]["room_revisit"] == pytest.approx(0.1 * 0.5)  # one earlier entry into $11
    again = walk_out(env, Action.UP)
    assert "new_room" not in again[-1][1]
    assert again[-1][1]["room_revisit"] == pytest.approx(0.1 * 0.5)
    assert again[-1][2]["rooms_visited"] == 2


def test_rupee_raises_the_rupee_field_and_rewards_it(env: ZeldaEnv) -> None:
    walk_to(env, x=96)
    steps = hold(env, Action.UP, lambda s: s["rupees"] > 0)
    assert steps[-1][2]["rupees"] == 5
    assert steps[-1][1]["rupees"] == pytest.approx(5 * 0.02)


def test_npc_text_box_opens_and_closes(env: ZeldaEnv) -> None:
    walk_out(env, Action.LEFT)
    walk_to(env, x=120)
    walk_to(env, y=100)
    walk_to(env, x=64)
    steps = walk_out(env, Action.UP)
    assert (steps[-1][2]["group"], steps[-1][2]["room"]) == (1, 0)
    walk_to(env, x=72)
    hold(env, Action.UP, lambda s: s["y"] <= 56, limit=30)
    for _ in range(3):  # bump into the NPC and face it
        act(env, Action.UP)
    _, components, after = act(env, Action.A)
    assert after["text_active"] == 1
    assert components["dialog"] == 0.05
    _, _, still = act(env, Action.DOWN)
    assert still["text_active"] == 1  # frozen while the text shows
    _, _, closed = act(env, Action.A)
    assert closed["text_active"] == 0


def test_enemy_contact_lowers_health(env: ZeldaEnv) -> None:
    walk_out(env, Action.DOWN)
    assert state(env)["enemies"] == 1
    steps = chase_enemy(env, lambda s: s["health"] < 12)
    assert steps[-1][2]["health"] == 10
    assert steps[-1][1]["health"] == pytest.approx(2 * -0.05)


def test_death_increments_the_counter_and_respawns(env: ZeldaEnv) -> None:
    walk_out(env, Action.DOWN)
    steps = chase_enemy(env, lambda s: s["deaths"] > 0, limit=4000)
    _, components, after = steps[-1]
    assert after["deaths"] == 1
    assert components["death"] == -1.0
    assert "health" not in components  # the respawn's refill is not a reward
    assert (after["room"], after["health"]) == (0x11, 12)


def test_start_toggles_the_menu_and_is_penalised(env: ZeldaEnv) -> None:
    _, components, opened = act(env, Action.START)
    assert opened["menu_open"] == 1 and components["start_press"] == -0.05
    _, _, frozen = act(env, Action.RIGHT)
    assert frozen["menu_open"] == 1 and frozen["x"] == 80
    _, _, closed = act(env, Action.START)
    assert closed["menu_open"] == 0


def test_key_is_rewarded(env: ZeldaEnv) -> None:
    walk_out(env, Action.UP)
    steps = hold(env, Action.UP, lambda s: s["keys"] > 0)
    assert steps[-1][1]["keys"] == 0.5
    assert steps[-1][2]["treasure_flags"] & 0x01


def test_standing_still_is_penalised_after_a_while(env: ZeldaEnv) -> None:
    penalties = [act(env, Action.NOP)[1].get("stuck", 0.0) for _ in range(12)]
    assert penalties[:9] == [0.0] * 9 and penalties[10] == -0.01


def test_new_tiles_are_rewarded_once(env: ZeldaEnv) -> None:
    first = [act(env, Action.RIGHT)[1].get("new_tile", 0.0) for _ in range(8)]
    assert sum(1 for v in first if v) == 2  # 32 px to the right crosses two 16 px tiles
    back = [act(env, Action.LEFT)[1].get("new_tile", 0.0) for _ in range(8)]
    assert sum(back) == 0.0


class ObservationX:
    """A stand-in potential: Phi(s) = the player's x feature (obs[0])."""

    def phi(self, observation: np.ndarray) -> float:
        return float(observation[0])


def test_potential_based_shaping_uses_gamma(env: ZeldaEnv) -> None:
    assert "shaping" not in act(env, Action.RIGHT)[1]  # off until a model is loaded
    env.set_potential(ObservationX())
    before = env._obs[0]
    _, components, _ = act(env, Action.RIGHT)
    after = env._obs[0]
    scale = RewardConfig().shaping
    assert components["shaping"] == pytest.approx(scale * (0.99 * after - before), abs=1e-6)
    assert components["shaping"] > 0


def test_preference_pays_phi_every_step_and_leaves_the_env_return() -> None:
    env = ZeldaEnv(EnvConfig(rewards=RewardConfig(rnd=0.0, preference=0.01, preference_count_power=0.0)))
    try:
        env.reset(seed=0)
        assert "preference" not in act(env, Action.RIGHT)[1]  # off until a model is loaded
        env.set_potential(ObservationX())
        paid = []
        for _ in range(5):
            _, components, _ = act(env, Action.RIGHT)
            assert components["preference"] == pytest.approx(0.01 * env._obs[0], abs=1e-7)
            paid.append(components["preference"] + components["shaping"])
        record = env.episode_record()
        # What the reward model added (shaping and preference) is its return, not the env's: the env return stays
        # comparable.
        assert record.reward_model_return == pytest.approx(sum(paid), abs=1e-6)
        assert record.env_return == pytest.approx(env.episode_return - sum(paid), abs=1e-6)
    finally:
        env.close()


def test_preference_counted_per_tile_fades_where_the_player_stands() -> None:
    env = ZeldaEnv(EnvConfig(rewards=RewardConfig(rnd=0.0, preference=0.01, preference_count_power=1.0)))
    try:
        env.reset(seed=0)
        env.set_potential(ObservationX())
        standing = [act(env, Action.NOP)[1]["preference"] / (0.01 * env._obs[0]) for _ in range(4)]
        assert standing == pytest.approx([1.0, 1 / 2, 1 / 3, 1 / 4])
        tile, entered = state(env)["x"] // 16, 0
        for _ in range(12):  # walking right: the first step on each new tile pays Phi in full
            _, components, cur = act(env, Action.RIGHT)
            if cur["x"] // 16 != tile:
                tile, entered = cur["x"] // 16, entered + 1
                assert components["preference"] == pytest.approx(0.01 * env._obs[0], abs=1e-7)
        assert entered >= 2
    finally:
        env.close()


def test_rnd_bonus_is_high_for_new_states_and_fades_with_familiarity() -> None:
    rnd = RndCuriosity(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(400):  # ordinary states set the running scale
        rnd.reward(rng.random(128).astype(np.float32))
    novel = (rng.random(128) * 4).astype(np.float32)
    first = rnd.reward(novel)
    assert first > 0.0
    for _ in range(3000):
        last = rnd.reward(novel)
    assert last < first


def test_rnd_is_part_of_the_default_rewards() -> None:
    env = ZeldaEnv(EnvConfig(rewards=RewardConfig()))
    env.reset(seed=0)
    assert "rnd" in {name for _ in range(20) for name in act(env, Action.RIGHT)[1]}
    env.close()


def test_quest_novelty_lasts_across_episodes_and_returns_with_each_milestone() -> None:
    env = ZeldaEnv(EnvConfig(max_steps=5000, start_jitter=0, rewards=RewardConfig(rnd=0.0, quest_novelty=1.0)))
    try:
        env.reset(seed=0)
        assert walk_out(env, Action.UP)[-1][1]["quest_novelty"] == 1.0  # room $01, no milestone yet
        assert "quest_novelty" not in walk_out(env, Action.DOWN)[-1][1]  # the start room was entered at reset
        assert "quest_novelty" not in walk_out(env, Action.UP)[-1][1]  # $01 again in this episode
        took_key = hold(env, Action.UP, lambda s: s["keys"] > 0)[-1][1]
        assert took_key["quest_novelty"] == 1.0  # holding the key, $01 is a new cell
        assert walk_out(env, Action.DOWN)[-1][1]["quest_novelty"] == 1.0  # and so is the start room

        env.reset()  # counts last across episodes: a second episode's entry pays 1/sqrt(2)
        assert walk_out(env, Action.UP)[-1][1]["quest_novelty"] == pytest.approx(2 ** -0.5)
        env.reset(seed=0)  # a seeded reset forgets them
        assert walk_out(env, Action.UP)[-1][1]["quest_novelty"] == 1.0
    finally:
        env.close()


def test_quest_novelty_is_off_by_default(env: ZeldaEnv) -> None:
    assert all("quest_novelty" not in components for _, components, _ in walk_out(env, Action.UP))


class ConstantPhi:
    def __init__(self, value: float) -> None:
        self.value = value

    def phi(self, observation: np.ndarray) -> float:
        return self.value


def test_preference_threshold_pays_only_phi_at_or_above_it() -> None:
    config = RewardConfig(rnd=0.0, preference=0.1, preference_count_power=1.0, preference_threshold=0.0)
    env = ZeldaEnv(EnvConfig(rewards=config))
    try:
        env.reset(seed=0)
        env.set_potential(ConstantPhi(-0.5))
        below = [act(env, Action.NOP)[1] for _ in range(2)]
        assert all("preference" not in components for components in below)  # no price on standing or walking
        env.set_potential(ConstantPhi(0.5))
        # The count ran while nothing was paid: this is the third step on the tile.
        assert act(env, Action.NOP)[1]["preference"] == pytest.approx(0.1 * 0.5 / 3)
    finally:
        env.close()
