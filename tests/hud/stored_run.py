"""A finished run of ``zelda-rlaif up`` as its directory holds it, written through the real contracts.

Segments (state log, frames, manifest) come from ``tests.support.segments``; the trainer's ``EpochReport``s, the
judges' ``VerdictRecord``s, ``scores.jsonl``, the unjudged records and the reward model's ``metadata.json`` are
the models each producer writes, at the keys of ``zelda_rlaif.storage.keys``; ``summary.json`` and ``run.json`` are
what ``up`` leaves in the directory. The numbers improve over the epochs, as a run that learns would.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.segments import write_epoch
from zelda_rlaif.episodes import EpisodeRecord, EpisodeStats, EpochReport
from zelda_rlaif.events import JudgeKind, RewardModelUpdated, SegmentJudged, SegmentScored
from zelda_rlaif.reward_model.metadata import PairCounts, RewardModelMetadata
from zelda_rlaif.settings import StoreSettings
from zelda_rlaif.storage import keys, open_store
from zelda_rlaif.storage.base import ObjectStore
from zelda_rlaif.verdicts import UnjudgedReason, UnjudgedRecord, VerdictRecord, Vote

MILESTONES = ["talk_old_man", "take_key", "open_gate", "take_sword", "solve_switch", "reach_treasure"]
DIMENSIONS = {JudgeKind.STATE: ["progress", "dialog"], JudgeKind.PUZZLE: ["puzzle"], JudgeKind.VISION: ["novelty"]}
STEPS_PER_EPOCH = 16384
SEGMENTS_PER_EPOCH = 5


def episodes(epoch: int, count: int) -> list[EpisodeRecord]:
    """``count`` episodes of an epoch: later epochs reach further into the quest and earn more."""
    records = []
    for i in range(count):
        reached = MILESTONES[: min(len(MILESTONES), (i + 2 * epoch) // 2)]
        records.append(EpisodeRecord(
            steps=400 - 20 * epoch + 7 * i, env_return=4.0 + 3.5 * epoch + 0.6 * i + 4.0 * (i % 4 == 0),
            reward_model_return=-25.0 + 30.0 * epoch - 6.0 * epoch**2 + 0.8 * i, rooms_visited=2 + epoch + i % 3,
            tiles_visited=60 + 30 * epoch - 3 * epoch**2 + i, milestones=reached))
    return records


def verdict(run_id: str, epoch: int, segment_id: str, kind: JudgeKind, base: float) -> VerdictRecord:
    scores = {d: round(min(1.0, base + 0.05 * n), 3) for n, d in enumerate(DIMENSIONS[kind])}
    votes = [Vote(scores={d: round(max(0.0, s - 0.05 + 0.05 * v), 3) for d, s in scores.items()},
                  rationale=f"vote {v + 1}: Link crossed {2 + epoch} rooms and talked to the old man; "
                            f"{kind.value} looks {'better' if base > 0.5 else 'weak'}.")
             for v in range(3)]
    judged = SegmentJudged(
        run_id=run_id, epoch=epoch, segment_id=segment_id, kind=kind, backend="rules", model="rules-v1",
        scores=scores, agreement=0.9, votes=3,
        rationale=f"{kind.value} judge: Link crossed {2 + epoch} rooms, opened a chest and kept moving.")
    return VerdictRecord(verdict=judged, votes=votes)


def write_stored_epoch(store: ObjectStore, run_id: str, epoch: int, *, episode_count: int, judged: bool = True,
                       model: bool = True) -> None:
    """One epoch as every service leaves it: segments, report, verdicts and scores (the last segment unjudged),
    and the reward model trained on the scores."""
    segments, announced = write_epoch(store, run_id=run_id, epoch=epoch, segments=SEGMENTS_PER_EPOCH, steps=60,
                                      frame_every=10)
    env_steps = STEPS_PER_EPOCH * (epoch + 1)
    store.put_json(keys.epoch_report(run_id, epoch), EpochReport(
        run_id=run_id, epoch=epoch, env_steps=env_steps, epoch_env_steps=STEPS_PER_EPOCH,
        env_steps_per_s=850.0 + 40 * epoch, wall_time_s=STEPS_PER_EPOCH / (850.0 + 40 * epoch),
        reward_model_epoch=epoch - 1 if epoch else None,
        episodes=EpisodeStats.of(episodes(epoch, episode_count), MILESTONES)))
    store.put_json(keys.epoch_manifest(run_id, epoch), announced.model_copy(update={"env_steps": env_steps}))
    if not judged:
        return
    rows = []
    for i, segment in enumerate(segments):
        sid = segment.segment_id
        if i == len(segments) - 1:  # the vision judge gave up on the last one
            for kind in (JudgeKind.STATE, JudgeKind.PUZZLE):
                store.put_json(keys.verdict(run_id, epoch, sid, kind.value), verdict(run_id, epoch, sid, kind, 0.4))
            store.put_json(keys.unjudged_segment(run_id, epoch, sid), UnjudgedRecord(
                run_id=run_id, epoch=epoch, segment_id=sid,
                reasons={"vision": UnjudgedReason(reason="LLM endpoint timed out 5 times", deliveries=5)}))
            continue
        base = 0.3 + 0.1 * epoch + 0.04 * i
        records = [verdict(run_id, epoch, sid, kind, base) for kind in JudgeKind]
        for record in records:
            store.put_json(keys.verdict(run_id, epoch, sid, record.verdict.kind.value), record)
        dims = {d: s for r in records for d, s in r.verdict.scores.items()}
        row = SegmentScored(run_id=run_id, epoch=epoch, segment_id=sid, dimensions=dims,
                            combined=round(sum(dims.values()) / len(dims), 4), weights={d: 1.0 for d in dims})
        store.put_json(keys.scored_segment(run_id, epoch, sid), row)
        rows.append(row)
    store.put_jsonl(keys.epoch_scores(run_id, epoch), rows)
    if not model:
        return
    update = RewardModelUpdated(run_id=run_id, epoch=epoch, accepted=epoch > 0, model_epoch=epoch if epoch else None,
                                pairs=6 * (epoch + 1), validation_accuracy=0.55 + 0.08 * epoch,
                                trained_on_epochs=list(range(epoch + 1)),
                                reason="" if epoch else "validation accuracy below the minimum; no model yet")
    store.put_json(keys.reward_model_metadata(run_id, epoch), RewardModelMetadata(
        run_id=run_id, epoch=epoch, accepted=update.accepted, reason=update.reason, model_epoch=update.model_epoch,
        trained_on_epochs=update.trained_on_epochs, segments=len(rows),
        pairs=PairCounts(train_decisive=4, train_ties=1, validation_decisive=1, validation_ties=0),
        validation_accuracy=update.validation_accuracy, event=update))


def write_finished_run(run_dir: Path, run_id: str, epochs: int = 4) -> ObjectStore:
    """``run_dir`` as ``zelda-rlaif up --run-dir run_dir --epochs N`` leaves it. Epoch 0 finished no episode."""
    store = open_store(StoreSettings(url=(run_dir / "store").as_uri()), create_bucket=True)
    for epoch in range(epochs):
        write_stored_epoch(store, run_id, epoch, episode_count=0 if epoch == 0 else 6 + 2 * epoch)
    (run_dir / "run.json").write_text(json.dumps({"run_id": run_id}))
    (run_dir / "summary.json").write_text(json.dumps({"run_id": run_id, "store": store.url, "epochs": []}))
    return store
