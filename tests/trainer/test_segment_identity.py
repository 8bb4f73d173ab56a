"""Segment ids are unique within a run for its whole life: an env that Ray rebuilds (from the algorithm's config:
the run's first epoch, episodes counted from 1 again) makes no id that exists, and every segment object is
written once. The driver's ``EnvSync`` moves a rebuilt env to the current epoch and reward model."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from zelda_rlaif.errors import ObjectExists
from zelda_rlaif.events import SegmentExported
from zelda_rlaif.game.config import EnvConfig
from zelda_rlaif.game.rewards.config import RewardConfig
from zelda_rlaif.reward_model.model_file import RewardModelFile
from zelda_rlaif.reward_model.network import RewardNet
from zelda_rlaif.reward_model.normalization import Normalization
from zelda_rlaif.settings import StoreSettings
from zelda_rlaif.storage import ObjectStore, keys, open_store
from zelda_trainer.env_config import EnvSync, ExportPlan, StoreLocation, TrainingEnvConfig
from zelda_trainer.export import SegmentExporter
from zelda_trainer.training_env import TrainingEnv

RUN = "identity"
SEGMENT_STEPS = 10
EPISODE_STEPS = 25  # several episodes per epoch: the episode counter moves on
STEPS_PER_EPOCH = 30
ID_PATTERN = re.compile(r"^e(\d{3})-w1v0-([a-z]{6})-(\d{5})-s(\d{2})$")


def plan(store_url: str) -> ExportPlan:
    return ExportPlan(run_id=RUN, profile="testworld", segment_steps=SEGMENT_STEPS, frame_every=5, export_fraction=1.0,
                      seed=0, store=StoreLocation(url=store_url, s3_endpoint=None, s3_region="us-east-1"))


def built_env(store_url: str) -> TrainingEnv:
    """What a (re)built env runner makes: always from the algorithm's config, i.e. epoch 0."""
    env = TrainingEnv(TrainingEnvConfig(env=EnvConfig(max_steps=EPISODE_STEPS, rewards=RewardConfig(rnd=0.0)), epoch=0,
                                        live=None, export=plan(store_url)))
    env.attach(worker_index=1, vector_index=0)
    return env


def play(env: TrainingEnv, steps: int, seed: int) -> list[SegmentExported]:
    actions = np.random.default_rng(seed).integers(0, 8, steps)
    env.reset(seed=seed)
    for action in actions:
        *_, terminated, truncated, _ = env.step(int(action))
        if terminated or truncated:
            env.reset()
    return env.take_completed().segments


def model_bytes(epoch: int) -> bytes:
    states = np.random.default_rng(epoch).standard_normal((64, 128)).astype(np.float32)
    return RewardModelFile.from_net(RewardNet(), Normalization.fit(states), run_id=RUN, epoch=epoch).to_bytes()


def stored_manifests(store: ObjectStore) -> list[str]:
    return [key for key in store.list(keys.run_segments(RUN)) if keys.is_segment_manifest(key)]


def test_a_rebuilt_env_makes_no_id_that_exists_and_overwrites_nothing(tmp_path: Path) -> None:
    store_url = f"file://{tmp_path / 'store'}"
    store = open_store(StoreSettings(url=store_url))
    first = built_env(store_url)
    before: list[SegmentExported] = []
    for epoch in range(4):
        first.apply_sync(EnvSync(epoch))
        before += play(first, STEPS_PER_EPOCH, seed=epoch)
    first.close()
    assert {s.epoch for s in before} == {0, 1, 2, 3} and len(before) >= 4 * 2

    # Ray restarts the runner after epoch 3: the same env name, the config's epoch 0, episodes from 1 again.
    # Unsynced (what the driver fixes, below) it exports into epoch 0, as the same env did first: no clash.
    unsynced = built_env(store_url)
    after = play(unsynced, STEPS_PER_EPOCH, seed=0)  # the very actions the first incarnation played in epoch 0
    unsynced.close()
    # Synced by the driver before it samples: the current epoch and reward model.
    rebuilt = built_env(store_url)
    rebuilt.apply_sync(EnvSync(3, model_bytes(2), 2))
    synced = play(rebuilt, STEPS_PER_EPOCH, seed=3)
    rebuilt.close()
    assert synced and all(s.epoch == 3 and s.segment_id.startswith("e003-") and s.reward_model_epoch == 2
                          for s in synced)
    assert all(s.reward_model_epoch is None for s in before + after)

    every = before + after + synced
    ids = [s.segment_id for s in every]
    assert len(set(ids)) == len(ids), "no id is made twice"
    matches = [ID_PATTERN.match(segment_id) for segment_id in ids]
    assert all(matches), ids
    assert len({match.group(2) for match in matches if match}) == 3, "one incarnation token per built env"
    # Nothing overwritten: one manifest per segment, each still the event that announced it.
    assert len(stored_manifests(store)) == len(every)
    for segment in every:
        assert store.get_bytes(keys.segment_manifest(RUN, segment.epoch, segment.segment_id)) == \
            segment.model_dump_json().encode()


def test_segment_objects_are_written_once(tmp_path: Path) -> None:
    store_url = f"file://{tmp_path / 'store'}"
    store = open_store(StoreSettings(url=store_url))
    env = built_env(store_url)
    assert env.exporter is not None
    segment = play(env, SEGMENT_STEPS, seed=0)[0]
    env.close()
    # An env whose exporter (wrongly) drew the same token replays the same episode: its first write is refused.
    twin = built_env(store_url)
    twin.exporter = SegmentExporter(plan(store_url), store, "w1v0", incarnation=env.exporter.incarnation)
    with pytest.raises(ObjectExists, match=segment.segment_id):
        play(twin, SEGMENT_STEPS, seed=1)
    twin.close()
    assert store.get_bytes(keys.segment_manifest(RUN, 0, segment.segment_id)) == segment.model_dump_json().encode()
