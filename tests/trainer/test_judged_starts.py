"""Judged starts: a segment stores the emulator's state after its last step, the trainer takes the end states of the
best judged segments, and an env handed them begins episodes there; those episodes stay out of the epoch's figures.
Real PyBoy on the test world, a real file store."""

from __future__ import annotations

from pathlib import Path

import pytest

from zelda_rlaif.events import SegmentScored
from zelda_rlaif.game.actions import Action
from zelda_rlaif.game.config import EnvConfig
from zelda_rlaif.game.profiles.testworld import TESTWORLD
from zelda_rlaif.game.rewards.config import RewardConfig
from zelda_rlaif.segments import GameState, parse_state_log
from zelda_rlaif.settings import StoreSettings
from zelda_rlaif.storage import ObjectStore, keys, open_store
from zelda_trainer.env_config import EnvSync, ExportPlan, StartStates, StoreLocation, TrainingEnvConfig
from zelda_trainer.self_imitation import BestSegments
from zelda_trainer.settings import JudgedStartBalance, JudgedStartPoint
from zelda_trainer.training_env import TrainingEnv

RUN = "judged-starts"
SEGMENT_STEPS = 40  # holding UP from the start takes the key at step 29
EPISODE_STEPS = 40


@pytest.fixture
def store(tmp_path: Path) -> ObjectStore:
    return open_store(StoreSettings(url=f"file://{tmp_path}/store"))


def training_env(store: ObjectStore, judged_start_fraction: float, vector_index: int = 0,
                 episode_steps: int = EPISODE_STEPS, explore_steps: int = 0, lead_steps: int = 0) -> TrainingEnv:
    plan = ExportPlan(run_id=RUN, profile="testworld", segment_steps=SEGMENT_STEPS, frame_every=10,
                      export_fraction=1.0, seed=0,
                      store=StoreLocation(url=store.url, s3_endpoint=None, s3_region="us-east-1"))
    config = TrainingEnvConfig(env=EnvConfig(max_steps=episode_steps, start_jitter=0, rewards=RewardConfig(rnd=0.0)),
                               epoch=0, export=plan, live=None, judged_start_fraction=judged_start_fraction,
                               judged_start_explore_steps=explore_steps, judged_start_lead_steps=lead_steps)
    env = TrainingEnv(config)
    env.attach(worker_index=1, vector_index=vector_index)
    return env


def ram(env: TrainingEnv) -> dict[str, int]:
    emulator = env.zelda.emulator
    return emulator.decoder.raw(emulator.memory)


def play_episode(env: TrainingEnv, action: Action) -> None:
    truncated = False
    while not truncated:
        *_, truncated, _ = env.step(int(action))


def key_room_end_state(store: ObjectStore) -> tuple[bytes, GameState]:
    """The stored end state of a segment that walked up and took the key, and its last decoded state."""
    explorer = training_env(store, judged_start_fraction=0.5)
    explorer.reset(seed=0)
    play_episode(explorer, Action.UP)
    [segment] = explorer.take_completed().segments
    end_state = store.get_bytes(keys.segment_end_state(RUN, 0, segment.segment_id))
    return end_state, parse_state_log(store.get_bytes(keys.segment_states(RUN, 0, segment.segment_id)))[-1].state


def put_scores(store: ObjectStore, combined: dict[str, float]) -> None:
    rows = [SegmentScored(run_id=RUN, epoch=0, segment_id=segment, combined=score, dimensions={}, weights={})
            for segment, score in combined.items()]
    store.put_bytes(keys.epoch_scores(RUN, 0), "".join(r.model_dump_json() + "\n" for r in rows).encode(),
                    "application/x-ndjson")


def test_an_episode_begins_where_the_best_judged_segment_ended(store: ObjectStore) -> None:
    # A segment that walks up and takes the key, played with judged starts on, keeps its end state.
    explorer = training_env(store, judged_start_fraction=0.5)
    explorer.reset(seed=0)
    play_episode(explorer, Action.UP)
    [segment] = explorer.take_completed().segments
    end = parse_state_log(store.get_bytes(keys.segment_states(RUN, 0, segment.segment_id)))[-1].state
    assert end.keys == 1 and end.room != 0

    put_scores(store, {segment.segment_id: 0.9})
    best = BestSegments(store, RUN, top_k=4, gamma=0.99)
    assert best.add_epochs([0])
    states = best.start_states(JudgedStartPoint.END)
    assert states.states == (store.get_bytes(keys.segment_end_state(RUN, 0, segment.segment_id)),)

    # Every episode of an env with fraction 1 begins there: in the key room, with the key, not at the game's start.
    env = training_env(store, judged_start_fraction=1.0, vector_index=1)
    env.apply_sync(EnvSync(epoch=0, start_states=states))
    env.reset(seed=1)
    begun = ram(env)
    assert env.judged_start
    assert (begun["group"], begun["room"], begun["x"], begun["y"], begun["keys"]) == \
        (end.group, end.room, end.x, end.y, end.keys)
    play_episode(env, Action.DOWN)
    completed = env.take_completed()
    # Trained on and exported like any other episode, but not one of the epoch's figures (play from the start).
    assert completed.episodes == [] and len(completed.segments) == 1

    # The explorer, handed no states, still starts at the game's start and reports its episodes.
    explorer.reset()
    assert not explorer.judged_start and ram(explorer)["keys"] == 0
    play_episode(explorer, Action.UP)
    assert [episode.milestones for episode in explorer.take_completed().episodes] == [["take_key"]]


