"""The K best judged segments of the run so far, with the observations, actions and returns they were played with.

After an epoch is judged (its ``scores.jsonl`` is closed), its segments compete with the ones kept from earlier
epochs on the judges' combined score; the K best stay. Their state logs carry every step's observation, action
and reward (``StepRecord``), which is all self-imitation needs, so older segments work as they are. A segment
whose state log is missing or unreadable is left out with a warning, and the next best takes its place.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from zelda_rlaif.errors import ObjectNotFound
from zelda_rlaif.events import SegmentScored
from zelda_rlaif.scores import read_epoch_scores
from zelda_rlaif.segments import OBSERVATION_SIZE, StateLogError, StepRecord, parse_state_log
from zelda_rlaif.storage import ObjectStore, keys

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ImitationData:
    """The kept segments' steps, concatenated: what the learner imitates (plain arrays, so Ray can ship them)."""

    observations: npt.NDArray[np.float32]  # (steps, OBSERVATION_SIZE)
    actions: npt.NDArray[np.int64]  # (steps,)
    returns: npt.NDArray[np.float32]  # (steps,) discounted return from each step to the segment's end
    segment_ids: tuple[str, ...]
    combined: tuple[float, ...]  # the judges' combined score of each kept segment, best first

    def __len__(self) -> int:
        return int(self.actions.shape[0])


def discounted_returns(rewards: npt.NDArray[np.float32], gamma: float) -> npt.NDArray[np.float32]:
    """Return-to-go within the segment. Not bootstrapped past its end: that under-estimates the last steps'
    returns, so self-imitation (which only imitates returns above the value estimate) errs on imitating less."""
    returns = np.zeros_like(rewards)
    running = 0.0
    for step in range(len(rewards) - 1, -1, -1):
        running = float(rewards[step]) + gamma * running
        returns[step] = running
    return returns


class BestSegments:
    def __init__(self, store: ObjectStore, run_id: str, top_k: int, gamma: float) -> None:
        self.store = store
        self.run_id = run_id
        self.top_k = top_k
        self.gamma = gamma
        self.epochs_read: set[int] = set()
        self._kept: list[tuple[SegmentScored, list[StepRecord]]] = []

    def add_epochs(self, epochs: list[int]) -> bool:
        """Let the closed epochs among ``epochs`` compete; whether the kept segments changed. An epoch whose scores
        are not stored yet is left for a later call."""
        candidates = list(self._kept)
        for epoch in sorted(set(epochs) - self.epochs_read):
            scores = read_epoch_scores(self.store, self.run_id, epoch)
            if scores is None:
                continue
            self.epochs_read.add(epoch)
            for problem in scores.unreadable:
                log.warning("self-imitation leaves out an unreadable score: %s", problem)
            candidates += [(row, []) for row in scores.rows if np.isfinite(row.combined)]
        # Best first; ties go to the earlier epoch and segment id, so reruns keep the same segments.
        candidates.sort(key=lambda kept: (-kept[0].combined, kept[0].epoch, kept[0].segment_id))
        kept: list[tuple[SegmentScored, list[StepRecord]]] = []
        for row, records in candidates:
            if len(kept) == self.top_k:
                break
            records = records or self._records(row)
            if records:
                kept.append((row, records))
        changed = [row.segment_id for row, _ in kept] != [row.segment_id for row, _ in self._kept]
        self._kept = kept
        return changed

    def _records(self, row: SegmentScored) -> list[StepRecord]:
        key = keys.segment_states(self.run_id, row.epoch, row.segment_id)
        try:
            return parse_state_log(self.store.get_bytes(key))
        except ObjectNotFound:
            log.warning("self-imitation leaves out segment %s: its state log %s is missing", row.segment_id, key)
        except StateLogError as exc:
            log.warning("self-imitation leaves out segment %s: %s of %s", row.segment_id, exc, key)
        return []

    def data(self) -> ImitationData:
        steps = [record for _, records in self._kept for record in records]
        returns = [discounted_returns(np.array([r.reward for r in records], np.float32), self.gamma)
                   for _, records in self._kept]
        return ImitationData(
            observations=np.array([r.observation for r in steps], np.float32).reshape(len(steps), OBSERVATION_SIZE),
            actions=np.array([r.action for r in steps], np.int64),
            returns=np.concatenate(returns) if returns else np.zeros(0, np.float32),
            segment_ids=tuple(row.segment_id for row, _ in self._kept),
            combined=tuple(row.combined for row, _ in self._kept),
        )
