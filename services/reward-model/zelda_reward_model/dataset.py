"""The training data of one epoch: judged segments (with a window of earlier epochs) and their states.

Reads ``scores/{run}/epoch_N/scores.jsonl`` (one ``SegmentScored`` per line) and, for each scored segment, the
``observation`` of every ``StepRecord`` in its state log. A segment whose state log is missing, empty or
invalid is left out and named in ``skipped`` (it ends up in the model's metadata), never silently dropped.
"""

from __future__ import annotations

import logging
import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
from pydantic import ValidationError

from zelda_rlaif.errors import ObjectNotFound, ZeldaRlaifError
from zelda_rlaif.events import SegmentScored
from zelda_rlaif.segments import OBSERVATION_SIZE, StepRecord
from zelda_rlaif.storage import keys
from zelda_rlaif.storage.base import ObjectStore

log = logging.getLogger(__name__)


class DatasetError(ZeldaRlaifError):
    """The epoch's scores cannot be used; retrying will not help until the data is fixed."""


@dataclass(frozen=True)
class ScoredSegments:
    """Segments in a fixed order (epoch, then segment id) with their states concatenated in that order."""

    segment_ids: list[str]
    epochs: npt.NDArray[np.int64]
    combined: npt.NDArray[np.float64]
    observations: npt.NDArray[np.float32]
    offsets: npt.NDArray[np.int64]
    lengths: npt.NDArray[np.int64]
    trained_on_epochs: list[int]
    skipped: dict[str, str] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.segment_ids)

    def states(self, index: int) -> npt.NDArray[np.float32]:
        start = int(self.offsets[index])
        return self.observations[start:start + int(self.lengths[index])]


def window(epoch: int, earlier: int) -> list[int]:
    return list(range(max(0, epoch - earlier), epoch + 1))


def read_scores(store: ObjectStore, run_id: str, epoch: int) -> list[SegmentScored] | None:
    """The epoch's scored segments (the last line wins for a repeated id), or ``None`` if there is no file."""
    key = keys.epoch_scores(run_id, epoch)
    try:
        raw = store.get_bytes(key)
    except ObjectNotFound:
        return None
    by_segment: dict[str, SegmentScored] = {}
    for number, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            scored = SegmentScored.model_validate_json(line)
        except ValidationError as exc:
            raise DatasetError(
                f"{key} line {number} is not a SegmentScored record ({exc.errors(include_url=False)[0]['msg']}); "
                "fix or rewrite the file, then republish scores.ready"
            ) from exc
        if scored.run_id != run_id or scored.epoch != epoch:
            raise DatasetError(
                f"{key} line {number} belongs to run {scored.run_id!r} epoch {scored.epoch}, "
                f"not run {run_id!r} epoch {epoch}; the file was written to the wrong place"
            )
        by_segment[scored.segment_id] = scored
    return list(by_segment.values())


def read_observations(store: ObjectStore, run_id: str, epoch: int, segment_id: str) -> npt.NDArray[np.float32]:
    """The ``(steps, 128)`` observations of a segment's state log."""
    raw = store.get_bytes(keys.segment_states(run_id, epoch, segment_id))
    rows = [StepRecord.model_validate_json(line).observation for line in raw.splitlines() if line.strip()]
    return np.asarray(rows, dtype=np.float32).reshape(len(rows), OBSERVATION_SIZE)


def _observations_or_reason(
    store: ObjectStore, run_id: str, scored: SegmentScored
) -> npt.NDArray[np.float32] | str:
    key = keys.segment_states(run_id, scored.epoch, scored.segment_id)
    try:
        observations = read_observations(store, run_id, scored.epoch, scored.segment_id)
    except ObjectNotFound:
        return f"state log {key} is missing"
    except ValidationError as exc:
        return f"state log {key} has an invalid record: {exc.errors(include_url=False)[0]['msg']}"
    if observations.shape[0] == 0:
        return f"state log {key} is empty"
    if not np.all(np.isfinite(observations)):
        return f"state log {key} has non-finite observations"
    return observations


def load_window(
    store: ObjectStore, run_id: str, epoch: int, earlier_epochs: int, workers: int = 8
) -> ScoredSegments:
    """Scores of ``epoch`` and up to ``earlier_epochs`` before it, with every usable segment's states."""
    scored: dict[str, SegmentScored] = {}
    seen_epochs: list[int] = []
    for e in window(epoch, earlier_epochs):
        rows = read_scores(store, run_id, e)
        if rows is None:
            if e == epoch:
                raise DatasetError(
                    f"{keys.epoch_scores(run_id, e)} is missing in {store.url}; the judge writes it before "
                    "publishing scores.ready, so check the judge's logs and republish scores.ready once it exists"
                )
            log.info("no scores for earlier epoch %d; the window starts later", e)
            continue
        seen_epochs.append(e)
        for row in rows:
            scored[row.segment_id] = row  # a later epoch wins if an id ever repeats

    skipped: dict[str, str] = {}
    candidates: list[SegmentScored] = []
    for row in sorted(scored.values(), key=lambda r: (r.epoch, r.segment_id)):
        if math.isfinite(row.combined):
            candidates.append(row)
        else:
            skipped[row.segment_id] = f"combined score is {row.combined}"

    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="state-logs") as pool:
        loaded = list(pool.map(lambda row: _observations_or_reason(store, run_id, row), candidates))

    kept: list[SegmentScored] = []
    arrays: list[npt.NDArray[np.float32]] = []
    for row, result in zip(candidates, loaded, strict=True):
        if isinstance(result, str):
            skipped[row.segment_id] = result
            log.warning("segment %s left out of reward-model training: %s", row.segment_id, result)
        else:
            kept.append(row)
            arrays.append(result)

    lengths = np.array([a.shape[0] for a in arrays], dtype=np.int64)
    offsets = np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(np.int64) if len(arrays) else lengths.copy()
    observations = np.concatenate(arrays) if arrays else np.zeros((0, OBSERVATION_SIZE), dtype=np.float32)
    return ScoredSegments(
        segment_ids=[r.segment_id for r in kept],
        epochs=np.array([r.epoch for r in kept], dtype=np.int64),
        combined=np.array([r.combined for r in kept], dtype=np.float64),
        observations=observations,
        offsets=offsets,
        lengths=lengths,
        trained_on_epochs=seen_epochs,
        skipped=skipped,
    )
