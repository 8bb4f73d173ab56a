"""Read one exported segment (manifest, state log, key frames) from the object store.

The object store client is synchronous (boto3); every call runs on a small thread pool so a replica with
many segments in flight keeps its event loop free for the LLM requests.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from zelda_judge.summary import SegmentSummary, summarize
from zelda_rlaif.bus import PermanentFailure
from zelda_rlaif.errors import ObjectNotFound
from zelda_rlaif.events import SegmentExported, SegmentRef
from zelda_rlaif.replay.milestones import load_profile
from zelda_rlaif.segments import StateLogError, StepRecord, parse_state_log
from zelda_rlaif.storage import keys
from zelda_rlaif.storage.base import ObjectStore

log = logging.getLogger(__name__)

T = TypeVar("T")


class AsyncStore:
    """The object store's calls, run on a dedicated thread pool (boto3's pool holds 10 connections)."""

    def __init__(self, store: ObjectStore, threads: int = 8) -> None:
        self.store = store
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="store")

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._pool, partial(fn, *args))

    async def get_bytes(self, key: str) -> bytes:
        return await self._run(self.store.get_bytes, key)

    async def put_bytes(self, key: str, data: bytes, content_type: str = "application/octet-stream") -> None:
        await self._run(self.store.put_bytes, key, data, content_type)

    async def put_json(self, key: str, value: BaseModel | dict[str, Any]) -> None:
        await self._run(self.store.put_json, key, value)

    async def exists(self, key: str) -> bool:
        return await self._run(self.store.exists, key)

    async def list(self, prefix: str) -> list[str]:
        def listing() -> list[str]:
            found: Iterator[str] = self.store.list(prefix)
            return list(found)

        return await self._run(listing)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


@dataclass(frozen=True)
class Segment:
    """A segment as the judges see it."""

    manifest: SegmentExported
    records: Sequence[StepRecord]
    summary: SegmentSummary
    frames: dict[int, bytes] = field(default_factory=dict)


class SegmentReader:
    def __init__(self, store: AsyncStore) -> None:
        self.store = store

    async def load(self, ref: SegmentRef, *, key_frames: int = 0) -> Segment:
        """Manifest and state log, plus up to ``key_frames`` PNG frames chosen from the summary.

        Missing or malformed objects raise ``PermanentFailure``: the trainer stores a segment before
        announcing it, so retrying cannot make it appear, and the segment is dead-lettered at once.
        """
        manifest = await self._manifest(ref)
        records = await self._records(ref)
        if not records:
            raise PermanentFailure(f"segment {ref.segment_id} has an empty state log; nothing to judge")
        profile = load_profile(manifest.profile)
        if isinstance(profile, str):
            log.warning("segment %s: %s; the judges see no quest milestones", ref.segment_id, profile)
            summary = summarize(records)
        else:
            summary = summarize(records, profile.milestones, profile.walkthrough)
        frames: dict[int, bytes] = {}
        for step in select_key_frames(manifest.frame_steps, summary, key_frames):
            frames[step] = await self._get(ref, keys.segment_frame(ref.run_id, ref.epoch, ref.segment_id, step))
        return Segment(manifest, records, summary, frames)

    async def _get(self, ref: SegmentRef, key: str) -> bytes:
        try:
            return await self.store.get_bytes(key)
        except ObjectNotFound:
            raise PermanentFailure(
                f"segment {ref.segment_id} of run {ref.run_id} epoch {ref.epoch} has no object {key!r}; "
                "the trainer must store every object of a segment before publishing segment.exported"
            ) from None

    async def _manifest(self, ref: SegmentRef) -> SegmentExported:
        raw = await self._get(ref, keys.segment_manifest(ref.run_id, ref.epoch, ref.segment_id))
        try:
            manifest = SegmentExported.model_validate_json(raw)
        except ValidationError as exc:
            raise PermanentFailure(f"manifest of segment {ref.segment_id} is invalid: {exc}") from None
        if (manifest.run_id, manifest.epoch, manifest.segment_id) != (ref.run_id, ref.epoch, ref.segment_id):
            raise PermanentFailure(
                f"manifest of segment {ref.segment_id} describes run {manifest.run_id} epoch {manifest.epoch} "
                f"segment {manifest.segment_id}; the event and the stored objects disagree"
            )
        return manifest

    async def _records(self, ref: SegmentRef) -> list[StepRecord]:
        raw = await self._get(ref, keys.segment_states(ref.run_id, ref.epoch, ref.segment_id))
        try:
            return parse_state_log(raw)
        except StateLogError as exc:
            raise PermanentFailure(f"the state log of segment {ref.segment_id} is invalid: {exc}") from None


def select_key_frames(frame_steps: Sequence[int], summary: SegmentSummary, limit: int) -> list[int]:
    """Up to ``limit`` frames that show the segment: the first, the first frame in each newly entered room,
    and the last; evenly thinned when there are more candidates than ``limit``."""
    if limit <= 0 or not frame_steps:
        return []
    ordered = sorted(frame_steps)
    wanted = [ordered[0]]
    for entry in summary.room_path[1:]:
        after = next((s for s in ordered if s >= entry.step), None)
        if after is not None and after not in wanted:
            wanted.append(after)
    if ordered[-1] not in wanted:
        wanted.append(ordered[-1])
    if len(wanted) < limit:  # few room changes: fill with evenly spaced frames
        for i in range(1, limit):
            step = ordered[round(i * (len(ordered) - 1) / max(1, limit - 1))]
            if len(wanted) >= limit:
                break
            if step not in wanted:
                wanted.append(step)
    wanted.sort()
    if len(wanted) <= limit:
        return wanted
    if limit == 1:
        return [wanted[-1]]
    return [wanted[round(i * (len(wanted) - 1) / (limit - 1))] for i in range(limit)]
