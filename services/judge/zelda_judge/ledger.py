"""Verdicts, combined scores and the once-per-epoch ``scores.ready``, kept without any in-process state.

Replicas of every kind coordinate only through the object store, JetStream de-duplication and the
``zelda_coordination`` key-value bucket, so any number of replicas may run, crash or receive redeliveries.

Records (keys from ``zelda_rlaif.storage.keys``), each written before anything is published about it:

- ``verdict(run, epoch, seg, kind)``: the ``VerdictRecord`` of one kind (``zelda_rlaif.verdicts``): the
  ``SegmentJudged`` it publishes and every vote behind it. Written once: a redelivered segment finds it and
  re-publishes its verdict instead of asking the LLM again, so the key keeps the same content.
- ``scored_segment(run, epoch, seg)``: the ``SegmentScored``, built once every kind's verdict exists. It is a
  pure function of the stored verdicts (its timestamp is the latest verdict's), so two replicas
  completing the same segment at once write the same record.
- ``unjudged_segment(run, epoch, seg)``: the ``UnjudgedRecord``: why a segment was dead-lettered (by kind).
- ``epoch_manifest(run, epoch)``: the ``EpochExported`` that says how many segments the epoch has.
- ``epoch_scores(run, epoch)``: ``scores.jsonl``, one ``SegmentScored`` JSON per line, sorted by segment id.

Completion rule ("the last writer sees everything"): every actor first writes its own record, then lists
the others. A segment's last verdict is written before the listing that finds them all, and a scored or
unjudged record (or the epoch manifest) is written before the listing that counts the epoch complete, so
whichever of the racing replicas writes last is guaranteed to see the complete picture, whatever the order
of arrival (``epoch.exported`` before or after the last verdict). This relies on the store's read-after-write
and list-after-write consistency, which S3, MinIO and the file store provide.

Exactly one ``scores.ready`` per run and epoch:
1. ``scores.ready`` is published with its de-duplication id (``Nats-Msg-Id``): any number of replicas that
   find the epoch complete at the same time store one message.
2. Only after that publish is a marker put in the key-value bucket (``kv.create``, atomic); later triggers
   (a redelivery hours later, beyond the stream's de-duplication window) see the marker and stop.
There is no "claim" step that a crash could strand: a replica dying anywhere before step 1 has not acked
the message that triggered the check, so it is redelivered and the check runs again; dying between 1 and 2
leaves a redelivery within ``ack_wait`` (minutes, well inside the two-hour window) that de-duplicates the
publish and writes the marker. Dead letters are recorded by a durable consumer of the dead-letter stream
(and, as a fast path, by the consumer's ``on_dead_letter`` hook), so a crash there loses nothing either.
Only dead letters of valid ``segment.exported`` events are recorded: an invalid event changes no state here.

Scaling: each completion check lists the epoch's scored/ and unjudged/ prefixes (one list call per 1,000
segments). It only runs when the epoch manifest exists, i.e. near the end of an epoch's judging.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from nats.js.errors import KeyNotFoundError, KeyWrongLastSequenceError
from nats.js.kv import KeyValue
from pydantic import ValidationError

from zelda_judge.rubric import RubricWeights, combine
from zelda_judge.segment_io import AsyncStore
from zelda_rlaif.bus import Bus
from zelda_rlaif.errors import ObjectNotFound
from zelda_rlaif.events import (
    EpochExported,
    JudgeKind,
    ScoresReady,
    SegmentExported,
    SegmentJudged,
    SegmentRef,
    SegmentScored,
)
from zelda_rlaif.storage import keys
from zelda_rlaif.subjects import SCORES_READY, SEGMENT_JUDGED, SEGMENT_SCORED
from zelda_rlaif.verdicts import RATIONALE_MAX_CHARS, UnjudgedReason, UnjudgedRecord, VerdictRecord

log = logging.getLogger(__name__)


def scores_ready_marker(run_id: str, epoch: int) -> str:
    """Key-value key recording that ``scores.ready`` was published for the epoch."""
    return f"scores_ready.{run_id}.{epoch}"


def _ids_under(prefix: str, listed: list[str], suffix: str = ".json") -> set[str]:
    return {k[len(prefix):-len(suffix)] for k in listed if k.startswith(prefix) and k.endswith(suffix)
            and "/" not in k[len(prefix):]}


def combined_score(ref: SegmentRef, verdicts: list[SegmentJudged], weights: RubricWeights) -> SegmentScored:
    """The segment's combined score from every kind's verdict (re-judging builds its versions with it too)."""
    dimensions: dict[str, float] = {}
    for verdict in verdicts:
        dimensions.update(verdict.scores)
    return SegmentScored(
        run_id=ref.run_id,
        epoch=ref.epoch,
        segment_id=ref.segment_id,
        combined=combine(dimensions, weights),
        dimensions=dict(sorted(dimensions.items())),
        weights=weights.as_dict(),
        emitted_at=max(v.emitted_at for v in verdicts),
    )


class ScoreLedger:
    def __init__(self, store: AsyncStore, bus: Bus, kv: KeyValue, weights: RubricWeights) -> None:
        self.store = store
        self.bus = bus
        self.kv = kv
        self.weights = weights

    # Verdicts

    async def stored_verdict(self, ref: SegmentRef, kind: JudgeKind) -> VerdictRecord | None:
        try:
            raw = await self.store.get_bytes(keys.verdict(ref.run_id, ref.epoch, ref.segment_id, kind.value))
        except ObjectNotFound:
            return None
        return VerdictRecord.model_validate_json(raw)

    async def record_verdict(self, record: VerdictRecord) -> VerdictRecord:
        """Store ``record`` unless one is already stored (then that one wins), and publish the stored verdict."""
        verdict = record.verdict
        stored = await self.stored_verdict(verdict, verdict.kind)
        if stored is None:
            await self.store.put_json(keys.verdict(verdict.run_id, verdict.epoch, verdict.segment_id,
                                                   verdict.kind.value), record)
            stored = record
        await self.publish_verdict(stored.verdict)
        return stored

    async def publish_verdict(self, verdict: SegmentJudged) -> None:
        await self.bus.publish(SEGMENT_JUDGED, verdict, subject=SEGMENT_JUDGED.for_kind(verdict.kind))

    # Combined scores

    async def try_score(self, ref: SegmentRef) -> SegmentScored | None:
        """Write and publish the segment's combined score if every kind has judged it."""
        key = keys.scored_segment(ref.run_id, ref.epoch, ref.segment_id)
        try:
            scored = SegmentScored.model_validate_json(await self.store.get_bytes(key))
        except ObjectNotFound:
            verdicts = await self._verdicts(ref)
            if verdicts is None:
                return None
            scored = self._combine(ref, verdicts)
            await self.store.put_json(key, scored)
        # Published even when it was stored already: the replica that stored it may have died before publishing.
        await self.bus.publish(SEGMENT_SCORED, scored)
        return scored

    async def _verdicts(self, ref: SegmentRef) -> list[SegmentJudged] | None:
        prefix = keys.verdicts_of_segment(ref.run_id, ref.epoch, ref.segment_id)
        present = _ids_under(prefix, await self.store.list(prefix))
        if not {k.value for k in JudgeKind} <= present:
            return None
        raws = await asyncio.gather(*(self.store.get_bytes(keys.verdict(ref.run_id, ref.epoch, ref.segment_id,
                                                                         k.value)) for k in JudgeKind))
        return [VerdictRecord.model_validate_json(raw).verdict for raw in raws]

    def _combine(self, ref: SegmentRef, verdicts: list[SegmentJudged]) -> SegmentScored:
        return combined_score(ref, verdicts, self.weights)

    # Dead-lettered segments

    async def record_unjudged(self, ref: SegmentExported, kind: str, reason: str, deliveries: int) -> None:
        """Record why ``kind`` gave up on the segment; the epoch counts it as unjudged.

        Only a valid ``segment.exported`` is taken (typed so): ids salvaged from an invalid event could name
        another run's epoch and close it early.
        """
        key = keys.unjudged_segment(ref.run_id, ref.epoch, ref.segment_id)
        try:
            record = UnjudgedRecord.model_validate_json(await self.store.get_bytes(key))
        except ObjectNotFound:
            record = UnjudgedRecord(run_id=ref.run_id, epoch=ref.epoch, segment_id=ref.segment_id, reasons={})
        # Read-merge-write: two kinds dead-lettering the same segment at the same instant may keep only one
        # reason; the record exists either way, which is what the epoch count needs.
        entry = UnjudgedReason(reason=reason[:RATIONALE_MAX_CHARS], deliveries=deliveries)
        if record.reasons.get(kind) != entry:
            record = record.model_copy(update={"reasons": {**record.reasons, kind: entry}})
            await self.store.put_json(key, record)
            log.error("segment %s is unjudged by the %s judge: %s", ref.segment_id, kind, reason[:300])

    # Epochs

    async def record_epoch(self, event: EpochExported) -> None:
        key = keys.epoch_manifest(event.run_id, event.epoch)
        if not await self.store.exists(key):
            await self.store.put_json(key, event)

    async def _epoch(self, run_id: str, epoch: int) -> EpochExported | None:
        try:
            raw = await self.store.get_bytes(keys.epoch_manifest(run_id, epoch))
        except ObjectNotFound:
            return None
        try:
            return EpochExported.model_validate_json(raw)
        except ValidationError as exc:
            raise ValueError(f"{keys.epoch_manifest(run_id, epoch)} is not an EpochExported: {exc}") from None

    async def is_closed(self, run_id: str, epoch: int) -> bool:
        try:
            await self.kv.get(scores_ready_marker(run_id, epoch))
        except KeyNotFoundError:
            return False
        return True

    async def try_close_epoch(self, run_id: str, epoch: int) -> ScoresReady | None:
        """Publish ``scores.ready`` if every announced segment is scored or unjudged; returns it if this call
        stored it (None when the epoch is incomplete or someone else already published)."""
        if await self.is_closed(run_id, epoch):
            return None
        announced = await self._epoch(run_id, epoch)
        if announced is None:
            return None
        scored_prefix = keys.scored_segments(run_id, epoch)
        unjudged_prefix = keys.unjudged_segments(run_id, epoch)
        scored_list, unjudged_list = await asyncio.gather(self.store.list(scored_prefix),
                                                          self.store.list(unjudged_prefix))
        scored = _ids_under(scored_prefix, scored_list)
        unjudged = _ids_under(unjudged_prefix, unjudged_list) - scored
        if len(scored) + len(unjudged) < announced.segments_exported:
            return None
        ordered = sorted(scored)
        rows = await asyncio.gather(*(self.store.get_bytes(scored_prefix + f"{sid}.json") for sid in ordered))
        body = b"".join(SegmentScored.model_validate_json(raw).model_dump_json().encode() + b"\n" for raw in rows)
        await self.store.put_bytes(keys.epoch_scores(run_id, epoch), body, "application/x-ndjson")
        ready = ScoresReady(run_id=run_id, epoch=epoch, segments_scored=len(scored), segments_unjudged=len(unjudged))
        fresh = await self.bus.publish(SCORES_READY, ready)
        with contextlib.suppress(KeyWrongLastSequenceError):  # another replica recorded it first
            await self.kv.create(scores_ready_marker(run_id, epoch), ready.model_dump_json().encode())
        if fresh:
            log.info("scores.ready for run %s epoch %d: %d scored, %d unjudged", run_id, epoch, len(scored),
                     len(unjudged))
            return ready
        return None
