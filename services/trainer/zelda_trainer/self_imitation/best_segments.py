"""The best judged segments of the run so far, with the observations, actions and returns they were played with.

After an epoch is judged (its ``scores.jsonl`` is closed), its segments compete with the ones kept from earlier
epochs. Two kinds stay:

- for each quest milestone of the game profile, the N best-scoring segments that reached it (``per_milestone``).
  Without them each seed imitated only the one branch of the quest its best segments happened to take, and
  forgot the milestones of the other branch, even the key it had learned first (docs/results.md, section 6);
- then the K best-scoring segments of any kind (``top_k``).

Their state logs carry every step's observation, action and reward (``StepRecord``), which is all self-imitation
needs, so older segments work as they are. A record holds the observation *after* its action, so each action is
imitated on the record before it (``imitated_steps``), and only where it changed the game state. A segment whose
state log is missing or unreadable is left out with a warning, and the next best takes its place. Their end states,
or the start states of the best segments on the way from the game's start (``start_states``), are where judged
starts begin.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import islice

import numpy as np
import numpy.typing as npt

from zelda_rlaif.errors import ObjectNotFound
from zelda_rlaif.events import SegmentScored
from zelda_rlaif.game.profiles.base import Milestone
from zelda_rlaif.replay.milestones import milestone_marks, reached_in
from zelda_rlaif.scores import read_epoch_scores
from zelda_rlaif.segments import (
    OBSERVATION_SIZE,
    EndStateError,
    StateLogError,
    StepRecord,
    parse_state_log,
    unpack_end_state,
)
from zelda_rlaif.storage import ObjectStore, keys
from zelda_trainer.env_config import StartStates
from zelda_trainer.settings import JudgedStartBalance, JudgedStartPoint

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ImitationData:
    """The kept segments' steps, concatenated: what the learner imitates (plain arrays, so Ray can ship them)."""

    observations: npt.NDArray[np.float32]  # (steps, OBSERVATION_SIZE): what each action was chosen on
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


def imitated_steps(records: Sequence[StepRecord]) -> list[int]:
    """The indices of the records whose action self-imitation learns, each on the observation of the record before.

    A record holds the observation and state *after* its action (the exporter writes what ``env.step`` returned),
    so record i's action was chosen on record i - 1's observation; the first record's was chosen on an observation
    the segment does not hold. Imitating record i's action on its own observation taught the action of the step
    before. Steps whose action left the game state as it was (pushing against a wall, a swing at nothing) are left
    out: in the kept segments of one run the player stood still in 18%-62% of the steps, and that run's policy came to
    push against the wall where its best segments had pushed on their way to the gate (docs/results.md, section 20)."""
    return [i for i in range(1, len(records)) if records[i].state != records[i - 1].state]


@dataclass
class _Candidate:
    row: SegmentScored
    milestones: tuple[str, ...] = ()  # reached in the segment itself
    records: list[StepRecord] = field(default_factory=list)  # held only while the segment is kept
    readable: bool = True  # False once its state log turned out missing or unreadable: never chosen


