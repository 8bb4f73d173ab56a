"""``ZELDA_TRAINER_OVERLAP_SAMPLING``: PPO that samples the next batch while it learns, on real Ray env runners."""

from __future__ import annotations

import asyncio
from itertools import pairwise
from typing import Any

import pytest

from tests.trainer.conftest import RunEvents
from zelda_rlaif.settings import NatsSettings, StoreSettings
from zelda_rlaif.storage import keys, open_store
from zelda_trainer import checkpoints, metrics
from zelda_trainer.algorithm import build_config, set_learner_threads
from zelda_trainer.overlap import AHEAD_TAG, OverlappingPPO
from zelda_trainer.ppo_learner import PROXIMAL_KEY, PROXIMAL_WEIGHT_CAP_KEY
from zelda_trainer.settings import PPOSettings, TrainerSettings
from zelda_trainer.training import Trainer


def overlapping(**fields: object) -> TrainerSettings:
    return TrainerSettings.model_validate({
        "run_id": "overlap-test", "overlap_sampling": True, "num_env_runners": 2, "envs_per_runner": 1,
        "episode_steps": 200, "segment_steps": 100, "export_fraction": 0.0, "live_frames": False,
        "tensorboard_dir": None, "ppo": PPOSettings(train_batch_size=300, minibatch_size=100, num_epochs=2),
        **fields})


@pytest.mark.slow
def test_each_iteration_learns_a_full_batch_while_the_next_one_is_sampled(ray_local: None) -> None:
    algo = build_config(overlapping(), "testworld", 0).build_algo()
    try:
        assert isinstance(algo, OverlappingPPO)
        group = algo.env_runner_group
        assert group is not None
        steps = [metrics.lifetime_env_steps(algo.train()) for _ in range(3)]
        assert steps[0] >= 300 and all(later - earlier >= 300 for earlier, later in pairwise(steps))
        # Both runners are playing the next batch, with the weights of the update before the one just made...
        ahead: list[tuple[int, tuple[list[Any], Any]]] = group.fetch_ready_async_reqs(tags=AHEAD_TAG,
                                                                                        timeout_seconds=None)
        # (between them a whole batch: the runners share its steps, the faster playing more).
        assert len(ahead) == 2 and sum(len(e) for _, (episodes, _) in ahead for e in episodes) >= 300
        # ...which the next iteration would have learned on; that one is gone, so it samples at once (topping up).
        algo.sample_ahead = False
        assert metrics.lifetime_env_steps(algo.train()) >= steps[-1] + 300
        assert group.fetch_ready_async_reqs(tags=AHEAD_TAG, timeout_seconds=None) == []  # nothing left playing
    finally:
        algo.stop()


@pytest.mark.slow
async def test_a_run_with_overlap_keeps_every_epoch_exact(
    ray_local: None, run_events: RunEvents, nats_settings: NatsSettings, s3_store_settings: StoreSettings,
    run_id: str
) -> None:
    store = open_store(s3_store_settings, create_bucket=True)
    segments, epochs = run_events.segments, run_events.epochs
    # 600 steps per epoch in batches of 300: the first iteration of each epoch samples ahead, the last does not.
    settings = overlapping(run_id=run_id, epochs=2, steps_per_epoch=600, export_fraction=1.0, frame_every=10,
                           nats=nats_settings, store=s3_store_settings)
    summary = await Trainer(settings, show_progress=False).run()
    await asyncio.sleep(0.2)

    assert [e.epoch for e in epochs] == [0, 1]
    for epoch in epochs:  # every segment announced once, in the epoch it was played in
        announced = [s for s in segments if s.epoch == epoch.epoch]
        assert epoch.segments_exported == len(announced) > 0
        assert len({s.segment_id for s in announced}) == len(announced)
        stored = {key.rsplit("/", 2)[-2] for key in store.list(keys.epoch_segments(run_id, epoch.epoch))
                  if keys.is_segment_manifest(key)}
        assert stored == {s.segment_id for s in announced}
    # Each epoch learned on what it played: two batches, not one sampled past its end.
    assert [report.epoch_env_steps for report in summary.epochs] == [600, 600]
    latest = checkpoints.latest(store, run_id)
    assert latest is not None and latest.epoch == 1 and latest.env_steps == summary.env_steps == 1200


def test_an_overlapping_cpu_learner_leaves_the_runners_their_cores() -> None:
    import torch

    threads = torch.get_num_threads()
    try:
        set_learner_threads(overlapping(num_gpus_per_learner=0))
        assert torch.get_num_threads() == 1
        set_learner_threads(overlapping(num_gpus_per_learner=0, learner_threads=2))
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(threads)


def test_the_learner_clips_around_the_updates_start_only_for_batches_played_one_update_behind() -> None:
    """Decoupled PPO with sampling while learning (unless turned off), PPO's own clipping when PPO samples first."""
    def clips_around_update_start(settings: TrainerSettings) -> bool:
        return bool(build_config(settings, "testworld", 0).learner_config_dict[PROXIMAL_KEY])

    assert clips_around_update_start(overlapping())
    assert not clips_around_update_start(overlapping(ppo=PPOSettings(decoupled=False)))
    assert not clips_around_update_start(overlapping(overlap_sampling=False))


def test_the_importance_weight_cap_reaches_the_learner_from_its_setting() -> None:
    def cap(settings: TrainerSettings) -> float | None:
        return build_config(settings, "testworld", 0).learner_config_dict[PROXIMAL_WEIGHT_CAP_KEY]

    assert cap(overlapping()) is None
    assert cap(overlapping(ppo=PPOSettings(proximal_weight_cap=1.0))) == 1.0
