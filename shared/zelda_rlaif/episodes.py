"""What an episode achieved, and the same figures over many episodes: one vocabulary for every report.

``ZeldaEnv.episode_record()`` makes an ``EpisodeRecord`` when an episode ends; the trainer aggregates an epoch's
records, ``zelda-rlaif eval`` those of its episodes, into ``EpisodeStats``. ``EpisodeStats.flat()`` gives the
metric names every output uses (``progress.json``, the ``up`` table and summary, the HUD, TensorBoard, MLflow,
``eval``'s JSON):

| name | meaning |
|---|---|
| ``episode/count`` | episodes that finished |
| ``episode/return_env_mean``, ``_median`` | return of the env reward (every component but the reward model's) |
| ``episode/return_reward_model_mean``, ``_median`` | return of what the reward model adds (shaping, preference) |
| ``episode/length_mean`` | env steps per episode |
| ``episode/rooms_mean``, ``episode/tiles_mean`` | distinct rooms and 16x16 tiles visited per episode |
| ``milestone/<name>`` | fraction of episodes that reached the profile's milestone ``<name>`` |
| ``milestone/score`` | mean fraction of the profile's milestones reached per episode |

Every figure exists as soon as one episode has finished; with none, ``count`` is 0, the others are None and
``describe()`` says so.

The reward model's return is its potential-based shaping plus, where it is on, its per-step preference reward.
It was called the shaping return (``shaping_return``, ``return_shaping_mean``, ``return_shaping_median``) before
schema version 2 of the models that embed these figures (``EpochReport``, ``EvalReport``, ``CheckpointMetadata``;
version 3 of ``LiveMetrics``); each reads stored copies of its older version through
``upgrade_reward_model_names``.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class EpisodeRecord(BaseModel):
    """One finished episode."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    steps: int = Field(ge=0)
    env_return: float = Field(description="sum of every reward component but the reward model's "
                              "(reward_model_return)")
    reward_model_return: float = Field(description="sum of what the reward model added: its potential-based "
                                       "shaping and, where it is on, its per-step preference reward")
    rooms_visited: int = Field(ge=0)
    tiles_visited: int = Field(ge=0)
    milestones: list[str] = Field(description="milestones of the profile reached in the episode, in quest order "
                                  "(those that already held at its start are not counted)")


