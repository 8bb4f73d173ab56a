"""RLlib callbacks: observe episodes and report through the metrics logger, nothing else.

Metric names (under ``result["env_runners"]``):

| name | meaning |
|---|---|
| ``zelda/rooms_visited`` | distinct rooms per episode (mean over the window) |
| ``zelda/reward/<component>`` | sum of a reward component per episode (mean) |
| ``zelda/room/<group>_<room>`` | episodes that entered that room, counted on entry (sum): the heat map |
| ``zelda/guidance/<counter>`` | online guidance (when enabled): requests, answers, failures, stale, limited, |
| | guided_steps, agreements (sums) |
| ``zelda/guidance/agreement_rate`` | agreements / guided_steps per episode (mean) |
"""

from __future__ import annotations

from typing import Any

from ray.rllib.callbacks.callbacks import RLlibCallback

from zelda_rlaif.game.guidance.runtime import GuidanceCounts

GUIDANCE_COUNTERS = tuple(GuidanceCounts().as_dict())


class ZeldaCallbacks(RLlibCallback):
    def on_episode_step(self, *, episode: Any, **kwargs: Any) -> None:
        info = episode.get_infos(-1)
        if not info:
            return
        totals = episode.custom_data.setdefault("components", {})
        for name, value in info.get("components", {}).items():
            totals[name] = totals.get(name, 0.0) + value
        if "guidance" in info:
            guidance = episode.custom_data.setdefault("guidance", {})
            for name, value in info["guidance"].items():
                guidance[name] = guidance.get(name, 0) + value
        room = info.get("room", (0, 0))
        rooms = episode.custom_data.setdefault("rooms", set())
        if room not in rooms:
            rooms.add(room)
            # Logged on first entry, not at episode end, so coverage shows up while long episodes run.
            metrics_logger = kwargs.get("metrics_logger")
            if metrics_logger is not None:
                metrics_logger.log_value(f"zelda/room/{room[0]}_{room[1]}", 1, reduce="sum")

    def on_episode_end(self, *, episode: Any, metrics_logger: Any = None, **kwargs: Any) -> None:
        rooms = episode.custom_data.get("rooms", set())
        metrics_logger.log_value("zelda/rooms_visited", len(rooms), reduce="mean", window=100)
        for name, value in episode.custom_data.get("components", {}).items():
            metrics_logger.log_value(f"zelda/reward/{name}", value, reduce="mean", window=100)
        guidance = episode.custom_data.get("guidance")
        if guidance:
            for name in GUIDANCE_COUNTERS:  # zeros too, so a counter that never moved still shows as 0
                metrics_logger.log_value(f"zelda/guidance/{name}", guidance.get(name, 0), reduce="sum")
            if guidance.get("guided_steps"):
                metrics_logger.log_value("zelda/guidance/agreement_rate",
                                         guidance.get("agreements", 0) / guidance["guided_steps"], reduce="mean",
                                         window=100)
