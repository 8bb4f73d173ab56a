"""RLlib callbacks: observe episodes and report through the metrics logger, nothing else.

Metric names (under ``result["env_runners"]``):

| name | meaning |
|---|---|
| ``zelda/rooms_visited`` | distinct rooms per episode (mean over the window) |
| ``zelda/reward/<component>`` | sum of a reward component per episode (mean) |
| ``zelda/room/<group>_<room>`` | episodes that entered that room, counted on entry (sum): the heat map |
"""

from __future__ import annotations

from typing import Any

from ray.rllib.callbacks.callbacks import RLlibCallback


class ZeldaCallbacks(RLlibCallback):
    def on_episode_step(self, *, episode: Any, **kwargs: Any) -> None:
        info = episode.get_infos(-1)
        if not info:
            return
        totals = episode.custom_data.setdefault("components", {})
        for name, value in info.get("components", {}).items():
            totals[name] = totals.get(name, 0.0) + value
        state = info.get("state", {})
        room = (state.get("group", 0), state.get("room", 0))
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
