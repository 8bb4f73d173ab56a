"""One evaluation from policy to ``EvalReport``: play the episodes, aggregate them, record the best one's video.

Shared by ``zelda-rlaif eval`` (a checkpoint or the random baseline) and the trainer (its policy every
``eval_every_epochs`` epochs), so both report the same figures the same way.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from zelda_rlaif.episodes import EpisodeStats
from zelda_rlaif.evaluation import EvalReport
from zelda_rlaif.game.rewards import StatePotential
from zelda_trainer.evaluation.play import (
    MAX_VIDEO_FRAMES,
    EvalEnvs,
    PlayedEpisode,
    RecordedVideo,
    best_episode,
    play,
    record_video,
)

if TYPE_CHECKING:
    from zelda_trainer.evaluation.policies import Policy


@dataclass(frozen=True)
class Subject:
    """The policy under evaluation and where it comes from (what the report says about it)."""

    policy: Policy
    kind: Literal["checkpoint", "random"]
    checkpoint: Literal["epoch", "best", "latest", "training"] | None
    epoch: int | None
    env_steps: int | None
    greedy: bool


@dataclass(frozen=True)
class ShapingModel:
    """The reward model the episodes are shaped with (the one the checkpoint trained with), if any."""

    potential: StatePotential | None = None
    model_epoch: int | None = None


def evaluate(run_id: str, subject: Subject, envs: EvalEnvs, seeds: Sequence[int], *,
             shaping: ShapingModel | None = None, video: Path | None = None, max_video_frames: int = MAX_VIDEO_FRAMES,
             on_episode: Callable[[PlayedEpisode], None] | None = None) -> tuple[EvalReport, RecordedVideo | None]:
    """Play one episode per seed; ``video``: where to write the best episode (.gif or .mp4), None for none."""
    shaping = shaping or ShapingModel()
    envs.set_potential(shaping.potential)
    started = time.monotonic()
    played = play(envs, subject.policy, seeds, on_episode=on_episode)
    wall_time_s = time.monotonic() - started
    best = best_episode(played)
    recorded = None
    if video is not None:
        recorded = record_video(envs, played[best], video, max_frames=max_video_frames)
    records = [episode.record for episode in played]
    report = EvalReport(
        run_id=run_id, policy=subject.kind, checkpoint=subject.checkpoint, epoch=subject.epoch,
        env_steps=subject.env_steps, greedy=subject.greedy, profile=envs.profile.name,
        episode_steps=envs.config.max_steps, reward_model_epoch=shaping.model_epoch, seeds=list(seeds),
        records=records, episodes=EpisodeStats.of(records, envs.profile.milestone_names),
        best_episode=best, video=str(recorded.path) if recorded else None, wall_time_s=wall_time_s,
        episodes_per_s=len(played) / max(wall_time_s, 1e-9))
    return report, recorded