class BestSegments:
    def __init__(self, store: ObjectStore, run_id: str, top_k: int, gamma: float,
                 milestones: Sequence[Milestone] = (), per_milestone: int = 0) -> None:
        self.store = store
        self.run_id = run_id
        self.top_k = top_k
        self.gamma = gamma
        self.milestones = tuple(milestones)
        self.per_milestone = per_milestone
        self.epochs_read: set[int] = set()
        self._candidates: list[_Candidate] = []  # every readable judged segment, best first
        self._kept: list[_Candidate] = []
        self._states: dict[tuple[str, JudgedStartPoint], bytes | None] = {}  # read once (None: the segment has none)

    def add_epochs(self, epochs: list[int]) -> bool:
        """Let the closed epochs among ``epochs`` compete; whether the kept segments changed. An epoch whose scores
        are not stored yet is left for a later call."""
        for epoch in sorted(set(epochs) - self.epochs_read):
            scores = read_epoch_scores(self.store, self.run_id, epoch)
            if scores is None:
                continue
            self.epochs_read.add(epoch)
            for problem in scores.unreadable:
                log.warning("self-imitation leaves out an unreadable score: %s", problem)
            for row in scores.rows:
                if np.isfinite(row.combined):
                    self._candidates.append(self._candidate(row))
        # Best first; ties go to the earlier epoch and segment id, so reruns keep the same segments.
        self._candidates.sort(key=lambda c: (-c.row.combined, c.row.epoch, c.row.segment_id))
        chosen = self._choose(self._readable)
        self._candidates = [c for c in self._candidates if c.readable]
        kept = [c for c in self._candidates if c.row.segment_id in chosen]
        for candidate in self._candidates:
            if candidate.row.segment_id not in chosen:
                candidate.records = []  # only the kept segments' steps stay in memory
        changed = [c.row.segment_id for c in kept] != [c.row.segment_id for c in self._kept]
        self._kept = kept
        return changed

    def _choose(self, usable: Callable[[_Candidate], bool]) -> set[str]:
        """The ids of the N best usable candidates per milestone, then of the K best other usable ones."""
        chosen: set[str] = set()
        for milestone in self.milestones if self.per_milestone else ():
            reaching = (c for c in self._candidates if milestone.name in c.milestones and usable(c))
            chosen.update(c.row.segment_id for c in islice(reaching, self.per_milestone))
        best = (c for c in self._candidates if c.row.segment_id not in chosen and usable(c))
        chosen.update(c.row.segment_id for c in islice(best, self.top_k))
        return chosen

    def _candidate(self, row: SegmentScored) -> _Candidate:
        """The segment, with the milestones it reached when there are milestones to look for (its state log is
        read now for that, and otherwise only once it is chosen)."""
        candidate = _Candidate(row)
        if self.milestones and self.per_milestone and self._readable(candidate):
            candidate.milestones = tuple(reached_in(milestone_marks(self.milestones, candidate.records)))
        return candidate

    def _readable(self, candidate: _Candidate) -> bool:
        """Whether the candidate's state log could be read (read now if it is not held)."""
        if candidate.readable and not candidate.records:
            candidate.records = self._records(candidate.row)
            candidate.readable = bool(candidate.records)
        return candidate.readable

    def _records(self, row: SegmentScored) -> list[StepRecord]:
        key = keys.segment_states(self.run_id, row.epoch, row.segment_id)
        try:
            return parse_state_log(self.store.get_bytes(key))
        except ObjectNotFound:
            log.warning("self-imitation leaves out segment %s: its state log %s is missing", row.segment_id, key)
        except StateLogError as exc:
            log.warning("self-imitation leaves out segment %s: %s of %s", row.segment_id, exc, key)
        return []

    def start_states(self, point: JudgedStartPoint,
                     balance: JudgedStartBalance = JudgedStartBalance.SEGMENTS) -> StartStates:
        """Where judged starts begin (``pack_end_state``: as stored), best segment first. ``end``: the kept segments'
        end states. ``start``: the states that the best segments on the way from the game's start began from (the
        same choice, N per milestone and K more, among segments that have a start state: every segment but the
        first of an episode from the game's start), so an episode begins one segment before a judged success and
        practises the way there. A segment stored without the state (judged starts were off) or with an
        unreadable one is left out. ``balance``: how likely each is picked (``JudgedStartBalance``)."""
        if point == JudgedStartPoint.END:
            chosen = self._with_states(self._kept, point)
        else:
            ids = self._choose(lambda c: c.readable and self._state(c.row, point) is not None)
            chosen = self._with_states([c for c in self._candidates if c.row.segment_id in ids], point)
        states = tuple(state for _, state in chosen)
        if balance == JudgedStartBalance.SEGMENTS or not chosen:
            return StartStates(states)
        # One group per milestone reached in a chosen segment, one for the chosen segments that reached none; each
        # group is picked alike, then each of its segments alike.
        groups = [[i for i, (c, _) in enumerate(chosen) if m.name in c.milestones] for m in self.milestones]
        groups.append([i for i, (c, _) in enumerate(chosen) if not c.milestones])
        groups = [group for group in groups if group]
        weights = [0.0] * len(chosen)
        for group in groups:
            for i in group:
                weights[i] += 1 / (len(groups) * len(group))
        return StartStates(states, tuple(weights))

    def kept_end_states(self) -> list[tuple[SegmentScored, bytes]]:
        """The kept segments' end states with the score row of the segment each belongs to, best first."""
        return [(c.row, state) for c, state in self._with_states(self._kept, JudgedStartPoint.END)]

    def _with_states(self, candidates: list[_Candidate], point: JudgedStartPoint) -> list[tuple[_Candidate, bytes]]:
        """The ``candidates`` that have a readable ``point`` state, in order, each with that state."""
        return [(c, state) for c in candidates if (state := self._state(c.row, point)) is not None]

    def _state(self, row: SegmentScored, point: JudgedStartPoint) -> bytes | None:
        """The segment's stored start or end state, read once (None: it has none, or an unreadable one)."""
        if (row.segment_id, point) not in self._states:
            key = (keys.segment_start_state if point == JudgedStartPoint.START else keys.segment_end_state)(
                self.run_id, row.epoch, row.segment_id)
            state: bytes | None = None
            try:
                state = self.store.get_bytes(key)
                unpack_end_state(state)  # checked once here rather than in every env
            except ObjectNotFound:  # stored while judged starts were off, or (start) not on the way from the start
                log.debug("segment %s has no %s state to start episodes from", row.segment_id, point)
            except EndStateError as exc:
                log.warning("judged starts leave out segment %s: %s of %s", row.segment_id, exc, key)
                state = None
            self._states[row.segment_id, point] = state
        return self._states[row.segment_id, point]

    def data(self) -> ImitationData:
        observations: list[list[float]] = []
        actions: list[int] = []
        returns: list[float] = []
        for candidate in self._kept:
            records = candidate.records
            to_go = discounted_returns(np.array([r.reward for r in records], np.float32), self.gamma)
            for step in imitated_steps(records):
                observations.append(records[step - 1].observation)
                actions.append(records[step].action)
                returns.append(float(to_go[step]))
        return ImitationData(
            observations=np.array(observations, np.float32).reshape(len(actions), OBSERVATION_SIZE),
            actions=np.array(actions, np.int64),
            returns=np.array(returns, np.float32),
            segment_ids=tuple(c.row.segment_id for c in self._kept),
            combined=tuple(c.row.combined for c in self._kept),
        )
