"""``TrainingEnvConfig``: everything the envs of an env runner need, one validated model.

Built once in the driver from the trainer settings (``training_env_config``), so a wrong or missing field fails
at start-up, when the algorithm is built, with the field's name. Ray ships ``env_config`` to every env runner
as a dict (``EnvContext``) and logs it: the model travels as its JSON under one key (``to_env_context``) and
the env creator validates it back (``from_env_context``). No secret is in it: each env runner reads the store,
NATS and guidance LLM credentials (``ZELDA_STORE_S3_*``, ``ZELDA_NATS_*``, ``ZELDA_GUIDANCE_LLM_API_KEY``) from
its own environment.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from zelda_rlaif.errors import SettingsError
from zelda_rlaif.events import RunId
from zelda_rlaif.game.config import EnvConfig
from zelda_rlaif.settings import NatsSettings, StoreSettings, load_settings
from zelda_trainer.settings import TrainerSettings

# The one key of Ray's env config dict that holds the model's JSON.
ENV_CONTEXT_KEY = "zelda_training_env"


class StoreLocation(BaseModel):
    """Where the env runners store segments; the credentials come from each runner's environment."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str
    s3_endpoint: str | None
    s3_region: str

    def settings(self) -> StoreSettings:
        return load_settings(StoreSettings, url=self.url, s3_endpoint=self.s3_endpoint, s3_region=self.s3_region)


class ExportPlan(BaseModel):
    """Which episodes each env exports as segments, and how (see ``export.py``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    run_id: RunId
    profile: str = Field(min_length=1, description="game profile of the run's ROM, written into every manifest")
    segment_steps: int = Field(ge=1)
    frame_every: int = Field(ge=1)
    export_fraction: float = Field(ge=0, le=1)
    seed: int
    store: StoreLocation


class LivePlan(BaseModel):
    """The one env of the run that streams its screens and guidance suggestions to the HUD (see ``live.py``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    run_id: RunId
    fps: float = Field(gt=0, le=60)
    worker_index: int = Field(ge=0, description="the first env of this env runner streams: 1 (the first remote "
                              "runner) or 0 (the driver's runner, when it samples)")
    nats_url: str

    def nats_settings(self) -> NatsSettings:
        return load_settings(NatsSettings, url=self.nats_url)


@dataclass(frozen=True)
class StartStates:
    """Where judged starts begin: packed emulator states (``pack_end_state``) and how likely each is to be picked
    (``weights``, summing to 1; empty: all alike)."""

    states: tuple[bytes, ...] = ()
    weights: tuple[float, ...] = ()

    def __len__(self) -> int:
        return len(self.states)

    def pick(self, rng: np.random.Generator) -> bytes:
        index = rng.choice(len(self.states), p=self.weights) if self.weights else rng.integers(len(self.states))
        return self.states[int(index)]


@dataclass(frozen=True)
class EnvSync:
    """What the driver moves every env on to during a run, beside the weights that RLlib syncs itself: the epoch
    the envs export into, the reward model that shapes their reward and the states judged starts begin from.
    ``TrainingEnvConfig`` only says where the run started, and an env runner that Ray rebuilds starts from there:
    the driver hands it the current ``EnvSync`` before it samples again (``env_runner.resync_restored_runners``)."""

    epoch: int
    reward_model: bytes | None = None  # the model file (rm.pt); None shapes nothing
    reward_model_epoch: int | None = None  # the epoch whose scores trained it
    start_states: StartStates = StartStates()  # where judged starts begin (``BestSegments.start_states``)


class TrainingEnvConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    env: EnvConfig
    epoch: int = Field(ge=0, description="the epoch the run starts in; the driver moves the envs on (EnvSync)")
    export: ExportPlan | None = Field(description="None exports nothing")
    live: LivePlan | None = Field(description="None streams nothing to the HUD")
    judged_start_fraction: float = Field(0.0, ge=0, le=1, description="the share of episodes that begin at the end "
                                         "state of one of the best judged segments (EnvSync.start_states)")
    judged_start_explore_steps: int = Field(0, ge=0, le=10_000, description="a judged start first walks at random "
                                            "within its room for up to this many steps, not trained on (explore.py); "
                                            "0: none")
    judged_start_lead_steps: int = Field(0, ge=0, le=10_000, description="at a judged start the guidance planner "
                                         "plays the first steps, until it has walked into another room or for at "
                                         "most this many, as part of the episode (lead.py); 0: none")

    def to_env_context(self) -> dict[str, str]:
        """What ``PPOConfig.environment(env_config=...)`` gets."""
        return {ENV_CONTEXT_KEY: self.model_dump_json()}

    @classmethod
    def from_env_context(cls, env_context: Mapping[str, Any]) -> TrainingEnvConfig:
        """The env creator's side of ``to_env_context``."""
        if ENV_CONTEXT_KEY not in env_context:
            raise SettingsError(
                f"the env config that Ray handed to the env creator has no {ENV_CONTEXT_KEY!r} (keys: "
                f"{sorted(env_context)}); build the algorithm with zelda_trainer.algorithm.build_config")
        return cls.model_validate_json(env_context[ENV_CONTEXT_KEY])


def training_env_config(settings: TrainerSettings, profile: str, epoch: int) -> TrainingEnvConfig:
    """The env config of a run; raises ``SettingsError`` naming each field the settings leave invalid."""
    emulators = max(settings.num_env_runners, 1) * settings.envs_per_runner
    try:
        return TrainingEnvConfig(
            env=EnvConfig(
                rom=settings.rom, state=settings.state, profile=settings.profile, max_steps=settings.episode_steps,
                sound_emulated=settings.sound_emulated, rewards=settings.rewards,
                # Each env takes 1/num_envs of the global guidance request budget (see zelda_rlaif.game.guidance).
                guidance=settings.guidance.model_copy(update={"num_envs": emulators}),
            ),
            epoch=epoch,
            export=ExportPlan(
                run_id=settings.run_id, profile=profile, segment_steps=settings.segment_steps,
                frame_every=settings.frame_every, export_fraction=settings.export_fraction, seed=settings.seed,
                store=StoreLocation(url=settings.store.url, s3_endpoint=settings.store.s3_endpoint,
                                    s3_region=settings.store.s3_region),
            ),
            live=LivePlan(
                run_id=settings.run_id, fps=settings.live_fps, nats_url=settings.nats.url,
                worker_index=1 if settings.num_env_runners > 0 else 0,
            ) if settings.live_frames else None,
            judged_start_fraction=settings.judged_start_fraction,
            judged_start_explore_steps=settings.judged_start_explore_steps,
            judged_start_lead_steps=settings.judged_start_lead_steps,
        )
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join([exc.title, *(str(part) for part in error['loc'])])}: {error['msg']}"
                             for error in exc.errors())
        raise SettingsError(
            f"the trainer settings make an invalid env config ({problems}): fix the ZELDA_TRAINER_* setting it "
            "comes from") from None