def test_a_start_state_is_where_a_segment_on_the_way_from_the_game_start_began(store: ObjectStore) -> None:
    """Judged starts at ``start`` begin one segment before a judged success, on a way found from the game's start."""
    env = training_env(store, judged_start_fraction=0.5, episode_steps=2 * SEGMENT_STEPS)
    env.reset(seed=0)
    play_episode(env, Action.UP)
    first, second = (segment.segment_id for segment in env.take_completed().segments)
    # The second segment began where the first ended; the first began at the game's start, which needs no state.
    assert store.get_bytes(keys.segment_start_state(RUN, 0, second)) == \
        store.get_bytes(keys.segment_end_state(RUN, 0, first))
    assert not store.exists(keys.segment_start_state(RUN, 0, first))

    # An episode begun at a judged start keeps no start states: they stay on ways from the game's start.
    first_end = store.get_bytes(keys.segment_end_state(RUN, 0, first))
    env.apply_sync(EnvSync(epoch=0, start_states=StartStates((first_end,))))
    while not env.judged_start:
        env.reset()
    play_episode(env, Action.DOWN)
    judged = [segment.segment_id for segment in env.take_completed().segments]
    assert len(judged) == 2 and all(store.exists(keys.segment_end_state(RUN, 0, s)) for s in judged)
    assert not any(store.exists(keys.segment_start_state(RUN, 0, s)) for s in judged)

    # The best segments with a start state win, however high the others score.
    put_scores(store, {judged[1]: 0.9, first: 0.8, second: 0.1, judged[0]: 0.05})
    best = BestSegments(store, RUN, top_k=1, gamma=0.99)
    best.add_epochs([0])
    second_start = store.get_bytes(keys.segment_start_state(RUN, 0, second))
    assert best.start_states(JudgedStartPoint.START).states == (second_start,)
    best_end = store.get_bytes(keys.segment_end_state(RUN, 0, judged[1]))
    assert best.start_states(JudgedStartPoint.END).states == (best_end,)


def test_envs_without_judged_starts_store_no_end_state(store: ObjectStore) -> None:
    """Saving a state costs ~13 ms, so segments keep one only when judged starts are on."""
    env = training_env(store, judged_start_fraction=0.0)
    env.apply_sync(EnvSync(epoch=0, start_states=StartStates((b"never used",))))
    env.reset(seed=0)
    assert not env.judged_start
    play_episode(env, Action.UP)
    [segment] = env.take_completed().segments
    assert not store.exists(keys.segment_end_state(RUN, 0, segment.segment_id))
    assert not store.exists(keys.segment_start_state(RUN, 0, segment.segment_id))


def test_segments_without_a_readable_end_state_are_left_out(store: ObjectStore) -> None:
    env = training_env(store, judged_start_fraction=1.0)
    env.reset(seed=0)
    for _ in range(3):
        play_episode(env, Action.UP)
        env.reset()
    good, cut, missing = (segment.segment_id for segment in env.take_completed().segments)
    store.put_bytes(keys.segment_end_state(RUN, 0, cut), store.get_bytes(keys.segment_end_state(RUN, 0, cut))[:100])
    store.delete(keys.segment_end_state(RUN, 0, missing))  # as if stored while judged starts were off
    put_scores(store, {cut: 0.9, missing: 0.8, good: 0.7})
    best = BestSegments(store, RUN, top_k=3, gamma=0.99)
    best.add_epochs([0])
    assert best.start_states(JudgedStartPoint.END).states == (store.get_bytes(keys.segment_end_state(RUN, 0, good)),)


