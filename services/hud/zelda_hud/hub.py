"""Where every NATS message enters the HUD: validate it, fold it into the run's view, fan it out.

All of this runs synchronously on the event loop (no awaits), so a browser's snapshot and the events that
follow it can never interleave, and a NATS callback returns in microseconds whatever the browsers do.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

from zelda_hud import wire
from zelda_hud.fanout import ClientChannel, Fanout
from zelda_hud.runs import Limits, RunTracker, RunView, dead_letter_summary
from zelda_hud.settings import HudSettings
from zelda_hud.telemetry import Telemetry
from zelda_rlaif.bus import InvalidMessage, Router
from zelda_rlaif.events import (
    DeadLetter,
    EpochExported,
    Event,
    GuidanceSuggestion,
    LiveFrame,
    LiveMetrics,
    RewardModelUpdated,
    ScoresReady,
    SegmentExported,
    SegmentJudged,
    SegmentScored,
)
from zelda_rlaif.subjects import (
    DEAD_LETTER,
    EPOCH_EXPORTED,
    LIVE_FRAMES,
    LIVE_GUIDANCE,
    LIVE_METRICS,
    REWARD_MODEL_UPDATED,
    SCORES_READY,
    SEGMENT_EXPORTED,
    SEGMENT_JUDGED,
    SEGMENT_SCORED,
    Topic,
)

log = logging.getLogger(__name__)

E = TypeVar("E", bound=Event)

EXPLORATION_INTERVAL_S = 1.0
PIPELINE_INTERVAL_S = 0.5
HEARTBEAT_INTERVAL_S = 2.0
INVALID_LOG_EVERY_S = 60.0
NATS_NOT_USED = "not used (finished run)"


@dataclass
class _Dirty:
    exploration: bool = False
    pipeline: bool = False


class Hub:
    def __init__(self, settings: HudSettings, telemetry: Telemetry) -> None:
        self.settings = settings
        self.telemetry = telemetry
        self.runs = RunTracker(
            Limits(history_points=settings.history_points, recent_items=settings.recent_items),
            pinned=settings.run_id,
            max_runs=settings.max_runs,
        )
        self.fanout = Fanout(settings.client_queue)
        self.frame_interval_s = 1.0 / settings.max_fps
        self.live = settings.live
        self.nats_state = "connecting" if settings.live else NATS_NOT_USED
        self.streams_followed: set[str] = set()
        self.unattributed_dead_letters = 0
        self.started = time.monotonic()
        self._dirty = _Dirty()
        self._last_heartbeat = 0.0
        self._invalid_logged_at: dict[str, float] = {}
        # Every message enters here (``router.dispatch``); each topic has a short kind name for metrics labels
        # (zelda_hud_messages_received{kind=...}) and logs.
        self.router: Router[[], None] = Router(self._invalid)
        self._kinds: dict[Topic[Event], str] = {}
        self._route("frame", LIVE_FRAMES, self._on_frame)
        self._route("metrics", LIVE_METRICS, self._on_metrics)
        self._route("guidance", LIVE_GUIDANCE, self._on_guidance)
        self._route("segment_exported", SEGMENT_EXPORTED, self._on_segment_exported)
        self._route("verdict", SEGMENT_JUDGED, self._on_verdict)
        self._route("scored", SEGMENT_SCORED, self._on_scored)
        self._route("epoch_exported", EPOCH_EXPORTED, self._on_epoch_event)
        self._route("scores_ready", SCORES_READY, self._on_epoch_event)
        self._route("reward_model", REWARD_MODEL_UPDATED, self._on_reward_model)
        self._route("dead_letter", DEAD_LETTER, self._on_dead_letter)
        telemetry.watch_fanout(self.fanout, lambda: self.nats_state == "connected")

    # Ingest

    def _route(self, kind: str, topic: Topic[E], handler: Callable[[E, RunView], None]) -> None:
        def ingest(event: E) -> None:
            self.telemetry.received.labels(kind).inc()
            view = self._view_of(event)
            if view is not None:
                handler(event, view)

        self._kinds[topic] = kind
        self.router.route(topic, ingest)

    def _view_of(self, event: Event) -> RunView | None:
        """The view of the event's run, or None when it is not shown (another run than the pinned one)."""
        run_id = getattr(event, "run_id", None)
        if run_id is None:  # a dead letter whose payload had no run id
            self.unattributed_dead_letters += 1
            return None
        view, switched = self.runs.view(run_id, event.emitted_at)
        if view is None:
            return None
        if switched:
            log.info("showing run %s", run_id)
            self.fanout.resync()
        return view

    def _invalid(self, invalid: InvalidMessage) -> None:
        """The HUD only reads: the message stays in its stream for its real consumers, so count it and say so."""
        if invalid.topic is None:
            return  # not a subject the HUD shows (it subscribes only to routed topics)
        kind = self._kinds[invalid.topic]
        self.telemetry.received.labels(kind).inc()
        self.telemetry.invalid.labels(kind).inc()
        now = time.monotonic()
        if now - self._invalid_logged_at.get(kind, -INVALID_LOG_EVERY_S) >= INVALID_LOG_EVERY_S:
            self._invalid_logged_at[kind] = now
            log.warning(
                "ignoring an invalid %s message on %s (the publisher does not follow zelda_rlaif.events; "
                "further ones are counted in zelda_hud_messages_invalid): %s",
                kind, invalid.subject, invalid.errors(limit=3),
            )

    def _is_shown(self, view: RunView) -> bool:
        return view.run_id == self.runs.current_id

    def _on_frame(self, frame: LiveFrame, view: RunView) -> None:
        message = wire.event_message("frame", frame)
        new_env = view.add_frame(frame, message)
        if not self._is_shown(view):
            return
        self._dirty.exploration = True
        if new_env:
            self.fanout.slot("envs", wire.message("envs", view.env_list()))
        self.fanout.frame(frame.env_id, message, view.default_env(), self.frame_interval_s)

    def _on_metrics(self, metrics: LiveMetrics, view: RunView) -> None:
        point = view.add_metrics(metrics)
        if self._is_shown(view):
            self._dirty.exploration = True
            self.fanout.event(wire.message("metrics", {"metrics": metrics.model_dump(mode="json"), "point": point}))

    def _on_guidance(self, event: GuidanceSuggestion, view: RunView) -> None:
        view.add_guidance(event)
        if self._is_shown(view):
            self.fanout.event(wire.event_message("guidance", event))

    def _on_segment_exported(self, event: SegmentExported, view: RunView) -> None:
        view.add_segment_exported(event)
        self._dirty.pipeline |= self._is_shown(view)

    def _on_verdict(self, event: SegmentJudged, view: RunView) -> None:
        view.add_judged(event)
        if self._is_shown(view):
            self._dirty.pipeline = True
            self.fanout.event(wire.event_message("verdict", event))

    def _on_scored(self, event: SegmentScored, view: RunView) -> None:
        view.add_scored(event)
        if self._is_shown(view):
            self._dirty.pipeline = True
            self.fanout.event(wire.event_message("scored", event))

    def _on_epoch_event(self, event: EpochExported | ScoresReady, view: RunView) -> None:
        if isinstance(event, EpochExported):
            view.add_epoch_exported(event)
        else:
            view.add_scores_ready(event)
        if self._is_shown(view):
            self._dirty.pipeline = True
            name = "epoch_exported" if isinstance(event, EpochExported) else "scores_ready"
            self.fanout.event(wire.message("epoch", {"event": name, **event.model_dump(mode="json")}))

    def _on_reward_model(self, event: RewardModelUpdated, view: RunView) -> None:
        view.add_reward_model(event)
        if self._is_shown(view):
            self.fanout.event(wire.event_message("reward_model", event))

    def _on_dead_letter(self, letter: DeadLetter, view: RunView) -> None:
        view.add_dead_letter(letter)
        if self._is_shown(view):
            self._dirty.pipeline = True
            self.fanout.event(wire.message("dead_letter", dead_letter_summary(letter)))

    # Browsers

    def watch(self, channel: ClientChannel, env_ids: list[str], watch_all: bool = False) -> None:
        before = self._watched(channel)
        channel.watch_all, channel.watch = watch_all, frozenset(env_ids)
        view = self.runs.current
        if view is None:
            return
        for env_id in self._watched(channel) - before:  # show a newly chosen env at once, not at its next frame
            channel.offer_slot("frame:" + env_id, view.envs[env_id].frame_message, self.frame_interval_s)

    def _watched(self, channel: ClientChannel) -> set[str]:
        view = self.runs.current
        if view is None:
            return set()
        default = view.default_env()
        return {e for e in view.envs if channel.wants_frame(e, default)}

    def snapshot_for(self, channel: ClientChannel) -> str:
        """The channel's snapshot message; also queues the latest frame of each env it watches."""
        view = self.runs.current
        # Before the first event, an empty view gives the page the same shape to render.
        data = (view or RunView("-", self.runs.limits, datetime.now(UTC))).snapshot()
        data["run_id"] = self.runs.current_id
        watched = sorted(self._watched(channel))
        data.update(runs=self.runs.known(), pinned=self.runs.pinned is not None, live=self.live, watching=watched,
                    server=self.server_info(), max_fps=self.settings.max_fps)
        if view is not None:
            for env_id in watched:
                channel.offer_slot("frame:" + env_id, view.envs[env_id].frame_message, self.frame_interval_s)
        return wire.message("snapshot", data)

    def server_info(self) -> dict[str, Any]:
        return {
            "live": self.live,
            "nats": self.nats_state,
            "clients": len(self.fanout),
            "run_id": self.runs.current_id,
            "time": datetime.now(UTC).isoformat(),
        }

    def tick(self) -> None:
        """Called a few times a second: sends what changed in aggregate, and the heartbeat."""
        view = self.runs.current
        if view is not None and self._dirty.exploration:
            self.fanout.slot("exploration", wire.message("exploration", view.exploration()), EXPLORATION_INTERVAL_S)
        if view is not None and self._dirty.pipeline:
            self.fanout.slot("pipeline", wire.message("pipeline", view.pipeline()), PIPELINE_INTERVAL_S)
        self._dirty = _Dirty()
        now = time.monotonic()
        if now - self._last_heartbeat >= HEARTBEAT_INTERVAL_S:
            self._last_heartbeat = now
            self.fanout.slot("server", wire.message("server", self.server_info()))

    def set_nats_state(self, state: str) -> None:
        if state != self.nats_state:
            self.nats_state = state
            self._last_heartbeat = 0.0  # tell browsers at the next tick

    def status(self) -> dict[str, Any]:
        view = self.runs.current
        totals = self.fanout.totals()
        return {
            "run_id": self.runs.current_id,
            "pinned": self.runs.pinned is not None,
            "live": self.live,
            "runs": self.runs.known(),
            "nats": self.nats_state,
            "streams_followed": sorted(self.streams_followed),
            "uptime_s": round(time.monotonic() - self.started, 1),
            "envs": view.env_list() if view else [],
            "metrics": view.metrics.model_dump(mode="json") if view and view.metrics else None,
            "pipeline": view.pipeline() if view else None,
            "exploration": {"rooms_discovered": view.exploration()["rooms_discovered"]} if view else None,
            "reward_model": view.reward_models[-1].model_dump(mode="json") if view and view.reward_models else None,
            "unattributed_dead_letters": self.unattributed_dead_letters,
            "clients": {
                "connected": len(self.fanout),
                "frames_sent": totals.frames_sent,
                "frames_skipped": totals.frames_skipped,
                "snapshots": totals.snapshots,
                "overflows": totals.overflows,
                "slow_disconnects": self.fanout.slow_disconnects,
                "each": [
                    {"id": c.id, "label": c.label, "sending": c.sending, "queued_events": len(c.events),
                     "pending_slots": len(c.slots),
                     **vars(c.stats)}
                    for c in self.fanout.channels.values()
                ],
            },
        }

