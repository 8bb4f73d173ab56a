"""What the HUD knows about each training run, folded from the events it has seen.

Everything is bounded: recent lists are ring buffers, counters are integers, and only the last few runs are
kept. The HUD shows one run at a time: the configured one, or else the most recently *started* one (the
run whose first event is newest), so two runs publishing at once do not make the page flip between them.
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from zelda_rlaif.events import (
    DeadLetter,
    EpochExported,
    GuidanceSuggestion,
    LiveFrame,
    LiveMetrics,
    RewardModelUpdated,
    ScoresReady,
    SegmentExported,
    SegmentJudged,
    SegmentScored,
)
from zelda_rlaif.subjects import SEGMENT_EXPORTED

Room = tuple[int, int]  # (group, room id); room id = (row << 4) | col


@dataclass(frozen=True)
class Limits:
    history_points: int
    recent_items: int


@dataclass
class EnvView:
    env_id: str
    step: int
    state: dict[str, float | int | bool | str]
    frame_message: str  # the latest frame as sent to browsers, re-sent when one starts watching this env
    frames: int = 0

    def summary(self) -> dict[str, Any]:
        return {"env_id": self.env_id, "step": self.step, "frames": self.frames}


@dataclass
class EpochProgress:
    """Pipeline counters of one epoch as seen on the bus."""

    segments_exported: int = 0
    judged: Counter[str] = field(default_factory=Counter)
    scored: int = 0
    unjudged: set[str] = field(default_factory=set)  # segment ids a judge gave up on (dead-lettered)
    announced: int | None = None  # segments the trainer said the epoch has (epoch.exported)
    scores_ready: bool = False

    def as_dict(self, epoch: int) -> dict[str, Any]:
        expected = self.announced if self.announced is not None else self.segments_exported
        return {
            "epoch": epoch,
            "segments_exported": self.segments_exported,
            "announced": self.announced,
            "judged": dict(self.judged),
            "scored": self.scored,
            "unjudged": len(self.unjudged),
            "pending": max(expected - self.scored - len(self.unjudged), 0),
            "scores_ready": self.scores_ready,
        }


def _as_room(state: dict[str, float | int | bool | str]) -> Room | None:
    group, room = _count(state.get("group")), _count(state.get("room"))
    return (group, room) if group is not None and room is not None else None


def _count(value: object) -> int | None:
    # bool is an int subclass, and a flag is never a room number
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


class RunView:
    def __init__(self, run_id: str, limits: Limits, first_event_at: datetime) -> None:
        self.run_id = run_id
        self.started_at = first_event_at
        self.last_event_at = first_event_at
        self.metrics: LiveMetrics | None = None
        self.history: deque[dict[str, Any]] = deque(maxlen=limits.history_points)
        self.envs: dict[str, EnvView] = {}
        self._default_env: str | None = None
        self.time_in_room: Counter[Room] = Counter()  # frames seen per room, across all envs
        self.discovered: set[Room] = set()
        self.verdicts: deque[SegmentJudged] = deque(maxlen=limits.recent_items)
        self.scored: deque[SegmentScored] = deque(maxlen=limits.recent_items)
        self.reward_models: deque[RewardModelUpdated] = deque(maxlen=limits.recent_items)
        self.guidance: deque[GuidanceSuggestion] = deque(maxlen=limits.recent_items)
        self.dead_letters: deque[DeadLetter] = deque(maxlen=limits.recent_items)
        self.dead_letter_count = 0
        self.epochs: dict[int, EpochProgress] = {}

    def touch(self, at: datetime) -> None:
        self.started_at = min(self.started_at, at)
        self.last_event_at = max(self.last_event_at, at)

    def epoch(self, n: int) -> EpochProgress:
        return self.epochs.setdefault(n, EpochProgress())

    # Folding events in. Each returns True when something a browser shows changed shape (e.g. a new env).

    def add_frame(self, frame: LiveFrame, message: str) -> bool:
        env = self.envs.get(frame.env_id)
        is_new = env is None
        if env is None:
            env = self.envs[frame.env_id] = EnvView(frame.env_id, frame.step, frame.state, message)
            if self._default_env is None or frame.env_id < self._default_env:
                self._default_env = frame.env_id
        env.step, env.state, env.frame_message = frame.step, frame.state, message
        env.frames += 1
        room = _as_room(frame.state)
        if room is not None:
            self.time_in_room[room] += 1
            self.discovered.add(room)
        return is_new

    def add_metrics(self, metrics: LiveMetrics) -> dict[str, Any]:
        """Returns the chart point it added (the page appends the same)."""
        self.metrics = metrics
        point = metric_point(metrics)
        self.history.append(point)
        self.discovered.update((int(g), int(r)) for g, r in metrics.rooms_visited)
        return point

    def add_segment_exported(self, event: SegmentExported) -> None:
        self.epoch(event.epoch).segments_exported += 1

    def add_judged(self, event: SegmentJudged) -> None:
        self.epoch(event.epoch).judged[event.kind.value] += 1
        self.verdicts.append(event)

    def add_scored(self, event: SegmentScored) -> None:
        self.epoch(event.epoch).scored += 1
        self.scored.append(event)

    def add_epoch_exported(self, event: EpochExported) -> None:
        self.epoch(event.epoch).announced = event.segments_exported

    def add_scores_ready(self, event: ScoresReady) -> None:
        self.epoch(event.epoch).scores_ready = True

    def add_reward_model(self, event: RewardModelUpdated) -> None:
        self.reward_models.append(event)

    def add_guidance(self, event: GuidanceSuggestion) -> None:
        self.guidance.append(event)

    def add_dead_letter(self, letter: DeadLetter) -> None:
        self.dead_letter_count += 1
        self.dead_letters.append(letter)
        # A segment a judge could not process will never be scored: count it as unjudged, once.
        if letter.original_subject == SEGMENT_EXPORTED.subject and letter.epoch is not None and letter.segment_id:
            self.epoch(letter.epoch).unjudged.add(letter.segment_id)

    # Views for browsers and the API

    def default_env(self) -> str | None:
        """The env a browser sees until it picks one: the first by name, stable as envs come and go."""
        return self._default_env

    def exploration(self) -> dict[str, Any]:
        groups: dict[int, dict[int, int]] = {}
        for group, room in self.discovered:
            groups.setdefault(group, {})[room] = self.time_in_room.get((group, room), 0)
        return {
            "groups": {str(g): {str(r): n for r, n in sorted(rooms.items())} for g, rooms in sorted(groups.items())},
            "rooms_discovered": len(self.discovered),
            "positions": {
                env_id: list(where) for env_id, env in self.envs.items() if (where := _as_room(env.state)) is not None
            },
        }

    def pipeline(self) -> dict[str, Any]:
        epochs = [self.epochs[n].as_dict(n) for n in sorted(self.epochs)]
        return {
            "epochs": epochs,
            "segments_exported": sum(e["segments_exported"] for e in epochs),
            "scored": sum(e["scored"] for e in epochs),
            "unjudged": sum(e["unjudged"] for e in epochs),
            "pending": sum(e["pending"] for e in epochs),
            "dead_letters": self.dead_letter_count,
        }

    def snapshot(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "metrics": self.metrics.model_dump(mode="json") if self.metrics else None,
            "history": list(self.history),
            "envs": self.env_list(),
            "exploration": self.exploration(),
            "pipeline": self.pipeline(),
            "verdicts": [v.model_dump(mode="json") for v in self.verdicts],
            "scored": [s.model_dump(mode="json") for s in self.scored],
            "reward_models": [r.model_dump(mode="json") for r in self.reward_models],
            "guidance": [g.model_dump(mode="json") for g in self.guidance],
            "dead_letters": [dead_letter_summary(d) for d in self.dead_letters],
        }

    def env_list(self) -> list[dict[str, Any]]:
        return [self.envs[e].summary() for e in sorted(self.envs)]


def metric_point(metrics: LiveMetrics) -> dict[str, Any]:
    """One chart point per training iteration: the epoch so far under the metric names of ``EpochReport.flat``
    (the page draws these and the stored epochs' reports on the same axes, against env steps)."""
    return {
        "source": "live",
        "epoch": metrics.epoch,
        "env_steps": metrics.env_steps,
        "metrics": metrics.flat(),
        "reward_components": metrics.reward_components,
    }


def dead_letter_summary(letter: DeadLetter) -> dict[str, Any]:
    """A dead letter without its payload (which may be large and is of no use on the page)."""
    return letter.model_dump(mode="json", exclude={"payload"})


class RunTracker:
    """The runs the HUD keeps, and which one it shows."""

    def __init__(self, limits: Limits, *, pinned: str | None, max_runs: int) -> None:
        self.limits = limits
        self.pinned = pinned
        self.max_runs = max_runs
        self.runs: dict[str, RunView] = {}
        self.current_id: str | None = pinned

    @property
    def current(self) -> RunView | None:
        return self.runs.get(self.current_id) if self.current_id else None

    def view(self, run_id: str, at: datetime) -> tuple[RunView | None, bool]:
        """The run's view (None when another run is pinned) and whether the shown run changed."""
        if self.pinned is not None and run_id != self.pinned:
            return None, False
        view = self.runs.get(run_id)
        if view is None:
            view = self.runs[run_id] = RunView(run_id, self.limits, at)
        view.touch(at)
        switched = False
        current = self.current
        if self.current_id != run_id and (current is None or view.started_at > current.started_at):
            self.current_id, switched = run_id, True
        self._evict()
        return view, switched

    def _evict(self) -> None:
        while len(self.runs) > self.max_runs:
            oldest = min((v for v in self.runs.values() if v.run_id != self.current_id),
                         key=lambda v: v.last_event_at)
            del self.runs[oldest.run_id]

    def known(self) -> list[dict[str, Any]]:
        return [
            {"run_id": v.run_id, "started_at": v.started_at.isoformat(), "last_event_at": v.last_event_at.isoformat()}
            for v in sorted(self.runs.values(), key=lambda v: v.started_at, reverse=True)
        ]
