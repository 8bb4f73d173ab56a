"""``EvalReport``: what an evaluation played and what its episodes achieved, as ``zelda-rlaif eval`` writes it to
``RUN_DIR/eval/`` and the trainer stores it at ``keys.evaluation`` every ``eval_every_epochs`` epochs.

Its figures are ``EpisodeStats`` (``episodes.flat()`` gives the metric names every output uses), so an evaluation
reads like a training epoch. Every policy evaluated with the same ``seed`` and number of episodes plays the same
episode seeds (``evaluation_seeds``), so a checkpoint and the random baseline compare episode for episode.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from zelda_rlaif.episodes import EpisodeRecord, EpisodeStats, upgrade_reward_model_names

# Training envs are seeded from the run's seed plus small worker and env indices (RLlib's own evaluation workers
# add 1e6); evaluation seeds start far above both, so an evaluation never replays a training episode's start.
EVALUATION_SEED_BASE = 1_000_000_000
MAX_EVALUATION_EPISODES = 100_000


def evaluation_seeds(seed: int, episodes: int) -> list[int]:
    """The env seeds of an evaluation: disjoint for different ``seed`` values, and the first k of them are the
    same for any number of episodes, so a shorter evaluation plays a prefix of a longer one."""
    if seed < 0:
        raise ValueError(f"the evaluation seed must be >= 0, got {seed}")
    if not 1 <= episodes <= MAX_EVALUATION_EPISODES:
        raise ValueError(f"an evaluation plays 1 to {MAX_EVALUATION_EPISODES} episodes, not {episodes}")
    start = EVALUATION_SEED_BASE + seed * MAX_EVALUATION_EPISODES
    return list(range(start, start + episodes))


class EvalReport(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal[2] = 2
    run_id: str
    policy: Literal["checkpoint", "random"]
    checkpoint: Literal["epoch", "best", "latest", "training"] | None = Field(
        description="how the checkpoint was chosen (\"training\": the trainer's policy at the epoch's end); None "
        "for the random policy")
    epoch: int | None = Field(description="the epoch the evaluated policy was trained to; for the random policy, "
                              "the checkpoint whose game and reward model it played with")
    env_steps: int | None = Field(description="env steps the run had trained at that epoch")
    greedy: bool = Field(description="argmax actions instead of sampling from the policy")
    profile: str = Field(description="game profile played")
    episode_steps: int = Field(ge=1, description="steps per episode (the run's truncation)")
    reward_model_epoch: int | None = Field(description="the reward model that shaped the episodes (the one the "
                                           "checkpoint trained with); None: no shaping")
    seeds: list[int] = Field(description="env seed of each episode, in the order of ``records``")
    records: list[EpisodeRecord]
    episodes: EpisodeStats
    best_episode: int | None = Field(description="index of the best episode (most milestones, then env return)")
    video: str | None = Field(description="where the best episode's video was written, if it was")
    wall_time_s: float = Field(ge=0.0, description="time to play the episodes (not loading, not the video)")
    episodes_per_s: float = Field(ge=0.0)

    @model_validator(mode="before")
    @classmethod
    def _upgrade(cls, data: Any) -> Any:
        return upgrade_reward_model_names(data, 1, stats=("episodes",), records=("records",))

    def describe(self) -> str:
        """One line for people: which policy, how it played."""
        if self.policy == "random":
            what = "random policy"
        else:
            what = f"epoch {self.epoch} ({self.checkpoint} checkpoint, {'greedy' if self.greedy else 'sampled'})"
        return f"run {self.run_id}, {what}: {self.episodes.describe()}"
