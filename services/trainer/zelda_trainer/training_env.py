"""The env that Ray's env runners build: ``ZeldaEnv`` plus segment export, live frames and shaping hooks.

It is created inside each env runner process from a plain ``env_config`` dict, so everything it needs
(object store, NATS) is opened there. Store and NATS credentials come from the process environment
(``ZELDA_STORE_*``, ``ZELDA_NATS_*``), never from the config that Ray ships around and logs.
"""

from __future__ import annotations

import itertools
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

from zelda_rlaif.game.config import EnvConfig
from zelda_rlaif.game.env import ZeldaEnv
from zelda_rlaif.game.guidance.publisher import SuggestionPublisher
from zelda_rlaif.settings import NatsSettings, StoreSettings, load_settings
from zelda_rlaif.storage import open_store
from zelda_trainer.export import ExportPlan, SegmentExporter
from zelda_trainer.live import LiveFramePublisher

ENV_NAME = "zelda-rlaif-training"
_vector_index = itertools.count()  # per process: RLlib gives every sub-env of a runner the same context


class TrainingEnv(gym.Wrapper[Any, int, Any, int]):
    # Per process: at most one env streams to the HUD; it hands the stream back on close.
    live_stream_taken: ClassVar[bool] = False

    def __init__(self, env_config: dict[str, Any]) -> None:
        env = ZeldaEnv(EnvConfig(**env_config["env"]))
        super().__init__(env)
        self.zelda: ZeldaEnv = env
        worker = int(getattr(env_config, "worker_index", 0))
        vector = next(_vector_index)
        self.source_id = f"w{worker}v{vector}"
        self.exporter: SegmentExporter | None = None
        if env_config.get("export"):
            plan = ExportPlan(**env_config["export"])
            store = open_store(load_settings(StoreSettings, **env_config.get("store", {})))
            self.exporter = SegmentExporter(plan, store, self.source_id)
            self.exporter.set_epoch(int(env_config.get("epoch", 0)))
        self.live: LiveFramePublisher | None = None
        self.guidance_feed: SuggestionPublisher | None = None
        live = env_config.get("live")
        # One env of the whole run streams to the HUD: an env of the first remote runner (or of the local one
        # when sampling happens in the driver). It hands the stream back on close, so a rebuilt env takes over.
        if live and not TrainingEnv.live_stream_taken and worker == int(live["worker_index"]):
            TrainingEnv.live_stream_taken = True
            nats = load_settings(NatsSettings, **({"url": env_config["nats_url"]} if "nats_url" in env_config else {}))
            self.live = LiveFramePublisher(nats, live["run_id"], self.source_id,
                                           float(live["fps"]))
            # The live env's guidance suggestions go to the HUD beside its frames.
            if env.guidance is not None:
                self.guidance_feed = SuggestionPublisher(nats, live["run_id"], self.source_id)
                env.guidance.add_listener(self.guidance_feed.offer)

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        obs, info = self.env.reset(**kwargs)
        if self.exporter is not None:
            self.exporter.begin_episode()
        return obs, info

    def step(self, action: int) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        step = self.zelda.step_count
        want_export_frame = self.exporter is not None and self.exporter.wants_frame(step)
        want_live_frame = self.live is not None and self.live.due()
        self.zelda.render_next = want_export_frame or want_live_frame
        obs, reward, terminated, truncated, info = self.env.step(action)
        screen = self.zelda.screen() if (want_export_frame or want_live_frame) else None
        if self.exporter is not None and self.exporter.recording:
            self.exporter.record(step, int(action), info["action_name"], float(reward), info["components"],
                                 info["state"], np.asarray(obs), screen if want_export_frame else None)
        if want_live_frame and self.live is not None and screen is not None:
            self.live.offer(self.zelda.step_count, screen, info["state"])
        # RLlib keeps every step's info in its episodes: hand it only what the callbacks read, not the full
        # state record (that goes to the exported state log above).
        state = info["state"]
        slim: dict[str, Any] = {"components": info["components"], "room": (state["group"], state["room"])}
        if self.zelda.guidance is not None:
            counts = self.zelda.guidance.take_counts()  # only the counters that changed this step
            if counts:
                slim["guidance"] = counts
        return obs, float(reward), terminated, truncated, slim

    def close(self) -> None:
        if self.live is not None:
            self.live.close()
            TrainingEnv.live_stream_taken = False
        if self.guidance_feed is not None:
            self.guidance_feed.close()
        super().close()

    # Called by the driver through foreach_env between training iterations.

    def set_epoch(self, epoch: int) -> None:
        if self.exporter is not None:
            self.exporter.set_epoch(epoch)

    def set_reward_model(self, model_bytes: bytes | None, model_epoch: int | None) -> None:
        from zelda_rlaif.reward_model.potential import Potential

        self.zelda.set_potential(Potential.from_bytes(model_bytes) if model_bytes is not None else None)
        if self.exporter is not None:
            self.exporter.reward_model_epoch = model_epoch


def make_training_env(env_config: dict[str, Any]) -> TrainingEnv:
    return TrainingEnv(env_config)