class EpisodeStats(BaseModel):
    """Figures over a set of episodes (an epoch's, or an evaluation's)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    count: int = Field(ge=0)
    return_env_mean: float | None
    return_env_median: float | None
    return_reward_model_mean: float | None = Field(description="of ``EpisodeRecord.reward_model_return``")
    return_reward_model_median: float | None = Field(description="of ``EpisodeRecord.reward_model_return``")
    length_mean: float | None
    rooms_mean: float | None
    tiles_mean: float | None
    milestones: dict[str, float] = Field(description="milestone -> fraction of episodes that reached it; every "
                                         "milestone of the profile, in quest order; empty without episodes")
    milestone_score: float | None = Field(description="mean fraction of the profile's milestones reached")

    @classmethod
    def of(cls, episodes: Sequence[EpisodeRecord], milestone_names: Sequence[str]) -> EpisodeStats:
        """``milestone_names``: every milestone of the game profile, in quest order."""
        if not episodes:
            return cls(count=0, return_env_mean=None, return_env_median=None, return_reward_model_mean=None,
                       return_reward_model_median=None, length_mean=None, rooms_mean=None, tiles_mean=None,
                       milestones={}, milestone_score=None)
        env = [e.env_return for e in episodes]
        reward_model = [e.reward_model_return for e in episodes]
        reached = {name: sum(name in e.milestones for e in episodes) / len(episodes) for name in milestone_names}
        return cls(
            count=len(episodes),
            return_env_mean=statistics.fmean(env), return_env_median=statistics.median(env),
            return_reward_model_mean=statistics.fmean(reward_model),
            return_reward_model_median=statistics.median(reward_model),
            length_mean=statistics.fmean(e.steps for e in episodes),
            rooms_mean=statistics.fmean(e.rooms_visited for e in episodes),
            tiles_mean=statistics.fmean(e.tiles_visited for e in episodes),
            milestones=reached,
            milestone_score=statistics.fmean(reached.values()) if reached else None,
        )

    def flat(self) -> dict[str, float]:
        """The figures under their metric names (see the module docstring); None figures are left out."""
        figures: dict[str, float | None] = {
            "episode/count": float(self.count),
            "episode/return_env_mean": self.return_env_mean,
            "episode/return_env_median": self.return_env_median,
            "episode/return_reward_model_mean": self.return_reward_model_mean,
            "episode/return_reward_model_median": self.return_reward_model_median,
            "episode/length_mean": self.length_mean,
            "episode/rooms_mean": self.rooms_mean,
            "episode/tiles_mean": self.tiles_mean,
            **{f"milestone/{name}": fraction for name, fraction in self.milestones.items()},
            "milestone/score": self.milestone_score,
        }
        return {name: value for name, value in figures.items() if value is not None}

    def describe(self) -> str:
        """One line for people: what the episodes achieved, or that none finished."""
        if self.count == 0:
            return "no episode finished (episodes are longer than what was played: lower the episode length)"
        reached = ", ".join(f"{name} {fraction:.0%}" for name, fraction in self.milestones.items()) or "none defined"
        return (f"{self.count} episodes: env return {self.return_env_mean:.2f} (median {self.return_env_median:.2f}), "
                f"reward model {self.return_reward_model_mean:.2f}, length {self.length_mean:.0f}, "
                f"rooms {self.rooms_mean:.1f}, tiles {self.tiles_mean:.0f}; milestones: {reached}")


class EpochReport(BaseModel):
    """One training epoch as every output reports it. The trainer stores it at ``keys.epoch_report`` when the
    epoch ends (the HUD, ``up``'s summary and the trackers read it there); ``LiveMetrics`` carries the epoch so
    far while it runs."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal[2] = 2
    run_id: str
    epoch: int = Field(ge=0)
    env_steps: int = Field(ge=0, description="env steps of the run at the epoch's end")
    epoch_env_steps: int = Field(ge=0, description="env steps played in this epoch")
    env_steps_per_s: float = Field(ge=0.0, description="this epoch's env steps over its wall time")
    wall_time_s: float = Field(ge=0.0)
    reward_model_epoch: int | None = Field(description="epoch of the reward model the envs shaped with at the end")
    episodes: EpisodeStats = Field(description="the episodes that finished in this epoch")

    @model_validator(mode="before")
    @classmethod
    def _upgrade(cls, data: Any) -> Any:
        return upgrade_reward_model_names(data, 1, stats=("episodes",))

    def flat(self) -> dict[str, float]:
        return training_figures(self.env_steps_per_s, self.episodes)


def training_figures(env_steps_per_s: float, episodes: EpisodeStats) -> dict[str, float]:
    """The training figures under their metric names: ``throughput/env_steps_per_s`` beside
    ``EpisodeStats.flat``, for an ended epoch (``EpochReport``) and for the epoch so far (``LiveMetrics``)."""
    return {"throughput/env_steps_per_s": env_steps_per_s, **episodes.flat()}


# The names of the reward model's return before it was called so (see the module docstring).
_OLD_STATS_NAMES = {"return_shaping_mean": "return_reward_model_mean",
                    "return_shaping_median": "return_reward_model_median"}
_OLD_RECORD_NAMES = {"shaping_return": "reward_model_return"}


def upgrade_reward_model_names(data: Any, old_version: int, *, stats: Sequence[str] = (),
                               records: Sequence[str] = ()) -> Any:
    """A stored model of ``schema_version`` ``old_version`` (a dict without one counts as that version too) as
    version ``old_version + 1``: the shaping return renamed to the reward model return in the ``EpisodeStats``
    at each field of ``stats`` and in every ``EpisodeRecord`` of the lists at ``records``. For the
    ``model_validator(mode="before")`` of each model that embeds them. Anything else is left as it is: another
    version for the model's ``Literal`` to reject, or input that is already of the new shape."""
    if not isinstance(data, dict) or data.get("schema_version", old_version) != old_version:
        return data
    upgraded = {**data, "schema_version": old_version + 1}
    for name in stats:
        if name in upgraded:
            upgraded[name] = _renamed(upgraded[name], _OLD_STATS_NAMES)
    for name in records:
        if isinstance(upgraded.get(name), list):
            upgraded[name] = [_renamed(record, _OLD_RECORD_NAMES) for record in upgraded[name]]
    return upgraded


def _renamed(data: Any, names: dict[str, str]) -> Any:
    if not isinstance(data, dict):
        return data  # a model instance (new already), or something for validation to reject
    return {names.get(key, key): value for key, value in data.items()}
