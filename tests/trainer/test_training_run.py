"""A real 2-epoch training run on the test world: 2 Ray env runners, real NATS, a real S3 server.

Episodes of 200 steps in epochs of 300 steps per emulator: every epoch has finished episodes to report."""

from __future__ import annotations

import asyncio

import pytest

from tests.support.reward_models import store_accepted_model
from tests.trainer.conftest import RunEvents
from zelda_rlaif.episodes import EpochReport
from zelda_rlaif.events import LiveMetrics, SegmentExported, SegmentScored
from zelda_rlaif.segments import StepRecord
from zelda_rlaif.settings import NatsSettings, StoreSettings
from zelda_rlaif.storage import keys, open_store
from zelda_trainer import checkpoints
from zelda_trainer.settings import PPOSettings, SelfImitationSettings, TrainerSettings
from zelda_trainer.training import Trainer

pytestmark = pytest.mark.slow


def small_run(run_id: str, nats: NatsSettings, store: StoreSettings, epochs: int) -> TrainerSettings:
    return TrainerSettings(
        run_id=run_id, epochs=epochs, steps_per_epoch=600, episode_steps=200, segment_steps=100,
        export_fraction=1.0, frame_every=10, num_env_runners=2, envs_per_runner=1, live_frames=False,
        ppo=PPOSettings(train_batch_size=300, minibatch_size=100, num_epochs=2), nats=nats, store=store,
    )


