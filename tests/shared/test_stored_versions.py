"""Runs stored by an older version stay readable: the reports that embed the episodes' figures upgrade the
shaping return (its name before the preference reward joined the reward model's return) to the reward model
return, and still reject a version they do not know."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from zelda_rlaif.episodes import EpisodeRecord, EpisodeStats, EpochReport
from zelda_rlaif.evaluation import EvalReport
from zelda_rlaif.events import LiveMetrics
from zelda_trainer.checkpoints import CheckpointMetadata

# The episodes' figures as version 1 stored them.
V1_STATS = {
    "count": 2, "return_env_mean": 1.5, "return_env_median": 1.5, "return_shaping_mean": -0.25,
    "return_shaping_median": -0.25, "length_mean": 250.0, "rooms_mean": 4.0, "tiles_mean": 50.0,
    "milestones": {"take_key": 0.5}, "milestone_score": 0.5,
}
V1_RECORDS = [
    {"steps": 200, "env_return": 1.0, "shaping_return": 0.25, "rooms_visited": 3, "tiles_visited": 40,
     "milestones": ["take_key"]},
    {"steps": 300, "env_return": 2.0, "shaping_return": -0.75, "rooms_visited": 5, "tiles_visited": 60,
     "milestones": []},
]
V1_EPOCH_REPORT = json.dumps({
    "schema_version": 1, "run_id": "old-run", "epoch": 3, "env_steps": 8192, "epoch_env_steps": 2048,
    "env_steps_per_s": 512.0, "wall_time_s": 4.0, "reward_model_epoch": 2, "episodes": V1_STATS,
})
V1_EVAL_REPORT = json.dumps({
    "schema_version": 1, "run_id": "old-run", "policy": "checkpoint", "checkpoint": "best", "epoch": 3,
    "env_steps": 8192, "greedy": True, "profile": "testworld", "episode_steps": 300, "reward_model_epoch": 2,
    "seeds": [1_000_000_000, 1_000_000_001], "records": V1_RECORDS, "episodes": V1_STATS, "best_episode": 0,
    "video": None, "wall_time_s": 2.5, "episodes_per_s": 0.8,
})


def assert_upgraded(stats: EpisodeStats) -> None:
    assert (stats.return_reward_model_mean, stats.return_reward_model_median) == (-0.25, -0.25)
    assert stats.flat()["episode/return_reward_model_mean"] == -0.25
    assert (stats.return_env_mean, stats.milestones) == (1.5, {"take_key": 0.5})


def test_a_version_1_epoch_report_reads_as_version_2() -> None:
    report = EpochReport.model_validate_json(V1_EPOCH_REPORT)
    assert report.schema_version == 2 and (report.run_id, report.epoch, report.env_steps) == ("old-run", 3, 8192)
    assert_upgraded(report.episodes)
    assert EpochReport.model_validate(json.loads(V1_EPOCH_REPORT)) == report
    assert EpochReport.model_validate_json(report.model_dump_json()) == report, "version 2 reads back as it is"


def test_a_version_1_evaluation_report_reads_as_version_2() -> None:
    report = EvalReport.model_validate_json(V1_EVAL_REPORT)
    assert report.schema_version == 2 and report.best_episode == 0
    assert_upgraded(report.episodes)
    assert [r.reward_model_return for r in report.records] == [0.25, -0.75]
    assert report.records[0] == EpisodeRecord(steps=200, env_return=1.0, reward_model_return=0.25, rooms_visited=3,
                                              tiles_visited=40, milestones=["take_key"])
    assert EvalReport.model_validate_json(report.model_dump_json()) == report


def test_a_version_2_progress_and_an_unversioned_checkpoint_metadata_read_as_the_new_versions() -> None:
    progress = LiveMetrics.model_validate({
        "emitted_at": "2025-01-02T03:04:05Z", "schema_version": 2, "run_id": "old-run", "epoch": 3,
        "env_steps": 8192, "env_steps_per_s": 512.0, "episodes": V1_STATS, "reward_components": {"shaping": -0.1},
        "rooms_visited": [[0, 17]], "reward_model_epoch": 2, "segments_exported": 12})
    assert progress.schema_version == 3 and progress.reward_components == {"shaping": -0.1}
    assert_upgraded(progress.episodes)
    meta = CheckpointMetadata.model_validate({
        "run_id": "old-run", "epoch": 3, "env_steps": 8192, "wall_time_s": 40.0, "reward_model_epoch": 2,
        "policy_fingerprint": 12.5, "stats": V1_STATS, "best_by": "milestone/score", "best_value": 0.5})
    assert meta.schema_version == 2
    assert_upgraded(meta.stats)


def test_an_unknown_version_and_an_old_name_in_a_new_version_are_rejected() -> None:
    stored = json.loads(V1_EPOCH_REPORT)
    with pytest.raises(ValidationError, match="schema_version"):
        EpochReport.model_validate({**stored, "schema_version": 3})
    with pytest.raises(ValidationError, match="return_shaping_mean"):
        EpochReport.model_validate({**stored, "schema_version": 2})
    with pytest.raises(ValidationError, match="schema_version"):
        EvalReport.model_validate_json(V1_EVAL_REPORT.replace('"schema_version": 1', '"schema_version": 0'))
