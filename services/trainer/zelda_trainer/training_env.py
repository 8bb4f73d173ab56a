"""The env that Ray's env runners build: ``ZeldaEnv`` plus segment export, live frames, shaping and judged starts.

It is created inside each env runner process from a ``TrainingEnvConfig`` (see ``env_config.py``), so everything
it needs (object store, NATS) is opened there. Store and NATS credentials come from the process environment
(``ZELDA_STORE_*``, ``ZELDA_NATS_*``), never from the config that Ray ships around and logs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

from zelda_rlaif.episodes import EpisodeRecord
from zelda_rlaif.events import SegmentExported
from zelda_rlaif.game.env import ZeldaEnv
from zelda_rlaif.segments import unpack_end_state
from zelda_rlaif.storage import open_store
from zelda_trainer.env_config import EnvSync, StartStates, TrainingEnvConfig
from zelda_trainer.explore import random_walk
from zelda_trainer.export import SegmentExporter
from zelda_trainer.lead import Lead
from zelda_trainer.live import LiveStream


@dataclass(frozen=True)
class Completed:
    """What one env completed since the driver last asked: stored segments (to announce) and the episodes from the
    game's start it finished (for the epoch's figures, ``EpisodeStats``; judged starts are left out). The driver
    takes it after every training iteration."""

    segments: list[SegmentExported]
    episodes: list[EpisodeRecord]


@dataclass
class EpisodeTally:
    """What the RLlib callbacks report about an episode (reward components, guidance counters, the rooms it enters
    first: the heat map), summed inside the env (see ``TrainingEnv.step``). The episode's own figures are
    ``ZeldaEnv.episode_record()``."""

    components: dict[str, float] = field(default_factory=dict)
    guidance: dict[str, int] = field(default_factory=dict)
    rooms_visited: int = 1  # the start room; a larger count in the state record means a room entered first
    new_rooms: list[tuple[int, int]] = field(default_factory=list)

    def totals(self) -> dict[str, Any]:
        totals: dict[str, Any] = {"components": self.components}
        if self.guidance:
            totals["guidance"] = self.guidance
        return totals


class TrainingEnv(gym.Wrapper[Any, int, Any, int]):
    """One emulator of an env runner. ``attach`` must name its worker and slot before the first reset: RLlib
    tells a vector env its worker index only after building it (see ``TrainingVectorEnv.attach``)."""

    # Per process: at most one env streams to the HUD; it hands the stream back on close.
    live_stream_taken: ClassVar[bool] = False

    def __init__(self, config: TrainingEnvConfig) -> None:
        env = ZeldaEnv(config.env)
        super().__init__(env)
        self.zelda: ZeldaEnv = env
        self.config = config
        self.source_id = ""
        self.exporter: SegmentExporter | None = None
        self.live: LiveStream | None = None
        self.tally = EpisodeTally()
        self._finished_episodes: list[EpisodeRecord] = []  # since the driver last took them
        self._reward_model_epoch: int | None = None  # of the model set last (None: no shaping)
        self._start_states = StartStates()  # where judged starts begin (EnvSync.start_states)
        self.judged_start = False  # whether the current episode began at a judged segment's end state
        # Segments keep their end state only for judged starts: saving one costs ~13 ms.
        self._save_end_state = env.emulator.save_state if config.judged_start_fraction else None
        self._epoch = config.epoch  # until the driver moves it on; an exporter opened later starts here
        self._lead = Lead(env, config.judged_start_lead_steps) if config.judged_start_lead_steps else None

    def attach(self, worker_index: int, vector_index: int) -> None:
        """Name this env (``w<worker>v<slot>``, unique within a run) and open its exporter and live stream."""
        export, live = self.config.export, self.config.live
        self.source_id = f"w{worker_index}v{vector_index}"
        if export is not None:
            self.exporter = SegmentExporter(export, open_store(export.store.settings()), self.source_id)
            self.exporter.set_epoch(self._epoch)
        # One env of the whole run streams to the HUD: an env of the first remote runner (or of the local one
        # when sampling happens in the driver). It hands the stream back on close, so a rebuilt env takes over.
        if live is not None and not TrainingEnv.live_stream_taken and worker_index == live.worker_index:
            TrainingEnv.live_stream_taken = True
            self.live = LiveStream(live.nats_settings(), live.run_id, self.source_id, live.fps)
            # The live env's guidance suggestions go to the HUD beside its frames.
            if self.zelda.guidance is not None:
                self.zelda.guidance.add_listener(self.live.offer_suggestion)

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        if not self.source_id:
            raise RuntimeError("TrainingEnv.attach(worker_index, vector_index) must be called before reset")
        options = dict(kwargs.pop("options", None) or {})
        # Drawn from the env's own generator, so a seeded run picks the same starts.
        rng = self.zelda.np_random
        self.judged_start = bool(self._start_states) and rng.random() < self.config.judged_start_fraction
        if self.judged_start:
            options["start_state"] = unpack_end_state(self._start_states.pick(rng))
        obs, info = self.env.reset(options=options, **kwargs)
        if self.judged_start and self.config.judged_start_explore_steps:
            # The generator as the reset left it: a reset given a seed replaces it.
            walked_to = random_walk(self.zelda, options["start_state"], self.zelda.np_random,
                                    self.config.judged_start_explore_steps)
            if walked_to is not None:  # the episode begins afresh where the walk left it
                obs, info = self.env.reset(options={"start_state": walked_to})
        self._begin_episode(info["state"])
        if self.judged_start and self._lead is not None:
            led_to = self._follow_lead(self._lead, obs)
            if led_to is not None:
                obs = led_to
            else:  # the episode ended during the lead: it begins at the restored state, unled
                obs, info = self.env.reset(options={"start_state": options["start_state"]})
                self._begin_episode(info["state"])
        return obs, {}

    def _begin_episode(self, state: dict[str, Any]) -> None:
        if self.exporter is not None:
            self.exporter.begin_episode(from_game_start=not self.judged_start)
        self.tally = EpisodeTally()
        self.tally.new_rooms.append((state["group"], state["room"]))  # reported with the first step

    def _follow_lead(self, lead: Lead, obs: Any) -> Any | None:
        """Play the lead's steps as the episode's first ones (recorded and exported like the policy's, see
        ``lead.py``); the observation the policy then plays from, or None where the episode ended during the lead."""
        rooms_entered: list[tuple[int, int]] = []
        for action in lead.actions():
            obs, _, terminated, truncated, news = self.step(action)
            rooms_entered += news.get("new_rooms", [])
            if terminated or truncated:
                return None
        self.tally.new_rooms = rooms_entered + self.tally.new_rooms  # reported with the policy's first step
        return obs

    def step(self, action: int) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        step = self.zelda.step_count
        want_export_frame = self.exporter is not None and self.exporter.wants_frame(step)
        want_live_frame = self.live is not None and self.live.frame_due()
        self.zelda.render_next = want_export_frame or want_live_frame
        obs, reward, terminated, truncated, info = self.env.step(action)
        screen = self.zelda.screen() if (want_export_frame or want_live_frame) else None
        if self.exporter is not None and self.exporter.recording:
            self.exporter.record(step, int(action), info["action_name"], float(reward), info["components"],
                                 info["state"], np.asarray(obs), screen if want_export_frame else None,
                                 save_state=self._save_end_state)
        if want_live_frame and self.live is not None and screen is not None:
            self.live.offer_frame(self.zelda.step_count, screen, info["state"])
        # RLlib keeps every step's info in its episodes and the vector env merges them every step, so the env
        # keeps the episode's tallies itself and reports only news: rooms entered for the first time, and the
        # episode's totals on its last step (the full state record goes to the exported state log above).
        tally, state = self.tally, info["state"]
        for name, value in info["components"].items():
            tally.components[name] = tally.components.get(name, 0.0) + value
        if state["rooms_visited"] > tally.rooms_visited:
            tally.rooms_visited = state["rooms_visited"]
            tally.new_rooms.append((state["group"], state["room"]))
        if self.zelda.guidance is not None:
            for name, value in self.zelda.guidance.take_counts().items():  # only the counters that changed
                tally.guidance[name] = tally.guidance.get(name, 0) + value
        news: dict[str, Any] = {}
        if tally.new_rooms:
            news["new_rooms"], tally.new_rooms = tally.new_rooms, []
        if terminated or truncated:
            news["episode"] = tally.totals()
            if not self.judged_start:  # the epoch's figures describe play from the game's start
                self._finished_episodes.append(self.zelda.episode_record())
        return obs, float(reward), terminated, truncated, news

    def close(self) -> None:
        if self.live is not None:
            self.live.close()
            TrainingEnv.live_stream_taken = False
        super().close()

    # Called by the driver between training iterations (through ZeldaEnvRunner.apply_env_sync or foreach_env).

    def apply_sync(self, sync: EnvSync) -> None:
        """Move to the driver's epoch and reward model; a model already set is not loaded again."""
        self.set_epoch(sync.epoch)
        if sync.reward_model_epoch != self._reward_model_epoch:
            self.set_reward_model(sync.reward_model, sync.reward_model_epoch)
        self._start_states = sync.start_states  # taken up by the next reset

    def set_epoch(self, epoch: int) -> None:
        self._epoch = epoch
        if self.exporter is not None:
            self.exporter.set_epoch(epoch)

    def take_completed(self) -> Completed:
        """The segments stored and the episodes from the game's start finished since the last call (each handed over
        once)."""
        episodes, self._finished_episodes = self._finished_episodes, []
        segments = self.exporter.take_stored_segments() if self.exporter is not None else []
        return Completed(segments=segments, episodes=episodes)

    def set_reward_model(self, model_bytes: bytes | None, model_epoch: int | None) -> None:
        from zelda_rlaif.reward_model.potential import Potential

        self.zelda.set_potential(Potential.from_bytes(model_bytes) if model_bytes is not None else None)
        self._reward_model_epoch = model_epoch if model_bytes is not None else None
        if self.exporter is not None:
            self.exporter.reward_model_epoch = model_epoch

