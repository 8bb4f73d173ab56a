"""An epoch judged the way the live judges leave it: stored segments, every kind's rules verdict, scored records,
``scores.jsonl`` and the epoch manifest, under the live keys. Re-judging tests start from it."""

from __future__ import annotations

import asyncio

from tests.support.segments import write_epoch
from zelda_judge.backends.rules import RulesJudge
from zelda_judge.ledger import combined_score
from zelda_judge.rubric import RubricWeights
from zelda_judge.segment_io import AsyncStore, SegmentReader
from zelda_rlaif.events import JudgeKind, SegmentExported, SegmentJudged, SegmentScored
from zelda_rlaif.storage import keys
from zelda_rlaif.storage.base import ObjectStore
from zelda_rlaif.verdicts import VerdictRecord


async def _judge(store: ObjectStore, events: list[SegmentExported]) -> list[SegmentScored]:
    astore = AsyncStore(store)
    reader = SegmentReader(astore)
    rows = []
    try:
        for event in events:
            segment = await reader.load(event)
            verdicts = []
            for kind in JudgeKind:
                judgement = await RulesJudge(kind).judge(segment)
                verdict = SegmentJudged(run_id=event.run_id, epoch=event.epoch, segment_id=event.segment_id, kind=kind,
                                        backend="rules", model=RulesJudge.model, scores=judgement.scores,
                                        agreement=judgement.agreement, votes=len(judgement.votes),
                                        rationale=judgement.rationale)
                store.put_json(keys.verdict(event.run_id, event.epoch, event.segment_id, kind.value),
                               VerdictRecord(verdict=verdict, votes=list(judgement.votes)))
                verdicts.append(verdict)
            scored = combined_score(event, verdicts, RubricWeights())
            store.put_json(keys.scored_segment(event.run_id, event.epoch, event.segment_id), scored)
            rows.append(scored)
    finally:
        astore.close()
    return rows


def write_live_epoch(store: ObjectStore, run_id: str, epoch: int, segments: int) -> list[SegmentExported]:
    """Stored and judged segments of one closed epoch (default rubric, rules backend)."""
    events, announced = write_epoch(store, run_id=run_id, epoch=epoch, segments=segments, steps=40)
    rows = asyncio.run(_judge(store, events))
    store.put_json(keys.epoch_manifest(run_id, epoch), announced)
    store.put_jsonl(keys.epoch_scores(run_id, epoch), sorted(rows, key=lambda r: r.segment_id))
    return events


def snapshot(store: ObjectStore, prefix: str, *, skip: str | None = None) -> dict[str, bytes]:
    """Every object under ``prefix`` (except under ``skip``), key -> bytes."""
    return {key: store.get_bytes(key) for key in store.list(prefix) if skip is None or not key.startswith(skip)}