def test_balanced_by_milestone_a_lone_success_is_picked_as_often_as_a_crowd(store: ObjectStore) -> None:
    """``JudgedStartBalance.MILESTONES``: each milestone the kept segments reached gets the same share of judged starts,
    however many of them reached it, so a branch of the quest found once is practised as much as the branch found
    often."""
    env = training_env(store, judged_start_fraction=1.0)
    env.reset(seed=0)
    play_episode(env, Action.UP)  # takes the key
    for _ in range(3):
        env.reset()
        play_episode(env, Action.DOWN)  # reaches nothing
    key, *nothing = (segment.segment_id for segment in env.take_completed().segments)
    put_scores(store, {key: 0.1, **{segment: 0.9 for segment in nothing}})
    best = BestSegments(store, RUN, top_k=3, gamma=0.99, milestones=TESTWORLD.milestones, per_milestone=1)
    best.add_epochs([0])

    alike = best.start_states(JudgedStartPoint.END)
    assert len(alike) == 4 and alike.weights == ()
    balanced = best.start_states(JudgedStartPoint.END, JudgedStartBalance.MILESTONES)
    weights = dict(zip(balanced.states, balanced.weights, strict=True))
    assert weights[store.get_bytes(keys.segment_end_state(RUN, 0, key))] == pytest.approx(0.5)
    assert [weights[store.get_bytes(keys.segment_end_state(RUN, 0, s))] for s in nothing] == pytest.approx([1 / 6] * 3)
    picked = [balanced.pick(env.zelda.np_random) for _ in range(400)]
    assert 150 < picked.count(store.get_bytes(keys.segment_end_state(RUN, 0, key))) < 250


def test_a_judged_start_with_an_explore_step_begins_where_a_random_walk_within_the_room_ended(
        store: ObjectStore) -> None:
    """Go-Explore's explore step: the walk stays in the restored room and is not part of the episode, which counts
    its steps and rooms afresh."""
    end_state, end = key_room_end_state(store)

    def starts(explore_steps: int) -> list[tuple[int, int, int]]:
        env = training_env(store, judged_start_fraction=1.0, vector_index=1, explore_steps=explore_steps)
        env.apply_sync(EnvSync(epoch=0, start_states=StartStates((end_state,))))
        begun = []
        for episode in range(12):
            env.reset(seed=episode)
            assert env.judged_start and env.zelda.step_count == 0
            assert env.zelda.coverage.rooms_visited() == 1  # the walk's rooms are not the episode's
            state = ram(env)
            assert state["keys"] == end.keys  # the walk presses no button and keeps what the state held
            begun.append((state["room"], state["x"], state["y"]))
        return begun

    without_walk = starts(0)
    assert set(without_walk) == {(end.room, end.x, end.y)}
    walked = starts(60)
    assert len(set(walked)) >= 6  # spread around the restored state
    assert {room for room, _, _ in walked} == {end.room}  # the policy takes the doorways itself
    assert walked == starts(60)  # drawn from the env's seeded generator: a seeded run walks the same way


def test_a_lead_plays_the_walkthroughs_way_out_of_the_restored_room_as_the_episodes_first_steps(
        store: ObjectStore) -> None:
    """From the key room with the key, the walkthrough's next objective is the gate in $12, by way of $11: the planner
    walks the player out into $11 and the policy plays on from there. The lead's steps are the episode's, recorded in
    its exported segment (what self-imitation learns from), so the policy's first step is not step 0."""
    end_state, end = key_room_end_state(store)
    assert (end.group, end.room, end.keys) == (0, 0x01, 1)

    def led_env(lead_steps: int) -> TrainingEnv:
        env = training_env(store, judged_start_fraction=1.0, vector_index=1, episode_steps=2 * SEGMENT_STEPS,
                           lead_steps=lead_steps)
        env.apply_sync(EnvSync(epoch=0, start_states=StartStates((end_state,))))
        env.reset(seed=0)
        assert env.judged_start
        return env

    env = led_env(SEGMENT_STEPS)
    led = env.zelda.step_count
    begun = ram(env)
    assert 0 < led < SEGMENT_STEPS and (begun["group"], begun["room"]) == (0, 0x11)
    assert begun["keys"] == 1  # still holding the key the restored state held
    play_episode(env, Action.NOP)
    completed = env.take_completed()
    assert completed.episodes == []  # a judged start: not one of the epoch's figures
    first = parse_state_log(store.get_bytes(keys.segment_states(RUN, 0, completed.segments[0].segment_id)))
    assert [record.step for record in first[:led]] == list(range(led))
    assert [record.state.room for record in first[:led]][-1] == 0x11
    assert all(record.state.room == 0x01 for record in first[:led - 1])
    assert {record.action for record in first[:led]} <= {int(Action.DOWN), int(Action.LEFT), int(Action.RIGHT)}
    assert {record.action for record in first[led:]} == {int(Action.NOP)}  # then the policy's

    # A lead cut short by its step limit leaves the player in the restored room, the steps taken still the episode's.
    short = led_env(5)
    assert short.zelda.step_count == 5 and ram(short)["room"] == 0x01
