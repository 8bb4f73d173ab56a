"""Play evaluation episodes on a few emulators in lockstep, pick the best one, and replay it for its video.

The episodes play unrendered (the policy sees the 128-D vector, not pixels). The best one is then replayed from
its seed with the actions it took, rendering every k-th step: the emulator, the start jitter and every reward
component are deterministic given the seed, and the replay must reach the same ``EpisodeRecord``, so the video
shows the episode that the figures describe. Keeping frames of every episode instead would cost ~70 kB per frame.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

import numpy as np

from zelda_rlaif.episodes import EpisodeRecord
from zelda_rlaif.errors import ZeldaRlaifError
from zelda_rlaif.game.config import EnvConfig
from zelda_rlaif.game.env import ZeldaEnv
from zelda_rlaif.game.profiles.base import GameProfile
from zelda_rlaif.game.rewards import StatePotential
from zelda_rlaif.video import write_video

if TYPE_CHECKING:
    from zelda_trainer.evaluation.policies import Policy

# Emulators that play side by side: one policy call per step serves them all; more only add memory.
PARALLEL_ENVS = 8
# A video of at most this many frames (one minute at the game's 15 steps/s); longer episodes keep every k-th step.
MAX_VIDEO_FRAMES = 900
GAME_BOY_FPS = 60
# The policy's generator of an episode is seeded (seed, POLICY_STREAM), apart from the env's own seeded draws.
POLICY_STREAM = 1


class ReplayDiverged(ZeldaRlaifError):
    """Replaying an episode's actions from its seed did not reproduce it."""


@dataclass(frozen=True)
class PlayedEpisode:
    seed: int
    record: EpisodeRecord
    actions: np.ndarray = field(repr=False)


@dataclass(frozen=True)
class RecordedVideo:
    path: Path
    frames: int
    every: int  # a frame every k-th env step
    fps: float
    size_bytes: int


def evaluation_env(config: EnvConfig) -> EnvConfig:
    """The run's game as an evaluation plays it: online LLM guidance off (it needs an LLM and is not
    reproducible); everything else (ROM, start state, episode length, reward weights) as trained."""
    return config.model_copy(update={"guidance": config.guidance.model_copy(update={"enabled": False})})


class EvalEnvs:
    """The emulators an evaluation plays on. Building one costs ~60 ms (boot to gameplay), so the trainer keeps
    its pool from one evaluation to the next; every episode starts from a seeded reset all the same."""

    def __init__(self, config: EnvConfig, count: int) -> None:
        self.config = config
        self.envs: list[ZeldaEnv] = []
        try:
            for _ in range(count):
                self.envs.append(ZeldaEnv(config))
        except BaseException:
            self.close()
            raise

    @property
    def profile(self) -> GameProfile:
        return self.envs[0].profile

    def set_potential(self, potential: StatePotential | None) -> None:
        """Shape the episodes with this reward model (None: no shaping)."""
        for env in self.envs:
            env.set_potential(potential)

    def close(self) -> None:
        for env in self.envs:
            env.close()
        self.envs = []

    def __enter__(self) -> EvalEnvs:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()


@dataclass
class _Slot:
    index: int
    seed: int
    rng: np.random.Generator
    observation: np.ndarray
    actions: list[int] = field(default_factory=list)


def play(envs: EvalEnvs, policy: Policy, seeds: Sequence[int],
         on_episode: Callable[[PlayedEpisode], None] | None = None) -> list[PlayedEpisode]:
    """One episode per seed, in the order of ``seeds``; ``on_episode`` is called as each one ends."""
    played: list[PlayedEpisode | None] = [None] * len(seeds)
    pending = iter(enumerate(seeds))

    def start(env: ZeldaEnv) -> _Slot | None:
        index, seed = next(pending, (-1, -1))
        if index < 0:
            return None
        observation, _ = env.reset(seed=seed)
        return _Slot(index, seed, np.random.default_rng((seed, POLICY_STREAM)), observation)

    slots = [start(env) for env in envs.envs]
    while any(slot is not None for slot in slots):
        active = [position for position, slot in enumerate(slots) if slot is not None]
        playing = [slot for slot in slots if slot is not None]
        actions = policy.actions(np.stack([slot.observation for slot in playing]), [slot.rng for slot in playing])
        for position, slot, action in zip(active, playing, actions, strict=True):
            env = envs.envs[position]
            slot.observation, _, terminated, truncated, _ = env.step(int(action))
            slot.actions.append(int(action))
            if terminated or truncated:
                episode = PlayedEpisode(slot.seed, env.episode_record(), np.array(slot.actions, dtype=np.uint8))
                played[slot.index] = episode
                if on_episode is not None:
                    on_episode(episode)
                slots[position] = start(env)
    return [episode for episode in played if episode is not None]


def best_episode(played: Sequence[PlayedEpisode]) -> int:
    """Index of the episode that reached the most milestones, then the highest env return (the first on a tie)."""
    return max(range(len(played)), key=lambda i: (len(played[i].record.milestones), played[i].record.env_return))


def record_video(envs: EvalEnvs, episode: PlayedEpisode, path: Path, *,
                 max_frames: int = MAX_VIDEO_FRAMES) -> RecordedVideo:
    """Replay ``episode`` on the first env and write its frames to ``path`` (.gif or .mp4), at the game's real-time
    speed: every step's frame, or every k-th step's when the episode has more than ``max_frames`` steps."""
    steps = len(episode.actions)
    every = max(1, math.ceil(steps / max_frames))
    env = envs.envs[0]
    env.reset(seed=episode.seed)
    frames: list[np.ndarray] = []
    for step, action in enumerate(episode.actions, start=1):
        keep = step % every == 0 or step == steps
        env.render_next = keep  # rendering reads the screen; it does not change the game
        env.step(int(action))
        if keep:
            frames.append(env.screen())
    replayed = env.episode_record()
    if replayed != episode.record:
        raise ReplayDiverged(
            f"replaying the episode of seed {episode.seed} did not reproduce it ({replayed} instead of "
            f"{episode.record}), so its video would show another episode: something in the env is not seeded; "
            "report it with the run's settings")
    fps = GAME_BOY_FPS / (envs.config.frame_skip * every)
    write_video(frames, path, fps)
    return RecordedVideo(path=path, frames=len(frames), every=every, fps=fps, size_bytes=path.stat().st_size)
