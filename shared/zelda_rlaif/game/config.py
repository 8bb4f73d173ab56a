"""Environment configuration, validated once; the trainer ships it to every env runner inside its typed
``TrainingEnvConfig`` (``zelda_trainer.env_config``)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from zelda_rlaif.game.guidance.config import GuidanceConfig
from zelda_rlaif.game.rewards.config import RewardConfig


class EnvConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    rom: Path | None = Field(None, description="ROM path; None plays the bundled test world")
    state: Path | None = Field(None, description="save state to start from; required for Oracle of Seasons")
    profile: str | None = Field(None, description="game profile; None detects it from the ROM header")
    frame_skip: int = Field(4, ge=1, le=60, description="emulator frames per env step")
    press_frames: int = Field(2, ge=1, description="frames A/B/START stay pressed within a step")
    max_steps: int = Field(2048, ge=1, description="steps per episode (truncation)")
    start_jitter: int = Field(8, ge=0, description="reset waits 0..start_jitter frames, chosen by the seed")
    sound_emulated: bool = Field(
        False, description="off is 2-4x faster; turn on if a scene of the real game deadlocks without it"
    )
    pixel_observation: bool = Field(False, description="observation is a dict with the 128-D vector and pixels")
    rewards: RewardConfig = Field(default_factory=RewardConfig)
    guidance: GuidanceConfig = Field(default_factory=GuidanceConfig, description="online LLM guidance (off by default)")

    @field_validator("press_frames")
    @classmethod
    def _press_within_step(cls, value: int, info: object) -> int:
        frame_skip = getattr(info, "data", {}).get("frame_skip", 4)
        if value > frame_skip:
            raise ValueError(f"press_frames ({value}) cannot exceed frame_skip ({frame_skip})")
        return value
