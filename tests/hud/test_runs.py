"""What the HUD folds from events: which run it shows, rooms, pipeline counters, bounded memory."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from zelda_hud.runs import Limits, RunTracker, RunView
from zelda_rlaif.episodes import EpisodeRecord, EpisodeStats, EpochReport
from zelda_rlaif.events import (
    DeadLetter,
    EpochExported,
    JudgeKind,
    LiveFrame,
    LiveMetrics,
    SegmentExported,
    SegmentJudged,
    SegmentScored,
)
from zelda_rlaif.subjects import PIPELINE_STREAM, SEGMENT_EXPORTED

LIMITS = Limits(history_points=5, recent_items=3)
T0 = datetime(2026, 1, 1, tzinfo=UTC)
NO_EPISODES = EpisodeStats.of([], ["take_key"])


def live(epoch: int, env_steps: int, episodes: EpisodeStats = NO_EPISODES, **fields: Any) -> LiveMetrics:
    return LiveMetrics(run_id="r", epoch=epoch, env_steps=env_steps, env_steps_per_s=1.0, episodes=episodes, **fields)


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def test_follows_the_most_recently_started_run() -> None:
    runs = RunTracker(LIMITS, pinned=None, max_runs=2)
    assert runs.view("old", at(0))[1] is True
    _, switched = runs.view("new", at(10))
    assert switched and runs.current_id == "new"
    # The old run is still publishing: it does not take the page back (no flip-flopping between two runs).
    _, switched = runs.view("old", at(11))
    assert not switched and runs.current_id == "new"
    # An event replayed from before the current run started does not make its run "newer" either.
    _, switched = runs.view("older", at(-5))
    assert not switched and runs.current_id == "new"
    assert len(runs.runs) == 2 and "new" in runs.runs  # bounded; the shown run is never evicted


def test_a_pinned_run_ignores_the_others() -> None:
    runs = RunTracker(LIMITS, pinned="mine", max_runs=4)
    assert runs.view("other", at(5)) == (None, False)
    view, switched = runs.view("mine", at(0))
    assert view is not None and not switched and runs.current_id == "mine"  # shown from the start
    assert list(runs.runs) == ["mine"]


def test_rooms_positions_and_coverage() -> None:
    view = RunView("r", LIMITS, T0)
    for step, room in enumerate([0x00, 0x01, 0x01, 0x11]):
        view.add_frame(LiveFrame(run_id="r", env_id="env-0", step=step, png=b"", state={"group": 0, "room": room}),
                       "msg")
    view.add_frame(LiveFrame(run_id="r", env_id="env-1", step=0, png=b"", state={"group": True, "room": 3}), "msg")
    view.add_metrics(live(0, 10, rooms_visited=[(2, 0x10)]))
    exploration = view.exploration()
    assert exploration["groups"] == {"0": {"0": 1, "1": 2, "17": 1}, "2": {"16": 0}}
    assert exploration["rooms_discovered"] == 4
    assert exploration["positions"] == {"env-0": [0, 0x11]}  # a flag is not a group number
    assert view.default_env() == "env-0"


def test_pipeline_counts_unjudged_segments_once() -> None:
    view = RunView("r", LIMITS, T0)
    view.add_epoch_exported(EpochExported(run_id="r", epoch=3, segments_exported=4, env_steps=1, episodes=1))
    for s in range(4):
        view.add_segment_exported(SegmentExported(run_id="r", epoch=3, segment_id=f"s{s}", episode_id="e",
                                                  profile="testworld", step_start=0, step_end=1, num_steps=1,
                                                  frame_every=1, frame_steps=[0], total_reward=0.0,
                                                  reward_components={}, rooms_visited=[], reward_model_epoch=None))
    view.add_judged(SegmentJudged(run_id="r", epoch=3, segment_id="s0", kind=JudgeKind.STATE, backend="rules",
                                  model="m", scores={"progress": 0.5}, agreement=1.0, votes=3, rationale="ok"))
    view.add_scored(SegmentScored(run_id="r", epoch=3, segment_id="s0", combined=0.5, dimensions={}, weights={}))
    for consumer in ("judge-state", "judge-vision"):  # two judge kinds gave up on the same segment
        view.add_dead_letter(DeadLetter(original_subject=SEGMENT_EXPORTED.subject, stream=PIPELINE_STREAM,
                                        consumer=consumer, stream_sequence=None, deliveries=5, reason="timeout",
                                        payload=b"{}", run_id="r", epoch=3, segment_id="s3"))
    pipeline = view.pipeline()
    assert pipeline["epochs"] == [{"epoch": 3, "segments_exported": 4, "announced": 4, "judged": {"state": 1},
                                   "scored": 1, "unjudged": 1, "pending": 2, "scores_ready": False}]
    assert pipeline["dead_letters"] == 2
    assert "payload" not in view.snapshot()["dead_letters"][0]


def test_memory_is_bounded() -> None:
    view = RunView("r", LIMITS, T0)
    for i in range(20):
        view.add_metrics(live(0, i))
        view.add_judged(SegmentJudged(run_id="r", epoch=0, segment_id=f"s{i}", kind=JudgeKind.VISION,
                                      backend="rules", model="m", scores={}, agreement=1.0, votes=1, rationale=""))
    assert len(view.history) == LIMITS.history_points and view.history[-1]["env_steps"] == 19
    assert [v.segment_id for v in view.verdicts] == ["s17", "s18", "s19"]


def test_a_chart_point_uses_the_names_of_the_epoch_report() -> None:
    """A live point is the epoch so far under exactly the names its EpochReport will have at the epoch's end, so
    the page draws both on the same series."""
    view = RunView("r", LIMITS, T0)
    assert view.add_metrics(live(3, 100))["metrics"] == {"throughput/env_steps_per_s": 1.0, "episode/count": 0.0}
    finished = [EpisodeRecord(steps=300, env_return=5.0, reward_model_return=-2.0, rooms_visited=3, tiles_visited=70,
                              milestones=["take_key"])]
    stats = EpisodeStats.of(finished, ["take_key"])
    point = view.add_metrics(live(3, 4096, stats, reward_components={"new_room": 2.0}))
    report = EpochReport(run_id="r", epoch=3, env_steps=4096, epoch_env_steps=4096, env_steps_per_s=1.0,
                         wall_time_s=1.0, reward_model_epoch=None, episodes=stats)
    assert point == {"source": "live", "epoch": 3, "env_steps": 4096, "metrics": report.flat(),
                     "reward_components": {"new_room": 2.0}}
    assert point["metrics"]["milestone/take_key"] == 1.0
