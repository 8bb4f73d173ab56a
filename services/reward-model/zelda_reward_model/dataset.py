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

from zelda_rlaif.errors import ObjectNotFound, ZeldaRlaifError
from zelda_rlaif.events import SegmentScored
from zelda_rlaif.scores import read_epoch_scores
from zelda_rlaif.segments import OBSERVATION_SIZE, StateLogError, parse_state_log
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


def read_observations(store: ObjectStore, run_id: str, epoch: int, segment_id: str) -> npt.NDArray[np.float32]:
    """The ``(steps, 128)`` observations of a segment's state log."""
    records = parse_state_log(store.get_bytes(keys.segment_states(run_id, epoch, segment_id)))
    return np.asarray([r.observation for r in records], dtype=np.float32).reshape(len(records), OBSERVATION_SIZE)


def _observations_or_reason(
    store: ObjectStore, run_id: str, scored: SegmentScored
) -> npt.NDArray[np.float32] | str:
    key = keys.segment_states(run_id, scored.epoch, scored.segment_id)
    try:
        observations = read_observations(store, run_id, scored.epoch, scored.segment_id)
    except ObjectNotFound:
        return f"state log {key} is missing"
    except StateLogError as exc:
        return f"state log {key}: {exc}"
    if observations.shape[0] == 0:
        return f"state log {key} is empty"
    if not np.all(np.isfinite(observations)):
        return f"state log {key} has non-finite observations"
    return observations


def load_window(
    store: ObjectStore, run_id: str, epoch: int, earlier_epochs: int, workers: int = 8,
    scores_version: str | None = None,
) -> ScoredSegments:
    """Scores of ``epoch`` and up to ``earlier_epochs`` before it, with every usable segment's states.

    ``scores_version``: read that re-judged version of every epoch instead of the live scores; an earlier epoch
    without it is left out of the window (never mixed with live scores, which rank by other settings).
    """
    scored: dict[str, SegmentScored] = {}
    seen_epochs: list[int] = []
    for e in window(epoch, earlier_epochs):
        scores = read_epoch_scores(store, run_id, e, version=scores_version)
        if scores is None:
            if e == epoch and scores_version is not None:
                raise DatasetError(
                    f"run {run_id} epoch {e} has no scores version {scores_version!r} in {store.url}; make it with "
                    f"zelda-rlaif judge --rejudge {run_id} --epoch {e} --version {scores_version}"
                )
            if e == epoch:
                raise DatasetError(
                    f"{keys.epoch_scores(run_id, e)} is missing in {store.url}; the judge writes it before "
                    "publishing scores.ready, so check the judge's logs and republish scores.ready once it exists"
                )
            log.info("no scores for earlier epoch %d; the window starts later", e)
            continue
        if scores.unreadable:  # refused, not trained on in part: a dropped line would go unnoticed
            more = f" (and {len(scores.unreadable) - 1} more unreadable lines)" if len(scores.unreadable) > 1 else ""
            raise DatasetError(f"{scores.unreadable[0]}{more}; fix or rewrite the file, then republish scores.ready")
        seen_epochs.append(e)
        for row in scores.rows:
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
