"""Self-imitation: the judges' best segments are kept with what produced them, and the learner imitates them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from zelda_rlaif.events import SegmentScored
from zelda_rlaif.game.profiles import get_profile
from zelda_rlaif.segments import OBSERVATION_SIZE, GameState, StepRecord
from zelda_rlaif.settings import StoreSettings
from zelda_rlaif.storage import ObjectStore, keys, open_store
from zelda_trainer.algorithm import build_config
from zelda_trainer.self_imitation import BestSegments, ImitationData
from zelda_trainer.self_imitation.best_segments import discounted_returns, imitated_steps
from zelda_trainer.settings import PPOSettings, SelfImitationSettings, TrainerSettings

RUN = "sil-test"
STATE = GameState(group=0, room=0x11, x=80, y=64, direction=2, health=12, max_health=12, rupees=0, keys=0,
                  sword_level=0, text_active=False, menu_open=False, deaths=0, enemies=0)


@pytest.fixture
def store(tmp_path: Path) -> ObjectStore:
    return open_store(StoreSettings(url=f"file://{tmp_path}/store"))


def walking(steps: int) -> list[GameState]:
    """A player who moves one pixel east on every step."""
    return [STATE.model_copy(update={"x": STATE.x + i}) for i in range(steps)]


def put_segment(store: ObjectStore, epoch: int, segment_id: str, action: int, rewards: list[float],
                states: list[GameState] | None = None) -> None:
    """A state log whose every record's observation is 100 * action + its step, so tests can tell them apart."""
    states = states or walking(len(rewards))
    records = [StepRecord(step=i, action=action, action_name="A", reward=r, components={"new_room": r},
                          state=states[i], observation=[100.0 * action + i] * OBSERVATION_SIZE)
               for i, r in enumerate(rewards)]
    store.put_bytes(keys.segment_states(RUN, epoch, segment_id),
                    "".join(record.model_dump_json() + "\n" for record in records).encode(), "application/x-ndjson")


def put_scores(store: ObjectStore, epoch: int, combined: dict[str, float]) -> None:
    rows = [SegmentScored(run_id=RUN, epoch=epoch, segment_id=segment, combined=score, dimensions={}, weights={})
            for segment, score in combined.items()]
    store.put_bytes(keys.epoch_scores(RUN, epoch), "".join(r.model_dump_json() + "\n" for r in rows).encode(),
                    "application/x-ndjson")


def test_the_best_judged_segments_of_every_epoch_so_far_are_kept_with_their_steps(store: ObjectStore) -> None:
    put_segment(store, 0, "a", action=1, rewards=[0.0, 1.0, 0.0])
    put_segment(store, 0, "b", action=2, rewards=[0.0, 0.0, 0.0])
    put_segment(store, 1, "c", action=3, rewards=[1.0, 1.0])
    put_scores(store, 0, {"a": 0.9, "b": 0.2, "missing": 0.95})  # "missing" has no state log: the next best counts
    best = BestSegments(store, RUN, top_k=2, gamma=0.5)

    assert best.add_epochs([0, 1])  # epoch 1 is not closed yet: read later
    assert best.epochs_read == {0}
    assert best.data().segment_ids == ("a", "b")

    put_scores(store, 1, {"c": 0.5})
    assert best.add_epochs([0, 1])
    data = best.data()
    assert data.segment_ids == ("a", "c") and data.combined == (0.9, 0.5)
    # Each action on the observation it was chosen on, the record before it; a segment's first action has none.
    assert data.observations.shape == (3, OBSERVATION_SIZE) and data.actions.tolist() == [1, 1, 3]
    assert data.observations[:, 0].tolist() == [100.0, 101.0, 300.0]
    assert data.returns.tolist() == [1.0, 0.0, 1.0]  # returns to each segment's end, discounted by 0.5
    assert not best.add_epochs([1])  # nothing new: the learner keeps what it has


