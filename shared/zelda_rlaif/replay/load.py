"""Read everything a replay shows from the object store (blocking calls: the HUD runs them in a thread).

Only a missing segment is an error. Every other missing piece (the state log, frames, a kind's verdict, the
combined score) becomes a note and the replay shows what exists.
"""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel, ValidationError

from zelda_rlaif.errors import ObjectNotFound, ZeldaRlaifError
from zelda_rlaif.events import JudgeKind, SegmentExported, SegmentScored
from zelda_rlaif.replay.milestones import milestone_marks, profile_milestones
from zelda_rlaif.replay.model import KindVerdict, Replay, ReplayStep
from zelda_rlaif.segments import StateLogError, parse_state_log
from zelda_rlaif.storage import ObjectStore, keys
from zelda_rlaif.verdicts import UnjudgedRecord, VerdictRecord

M = TypeVar("M", bound=BaseModel)

# Every animation frame is held in memory while the video is written (~1 MB each at the default scale, twice
# over while a GIF is encoded); a default 300-step segment has 75.
MAX_ANIMATION_FRAMES = 120


class SegmentNotFound(ObjectNotFound):
    """No exported segment of that id (in that epoch) in the run."""


class UnreadableSegment(ZeldaRlaifError):
    """The segment's manifest is not a ``SegmentExported`` this version can read."""


def find_epoch(store: ObjectStore, run_id: str, segment_id: str) -> int:
    """The epoch a segment was exported in (lists every key of the run's segments: pass the epoch when known)."""
    for key in store.list(keys.run_segments(run_id)):
        if keys.is_segment_manifest(key):
            epoch = keys.epoch_of(key)
            if epoch is not None and key == keys.segment_manifest(run_id, epoch, segment_id):
                return epoch
    raise SegmentNotFound(
        f"no segment {segment_id!r} in run {run_id!r} of the store {store.url}: check the segment id (the HUD's "
        f"segment browser and the store's {keys.run_segments(run_id)} list them) and the run (--run-id)")


def load_manifest(store: ObjectStore, run_id: str, segment_id: str, epoch: int | None = None) -> SegmentExported:
    if epoch is None:
        epoch = find_epoch(store, run_id, segment_id)
    key = keys.segment_manifest(run_id, epoch, segment_id)
    try:
        raw = store.get_bytes(key)
    except ObjectNotFound:
        raise SegmentNotFound(
            f"no segment {segment_id!r} in epoch {epoch} of run {run_id!r} (store {store.url}): leave out the "
            "epoch to search every epoch of the run") from None
    try:
        return SegmentExported.model_validate_json(raw)
    except ValidationError as exc:
        raise UnreadableSegment(f"{key} is not a segment manifest this version reads: {_first_error(exc)}") from None


def load_replay(store: ObjectStore, run_id: str, segment_id: str, epoch: int | None = None) -> Replay:
    """Everything a replay of the segment shows. Raises ``SegmentNotFound`` when there is no such segment."""
    manifest = load_manifest(store, run_id, segment_id, epoch)
    run, epoch, seg = manifest.run_id, manifest.epoch, manifest.segment_id
    notes: list[str] = []

    steps = _steps(store, manifest, notes)
    listed = set(store.list(keys.segment_frames(run, epoch, seg)))
    stored = [s for s in manifest.frame_steps if keys.segment_frame(run, epoch, seg, s) in listed]
    if len(stored) < len(manifest.frame_steps):
        notes.append(f"{len(manifest.frame_steps) - len(stored)} of the {len(manifest.frame_steps)} frames the "
                     "manifest lists are not in the store: those steps show no screen")
    if stored:
        timeline = list(manifest.frame_steps)
    else:
        timeline = [s.step for s in steps[::manifest.frame_every]]
        if not timeline:
            notes.append("the segment has neither frames nor a state log: only its verdicts can be shown")
    if len(timeline) > MAX_ANIMATION_FRAMES:
        notes.append(f"the animation shows {MAX_ANIMATION_FRAMES} of the segment's {len(timeline)} frames, evenly "
                     "spread, to keep its size in bounds")
        timeline = [timeline[i * len(timeline) // MAX_ANIMATION_FRAMES] for i in range(MAX_ANIMATION_FRAMES)]

    found = profile_milestones(manifest.profile)
    if isinstance(found, str):
        notes.append(found)
        marks = []
    else:
        marks = milestone_marks(found, steps)
        unreadable = [m.name for m in marks if not m.readable]
        if unreadable:
            notes.append(f"the state log lacks the RAM fields that {', '.join(unreadable)} read: not shown")

    unjudged = _read(store, keys.unjudged_segment(run, epoch, seg), UnjudgedRecord, notes)
    verdicts = [_verdict(store, manifest, kind, unjudged, notes) for kind in JudgeKind]
    scored = _read(store, keys.scored_segment(run, epoch, seg), SegmentScored, notes)
    return Replay(manifest=manifest, steps=steps, stored_frames=stored, timeline=timeline, milestones=marks,
                  verdicts=verdicts, scored=scored, unjudged=unjudged, notes=notes)


def load_frame(store: ObjectStore, manifest: SegmentExported, step: int) -> bytes:
    return store.get_bytes(keys.segment_frame(manifest.run_id, manifest.epoch, manifest.segment_id, step))


def _steps(store: ObjectStore, manifest: SegmentExported, notes: list[str]) -> list[ReplayStep]:
    key = keys.segment_states(manifest.run_id, manifest.epoch, manifest.segment_id)
    try:
        raw = store.get_bytes(key)
    except ObjectNotFound:
        notes.append(f"the state log {key} is missing: the panel shows no state")
        return []
    try:
        records = parse_state_log(raw)
    except StateLogError as exc:
        notes.append(f"{key}: {exc}: the state log stops there")
        records = exc.records_before
    return [ReplayStep(step=r.step, action_name=r.action_name, reward=r.reward, components=r.components,
                       state=r.state) for r in records]


def _verdict(store: ObjectStore, manifest: SegmentExported, kind: JudgeKind, unjudged: UnjudgedRecord | None,
             notes: list[str]) -> KindVerdict:
    key = keys.verdict(manifest.run_id, manifest.epoch, manifest.segment_id, kind.value)
    record = _read(store, key, VerdictRecord, notes)
    if record is not None:
        return KindVerdict(kind=kind, record=record)
    gave_up = unjudged.reasons.get(kind.value) if unjudged else None
    if gave_up is not None:
        why = f"the {kind.value} judge gave up after {gave_up.deliveries} deliveries: {gave_up.reason}"
    elif store.exists(key):
        why = f"the {kind.value} verdict at {key} could not be read"
    else:
        why = f"not judged yet by the {kind.value} judge"
    return KindVerdict(kind=kind, record=None, missing=why)


def _read(store: ObjectStore, key: str, model: type[M], notes: list[str]) -> M | None:
    try:
        raw = store.get_bytes(key)
    except ObjectNotFound:
        return None
    try:
        return model.model_validate_json(raw)
    except ValidationError as exc:
        notes.append(f"{key} is not a {model.__name__} this version reads ({_first_error(exc)}): not shown")
        return None


def _first_error(exc: ValidationError) -> str:
    error = exc.errors(include_url=False)[0]
    return f"{'.'.join(str(p) for p in error['loc']) or 'value'}: {error['msg']}"