async def test_two_epochs_export_checkpoint_and_resume(
    ray_local: None, run_events: RunEvents, nats_settings: NatsSettings, s3_store_settings: StoreSettings,
    run_id: str
) -> None:
    store = open_store(s3_store_settings, create_bucket=True)
    segments, epochs = run_events.segments, run_events.epochs

    def manifest_stored(event: SegmentExported) -> None:
        # Published only after the objects are stored: the manifest must already be readable.
        assert store.exists(keys.segment_manifest(run_id, event.epoch, event.segment_id))

    run_events.on_segment = manifest_stored

    summary = await Trainer(small_run(run_id, nats_settings, s3_store_settings, 2), show_progress=False).run()
    await asyncio.sleep(0.2)
    assert [e.epoch for e in epochs] == [0, 1]
    for epoch in epochs:
        announced = [s for s in segments if s.epoch == epoch.epoch]
        assert epoch.segments_exported == len(announced) > 0
        assert len({s.segment_id for s in announced}) == len(announced)
    assert summary.env_steps >= 1200

    # The objects are well-formed: the manifest (the event published), a 100-step state log with 128-D
    # observations, frames.
    sample = segments[0]
    manifest = SegmentExported.model_validate(store.get_json(keys.segment_manifest(run_id, 0, sample.segment_id)))
    assert manifest == sample
    records = [StepRecord.model_validate(r) for r in store.get_jsonl(keys.segment_states(run_id, 0, sample.segment_id))]
    assert manifest.num_steps == len(records) == 100
    assert [r.step for r in records] == list(range(manifest.step_start, manifest.step_end))
    assert abs(sum(r.reward for r in records) - manifest.total_reward) < 1e-6
    frames = list(store.list(keys.segment_frames(run_id, 0, sample.segment_id)))
    assert len(frames) == len(manifest.frame_steps) == 10
    assert store.get_bytes(frames[0]).startswith(b"\x89PNG")

    # Every epoch's report: stored, returned, its figures from every episode that finished in it.
    reports = [EpochReport.model_validate(store.get_json(keys.epoch_report(run_id, epoch))) for epoch in (0, 1)]
    assert summary.epochs == reports
    for report in reports:
        stats = report.episodes
        assert stats.count >= 2, "each of the 2 emulators ends an episode of 200 steps in its 300"
        assert None not in (stats.return_env_mean, stats.return_env_median, stats.return_reward_model_mean,
                            stats.return_reward_model_median, stats.length_mean, stats.rooms_mean, stats.tiles_mean,
                            stats.milestone_score)
        assert stats.length_mean == 200 and stats.rooms_mean is not None and stats.rooms_mean >= 1
        assert list(stats.milestones) == ["talk_old_man", "take_key", "open_gate", "take_sword", "solve_switch",
                                          "reach_treasure"]
        assert report.epoch_env_steps >= 600 and report.env_steps_per_s > 0 and report.wall_time_s > 0
    assert reports[1].env_steps == reports[0].env_steps + reports[1].epoch_env_steps == summary.env_steps
    # progress.json: the last live metrics, whose episodes are the last epoch's so far, i.e. all of them.
    progress = LiveMetrics.model_validate(store.get_json(keys.progress(run_id)))
    assert (progress.epoch, progress.env_steps, progress.episodes) == (1, summary.env_steps, reports[1].episodes)

    # A checkpoint per epoch with its episodes' figures, the best kept apart naming the figure it won on.
    latest = checkpoints.latest(store, run_id)
    assert latest is not None and latest.epoch == 1 and latest.env_steps == summary.env_steps
    assert latest.stats == reports[1].episodes
    best = checkpoints.CheckpointMetadata.model_validate(
        store.get_json(keys.checkpoint_metadata(keys.best_checkpoint(run_id))))
    assert best.stats == reports[best.epoch].episodes
    assert best.best_by in checkpoints.RANKED_BY and best.best_value == best.stats.flat()[best.best_by]

    # Resume: the step count continues and the policy is the trained one, not a fresh random one. With
    # self-imitation on, the resumed run starts from the best segments of the epochs judged before it stopped.
    # Shaping is on from its first sample, with the newest accepted reward model stored for the run (no
    # reward-model service runs here: only the store can have brought it).
    store_accepted_model(store, run_id, 1)
    judged = [s for s in segments if s.epoch == 0][:2]
    store.put_bytes(keys.epoch_scores(run_id, 0), "".join(
        SegmentScored(run_id=run_id, epoch=0, segment_id=s.segment_id, combined=0.5 + i / 10, dimensions={},
                      weights={}).model_dump_json() + "\n" for i, s in enumerate(judged)).encode(),
        "application/x-ndjson")
    imitating = small_run(run_id, nats_settings, s3_store_settings, 1).model_copy(
        update={"self_imitation": SelfImitationSettings(weight=0.5, top_k=1)})
    resumed_trainer = Trainer(imitating, resume=True, show_progress=False)
    resumed = await resumed_trainer.run()
    assert resumed_trainer.best_segments is not None
    assert resumed_trainer.best_segments.data().segment_ids == (judged[-1].segment_id,)
    assert resumed.start_epoch == 2
    resumed_segments = [s for s in segments if s.epoch == 2]
    assert resumed_segments and all(s.reward_model_epoch == 1 for s in resumed_segments)
    assert resumed.epochs[0].reward_model_epoch == 1
    assert LiveMetrics.model_validate(store.get_json(keys.progress(run_id))).reward_model_epoch == 1
    assert not {s.segment_id for s in resumed_segments} & {s.segment_id for s in segments if s.epoch < 2}
    assert resumed.epochs[0].env_steps >= summary.env_steps + 600
    saved = resumed_trainer.restored_fingerprint
    assert saved is not None and saved == pytest.approx(latest.policy_fingerprint)
    assert resumed_trainer.runner_fingerprints_after_restore == pytest.approx([saved, saved], rel=1e-5)

    # A trainer stopped after handing an epoch to the judges (its report and epoch.exported) but before its
    # checkpoint: the resumed run goes on after that epoch, from the last checkpoint, and never trains a closed epoch
    # again. With no checkpoint at all, from fresh weights.
    handed_over = resumed.epochs[0].model_copy(update={"epoch": 3})
    store.put_json(keys.epoch_report(run_id, 3), handed_over)
    checkpoint, start_epoch = checkpoints.resume_point(store, run_id)
    assert checkpoint is not None and (checkpoint.epoch, start_epoch) == (2, 4)
    store.put_json(keys.epoch_report(f"{run_id}-unsaved", 0), handed_over)
    assert checkpoints.resume_point(store, f"{run_id}-unsaved") == (None, 1)