def test_the_best_segments_reaching_each_milestone_are_kept_beside_the_top_k(store: ObjectStore) -> None:
    """A seed whose best-scored segments all take one branch of the quest still imitates the other branch's
    milestones it found, and keeps the key it learned first."""
    treasure_room = STATE.model_copy(update={"group": 1, "room": 2})
    with_key = STATE.model_copy(update={"treasure_flags": 0x01})
    put_segment(store, 0, "best", action=1, rewards=[1.0, 1.0])
    put_segment(store, 0, "treasure", action=2, rewards=[0.0, 0.0], states=[STATE, treasure_room])
    put_segment(store, 0, "key", action=3, rewards=[0.0, 0.0], states=[STATE, with_key])
    put_segment(store, 0, "key-held", action=4, rewards=[0.0, 0.0], states=[with_key, with_key])  # from the start
    put_scores(store, 0, {"best": 0.9, "key-held": 0.5, "treasure": 0.2, "key": 0.1})
    best = BestSegments(store, RUN, top_k=1, gamma=0.5, milestones=get_profile("testworld").milestones,
                        per_milestone=1)

    assert best.add_epochs([0])
    assert best.data().segment_ids == ("best", "treasure", "key")  # best first

    without = BestSegments(store, RUN, top_k=1, gamma=0.5, milestones=get_profile("testworld").milestones)
    without.add_epochs([0])
    assert without.data().segment_ids == ("best",)


def test_only_actions_that_changed_the_game_state_are_imitated() -> None:
    """Pushing against a wall leaves the state as it was: imitating it taught a policy to keep pushing."""
    east, turned = STATE.model_copy(update={"x": STATE.x + 1}), STATE.model_copy(update={"x": STATE.x + 1,
                                                                                          "direction": 1})
    states = [STATE, east, east, turned, turned, turned.model_copy(update={"health": 11})]
    records = [StepRecord(step=i, action=0, action_name="up", reward=0.0, components={}, state=state,
                          observation=[0.0] * OBSERVATION_SIZE) for i, state in enumerate(states)]
    assert imitated_steps(records) == [1, 3, 5]  # walked, turned, was hit; not the first, nor the two in place


def test_returns_are_discounted_to_the_segment_end() -> None:
    np.testing.assert_allclose(discounted_returns(np.array([1, 0, 2], np.float32), 0.9), [1 + 0.81 * 2, 1.8, 2])


@pytest.fixture(scope="module")
def algorithm(ray_local: None) -> Iterator[Any]:
    settings = TrainerSettings(run_id="sil-learner-test", num_env_runners=0, envs_per_runner=2, export_fraction=0.0,
                               live_frames=False, episode_steps=50, rewards={"rnd": 0.0},
                               ppo=PPOSettings(train_batch_size=128, minibatch_size=64, num_epochs=2),
                               self_imitation=SelfImitationSettings(weight=1.0, batch_size=32))
    algo = build_config(settings, "testworld", 0).build_algo()
    yield algo
    algo.stop()


def test_the_learner_imitates_the_kept_actions_where_they_returned_more_than_expected(algorithm: Any) -> None:
    observation = np.full((64, OBSERVATION_SIZE), 0.5, np.float32)
    data = ImitationData(observations=observation, actions=np.full(64, 5, np.int64),
                         returns=np.full(64, 10.0, np.float32), segment_ids=("s",), combined=(1.0,))

    def probability_of_kept_action() -> float:
        module = algorithm.get_module()
        logits, _ = module.policy_and_values(observation[:1])
        return float(torch.softmax(torch.from_numpy(logits[0]), 0)[5])

    before = probability_of_kept_action()
    handed = algorithm.learner_group.foreach_learner(lambda learner: learner.set_imitation_data(data))
    assert [result.get() for result in handed] == [64]
    for _ in range(4):  # 4 minibatches each: 2 epochs of 128 steps in 64s
        result = algorithm.train()
    learner_results = result["learners"]["default_policy"]
    assert "self_imitation_loss" in learner_results
    assert learner_results["self_imitation_positive_fraction"] > 0
    assert probability_of_kept_action() > 2 * before  # 16 gradient steps: from ~1/8 to ~0.3
