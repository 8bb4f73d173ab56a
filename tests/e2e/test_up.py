"""The whole loop through the real processes: ``zelda-rlaif up`` for two epochs on the bundled test world.

Embedded nats-server, a file:// store, the trainer on a local Ray, three rules judges, the reward-model
service and the HUD, each its own process. The loop must close: every exported segment judged by all three
kinds, one ``scores.ready`` per epoch, a reward model trained and loaded, and shaping visible in epoch 1. Every
epoch reports its env steps, steps/s and finished episodes in the table and the summary.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from zelda_rlaif.episodes import EpisodeRecord, EpisodeStats, EpochReport
from zelda_rlaif.events import EpochExported, JudgeKind, LiveMetrics, SegmentExported, SegmentScored
from zelda_rlaif.segments import StepRecord
from zelda_rlaif.settings import StoreSettings
from zelda_rlaif.storage import keys, open_store
from zelda_rlaif.up.summary import RunSummary, agent_table, build_summary
from zelda_rlaif.up.supervisor import UpOptions, progress_table
from zelda_rlaif.up.watch import PipelineWatch

MILESTONES = ["talk_old_man", "take_key", "open_gate", "take_sword", "solve_switch", "reach_treasure"]


def rendered(table: object) -> list[str]:
    console = Console(record=True, width=240)
    console.print(table)
    return console.export_text().splitlines()


def row_of(lines: list[str], epoch: int) -> str:
    return next(line for line in lines if line.lstrip("│┃ ").startswith(f"{epoch} "))


@pytest.mark.slow
def test_up_runs_two_epochs_and_closes_the_loop(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    env = {
        **os.environ,
        # Small, CI-sized epochs with many short segments so the reward model has pairs to learn from.
        "ZELDA_TRAINER_SEGMENT_STEPS": "100",
        "ZELDA_TRAINER_EPISODE_STEPS": "200",  # each emulator ends an episode in its 256 steps of every epoch
        "ZELDA_TRAINER_PPO_TRAIN_BATCH_SIZE": "1024",
        "ZELDA_TRAINER_PPO_MINIBATCH_SIZE": "256",
        "ZELDA_TRAINER_ENVS_PER_RUNNER": "4",  # 256 steps per emulator and epoch: room for 2 segments each
        "ZELDA_TRAINER_FRAME_EVERY": "20",
        # The loop's plumbing is under test here, not learning quality (tests/reward_model covers that): with
        # ~20 near-identical random-play segments, validation accuracy is a coin flip around 0.6.
        "ZELDA_REWARD_MODEL_MIN_VALIDATION_ACCURACY": "0",
        # Judged starts: epoch 0's segments keep their end states and epoch 1's envs are handed the best ones.
        "ZELDA_TRAINER_JUDGED_START_FRACTION": "0.5",
    }
    result = subprocess.run(
        [sys.executable, "-m", "zelda_rlaif.cli", "up", "--run-dir", str(run_dir), "--run-id", "e2e",
         "--epochs", "2", "--steps-per-epoch", "2048", "--shaping-mode", "sync", "--finish-timeout", "300"],
        env=env, capture_output=True, text=True, timeout=900,
    )
    print(result.stdout[-6000:])
    assert result.returncode == 0, result.stderr[-4000:]
    summary = json.loads((run_dir / "summary.json").read_text())
    print("timeline (epoch end -> scores ready -> model loaded):")
    for when, what in summary["timeline"]:
        print(f"  {when}  {what}")

    store = open_store(StoreSettings(url=(run_dir / "store").as_uri()))
    epochs = {row["epoch"]: row for row in summary["epochs"]}
    assert sorted(epochs) == [0, 1]
    for epoch, row in epochs.items():
        manifests = [k for k in store.list(keys.epoch_segments("e2e", epoch)) if keys.is_segment_manifest(k)]
        segment_ids = {SegmentExported.model_validate(store.get_json(k)).segment_id for k in manifests}
        assert row["segments_exported"] == len(segment_ids) > 0
        # Every segment judged by all three kinds, and scored exactly once.
        for segment_id in segment_ids:
            for kind in JudgeKind:
                assert store.exists(keys.verdict("e2e", epoch, segment_id, kind.value)), (segment_id, kind)
        scored = [line["segment_id"] for line in store.get_jsonl(keys.epoch_scores("e2e", epoch))]
        assert sorted(scored) == sorted(segment_ids)
        assert row["scores_ready_events"] == 1
        assert row["reward_model_accepted"] is not None
        assert store.exists(keys.reward_model_metadata("e2e", epoch))
        # The judges' and reward model's figures under the names the HUD and the trackers use.
        assert {"judge/combined", "judge/state/progress", "reward_model/pairs"} <= set(row["figures"])

    # The model trained on epoch 0 was loaded and shaped epoch 1's rewards.
    assert any("reward model of epoch 0 loaded" in what for _, what in summary["timeline"])
    shaping = []
    for key in store.list(keys.epoch_segments("e2e", 1)):
        if key.endswith("/states.jsonl"):
            shaping += [StepRecord.model_validate(r).components.get("shaping", 0.0) for r in store.get_jsonl(key)]
    assert shaping and any(value != 0.0 for value in shaping)
    judged = [line["segment_id"] for line in store.get_jsonl(keys.epoch_scores("e2e", 0))]
    assert all(store.exists(keys.segment_end_state("e2e", 0, segment_id)) for segment_id in judged)
    starts = re.search(r"judged starts: 50% of episodes begin at the end state of one of (\d+) kept segments",
                       (run_dir / "logs" / "trainer.log").read_text())
    assert starts and int(starts.group(1)) > 0
    assert summary["env_steps"] >= 4096

    # Every epoch's report, in summary.json and in the printed table: steps, steps/s and the episodes' figures.
    reports = {epoch: EpochReport.model_validate(row["report"]) for epoch, row in epochs.items()}
    for epoch, report in reports.items():
        assert report == EpochReport.model_validate(store.get_json(keys.epoch_report("e2e", epoch)))
        assert report.epoch_env_steps >= 2048 and report.env_steps_per_s > 0
        stats = report.episodes
        assert stats.count >= 8, "each of the 8 emulators ends at least one 200-step episode per epoch"
        assert None not in (stats.return_env_mean, stats.return_env_median, stats.return_reward_model_mean,
                            stats.length_mean, stats.rooms_mean, stats.tiles_mean, stats.milestone_score)
        assert list(stats.milestones) == MILESTONES
    assert reports[1].episodes.return_reward_model_mean != 0.0, "epoch 1 shaped with the model of epoch 0"
    assert reports[1].env_steps == summary["env_steps"]
    lines = rendered(agent_table(RunSummary.model_validate(summary)))
    for epoch, report in reports.items():
        row = row_of(lines, epoch)
        assert f" {report.env_steps} " in row and f" {report.env_steps_per_s:.0f} " in row
        assert f"{report.episodes.return_env_mean:.2f}" in row and f"{report.episodes.milestone_score:.2f}" in row
    assert "no episode finished" not in result.stdout

    # The curves outside the HUD: TensorBoard event files in the run directory, with every epoch's judge scores
    # (the trainer waits for the last epoch's reward model before it ends).
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    curves = EventAccumulator(str(run_dir / "tensorboard" / "e2e"))
    curves.Reload()
    for name in ("episode/return_env_mean", "milestone/score", "judge/combined", "reward_model/pairs"):
        assert [event.step for event in curves.Scalars(name)] == [r.env_steps for r in reports.values()], name
    assert "tensorboard --logdir" in result.stdout


def report(epoch: int, episodes: list[EpisodeRecord]) -> EpochReport:
    return EpochReport(run_id="r", epoch=epoch, env_steps=2048 * (epoch + 1), epoch_env_steps=2048,
                       env_steps_per_s=512.0 + epoch, wall_time_s=4.0, reward_model_epoch=None,
                       episodes=EpisodeStats.of(episodes, MILESTONES))


def episode(env_return: float, milestones: list[str]) -> EpisodeRecord:
    return EpisodeRecord(steps=200, env_return=env_return, reward_model_return=0.0, rooms_visited=3, tiles_visited=40,
                         milestones=milestones)


def test_the_live_table_shows_steps_and_episodes_for_every_epoch(tmp_path: Path) -> None:
    """Ended epochs from their reports, the running one from the live metrics; an epoch without a finished
    episode says so."""
    watch = PipelineWatch("r")
    for epoch in (0, 1):
        watch.epochs_exported[epoch] = EpochExported(run_id="r", epoch=epoch, segments_exported=3,
                                                     env_steps=2048 * (epoch + 1), episodes=8)
    watch.reports = {0: report(0, []), 1: report(1, [episode(1.5, ["take_key"]), episode(2.5, [])])}
    watch.metrics = LiveMetrics(run_id="r", epoch=2, env_steps=5000, env_steps_per_s=300.0,
                                episodes=EpisodeStats.of([episode(4.0, ["take_key", "open_gate"])], MILESTONES))
    options = UpOptions(run_id="r", run_dir=tmp_path, epochs=3, steps_per_epoch=2048, env_runners=2,
                        export_fraction=1.0, rom=None, state=None, shaping_mode="pipelined", llm_url=None,
                        llm_model=None, nats_url=None, store_url=None, hud_port=1, resume=False,
                        finish_timeout_s=1.0)
    lines = rendered(progress_table(options, watch, []))
    assert " 2048 " in row_of(lines, 0) and " 512 " in row_of(lines, 0)
    assert "no episode finished" in row_of(lines, 0)
    assert " 4096 " in row_of(lines, 1) and " 513 " in row_of(lines, 1) and " 2.00 " in row_of(lines, 1)
    assert f" {(0.5 + 0) / 6:.2f} " in row_of(lines, 1), "the milestone score: take_key in half the episodes"
    assert " 5000 " in row_of(lines, 2) and " 300 " in row_of(lines, 2) and f" {2 / 6:.2f} " in row_of(lines, 2)


def test_the_summary_counts_each_scored_segment_once(tmp_path: Path) -> None:
    """A segment scored twice in ``scores.jsonl`` counts once; a line that is not a score is left out (the
    judge figures warn of it); an epoch not closed yet has none."""
    store = open_store(StoreSettings(url=(tmp_path / "store").as_uri()))
    rows = [SegmentScored(run_id="r", epoch=0, segment_id=segment_id, combined=0.5, dimensions={"progress": 0.5},
                          weights={"progress": 1.0}).model_dump_json().encode() for segment_id in ("a", "b", "a")]
    store.put_bytes(keys.epoch_scores("r", 0), b"\n".join([*rows, b"{}"]))
    watch = PipelineWatch("r")
    for epoch in (0, 1):
        watch.epochs_exported[epoch] = EpochExported(run_id="r", epoch=epoch, segments_exported=3,
                                                     env_steps=2048 * (epoch + 1), episodes=8)
    summary = build_summary("r", tmp_path, store, watch, hud_port=1)
    assert [(row.epoch, row.segments_scored) for row in summary.epochs] == [(0, 2), (1, 0)]
    assert summary.epochs[0].figures["judge/combined"] == 0.5
