"""RLlib callbacks: observe episodes and report through the metrics logger, nothing else.

Metric names (under ``result["env_runners"]``); the episodes' own figures (returns, length, rooms, tiles,
milestones) are not RLlib metrics: every env hands its finished episodes to the driver, which reports them for
the whole epoch (``zelda_rlaif.episodes``).

| name | meaning |
|---|---|
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
    """Reads the news that ``TrainingEnv`` puts in its (otherwise empty) step infos: first entries into rooms,
    and the episode's totals on its last step. Nothing is done per env step: a callback there costs the env
    runner's loop a Python call per step, so the room news is read once per sample, from its episode chunks."""

    def on_environment_created(self, *, env_runner: Any, env: Any, env_context: Any, **kwargs: Any) -> None:
        env.unwrapped.attach(env_context.worker_index)

    def on_sample_end(self, *, samples: Any, metrics_logger: Any = None, **kwargs: Any) -> None:
        # Episode chunks on the new API stack, the only one the trainer uses (RLlib types them with its old batch).
        if metrics_logger is None:
            return
        for chunk in samples:
            # A chunk's first info is its reset's, or its previous chunk's last: only the later ones are its steps'.
            for info in chunk.get_infos()[1:]:
                # Logged per sample, not at episode end, so coverage shows up while long episodes run.
                for group, room in info.get("new_rooms", ()):
                    metrics_logger.log_value(f"zelda/room/{group}_{room}", 1, reduce="sum")

    def on_episode_end(self, *, episode: Any, metrics_logger: Any = None, **kwargs: Any) -> None:
        totals = episode.get_infos(-1).get("episode")
        if totals is None:  # an episode cut short by an env failure has no totals
            return
        for name, value in totals["components"].items():
            metrics_logger.log_value(f"zelda/reward/{name}", value, reduce="mean", window=100)
        guidance = totals.get("guidance")
        if guidance:
            for name in GUIDANCE_COUNTERS:  # zeros too, so a counter that never moved still shows as 0
                metrics_logger.log_value(f"zelda/guidance/{name}", guidance.get(name, 0), reduce="sum")
            if guidance.get("guided_steps"):
                metrics_logger.log_value("zelda/guidance/agreement_rate",
                                         guidance.get("agreements", 0) / guidance["guided_steps"], reduce="mean",
                                         window=100)
