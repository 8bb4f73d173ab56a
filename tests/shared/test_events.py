"""Every event model survives a round trip through the real NATS server, byte for byte."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import ValidationError

from zelda_rlaif.bus import Bus
from zelda_rlaif.episodes import EpisodeRecord, EpisodeStats
from zelda_rlaif.events import (
    DeadLetter,
    EpochExported,
    Event,
    GuidanceSuggestion,
    JudgeKind,
    LiveFrame,
    LiveMetrics,
    RewardModelUpdated,
    ScoresReady,
    SegmentExported,
    SegmentJudged,
    SegmentScored,
)
from zelda_rlaif.subjects import (
    ALL_TOPICS,
    DEAD_LETTER,
    EPOCH_EXPORTED,
    LIVE_FRAMES,
    LIVE_GUIDANCE,
    LIVE_METRICS,
    PIPELINE_STREAM,
    REWARD_MODEL_UPDATED,
    SCORES_READY,
    SEGMENT_EXPORTED,
    SEGMENT_JUDGED,
    SEGMENT_SCORED,
    Topic,
    dead_letter_subject,
    live_frame_subject,
)


def samples(run_id: str) -> list[tuple[Topic[Event], str, Event]]:
    ref = {"run_id": run_id, "epoch": 3, "segment_id": "ep0007-seg002"}
    return [
        (SEGMENT_EXPORTED, SEGMENT_EXPORTED.subject, SegmentExported(
            **ref, episode_id="ep0007", profile="testworld", step_start=300, step_end=600, num_steps=300,
            frame_every=4, frame_steps=list(range(300, 600, 4)), total_reward=12.5,
            reward_components={"new_room": 2.0, "rnd": 10.5}, rooms_visited=[(0, 0x11), (0, 0x12)],
            reward_model_epoch=2)),
        (SEGMENT_JUDGED, SEGMENT_JUDGED.for_kind(JudgeKind.PUZZLE), SegmentJudged(
            **ref, kind=JudgeKind.PUZZLE, backend="rules", model="rules-v1", scores={"puzzle": 0.75},
            agreement=1.0, votes=3, rationale="switch pressed")),
        (SEGMENT_SCORED, SEGMENT_SCORED.subject, SegmentScored(
            **ref, combined=0.5, dimensions={"progress": 0.5}, weights={"progress": 1.0})),
        (EPOCH_EXPORTED, EPOCH_EXPORTED.subject, EpochExported(
            run_id=run_id, epoch=3, segments_exported=40, env_steps=12000, episodes=20)),
        (SCORES_READY, SCORES_READY.subject, ScoresReady(
            run_id=run_id, epoch=3, segments_scored=39, segments_unjudged=1)),
        (REWARD_MODEL_UPDATED, REWARD_MODEL_UPDATED.subject, RewardModelUpdated(
            run_id=run_id, epoch=3, accepted=True, model_epoch=3, pairs=700, validation_accuracy=0.91,
            trained_on_epochs=[2, 3])),
        (DEAD_LETTER, dead_letter_subject(SEGMENT_EXPORTED.subject), DeadLetter(
            original_subject=SEGMENT_EXPORTED.subject, stream=PIPELINE_STREAM, consumer="judge-state",
            stream_sequence=9, deliveries=5, reason="boom", payload=b"\x00{raw}", run_id=run_id)),
        (LIVE_FRAMES, live_frame_subject("w1-e0"), LiveFrame(
            run_id=run_id, env_id="w1-e0", step=5, png=b"\x89PNG...", state={"room": 17, "menu": False})),
        (LIVE_METRICS, LIVE_METRICS.subject, LiveMetrics(
            run_id=run_id, epoch=3, env_steps=100, env_steps_per_s=1500.0,
            episodes=EpisodeStats.of([EpisodeRecord(steps=100, env_return=3.0, reward_model_return=0.5, rooms_visited=2,
                                                    tiles_visited=9, milestones=["take_key"])], ["take_key"]),
            reward_components={"new_room": 1.0}, rooms_visited=[(0, 17)])),
        (LIVE_GUIDANCE, LIVE_GUIDANCE.subject, GuidanceSuggestion(
            run_id=run_id, env_id="w1-e0", step=9, source="text", backend="rules", action="up",
            reason="unexplored room to the north")),
    ]


def test_every_topic_has_a_sample() -> None:
    covered = {topic.subject for topic, _, _ in samples("r")}
    assert covered == {topic.subject for topic in ALL_TOPICS}


def test_dedup_ids_name_the_run_and_the_epoch() -> None:
    """JetStream drops a message whose Nats-Msg-Id it has seen: the same-looking fact of another epoch or run (a
    segment id used again, a dead letter at the same position) must get another id."""
    durable = [event for topic, _, event in samples("run-a") if topic.durable]
    assert len(durable) == 7
    for event in durable:
        dedup = event.dedup_id()
        assert dedup is not None and "run-a" in dedup, type(event).__name__
        assert event.model_copy(update={"run_id": "run-b"}).dedup_id() != dedup
        assert event.model_copy(update={"epoch": 4}).dedup_id() != dedup, type(event).__name__
        assert event.model_copy().dedup_id() == dedup, "the same fact keeps its id (retries are stored once)"


async def test_round_trip_through_nats(bus: Bus, run_id: str) -> None:
    for topic, subject, event in samples(run_id):
        received: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()

        async def on_msg(msg, fut=received):  # type: ignore[no-untyped-def]
            if not fut.done():
                fut.set_result(msg.data)

        sub = await bus.subscribe_live(subject, on_msg)
        if topic.durable:
            assert await bus.publish(topic, event, subject=subject)
        else:
            await bus.publish_live(subject, event)
        data = await asyncio.wait_for(received, 5)
        await sub.unsubscribe()
        decoded = topic.model.model_validate_json(data)
        assert decoded == event, topic.subject


def test_unknown_schema_version_and_fields_are_rejected() -> None:
    good = SegmentExported(run_id="r", epoch=0, segment_id="s", episode_id="e", profile="p", step_start=0,
                           step_end=300, num_steps=300, frame_every=4, frame_steps=[], total_reward=0.0,
                           reward_components={}, rooms_visited=[], reward_model_epoch=None)
    data = good.model_dump(mode="json")
    with pytest.raises(ValidationError, match="schema_version"):
        SegmentExported.model_validate({**data, "schema_version": 1})
    with pytest.raises(ValidationError, match="surprise"):
        SegmentExported.model_validate({**data, "surprise": 1})
    with pytest.raises(ValidationError):
        SegmentJudged(run_id="r", epoch=0, segment_id="s", kind=JudgeKind.STATE, backend="rules", model="m",
                      scores={"progress": 1.5}, agreement=1.0, votes=3, rationale="")
