"""Settings of the reward-model service (environment prefix ``ZELDA_REWARD_MODEL_``)."""

from __future__ import annotations

from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from zelda_rlaif.settings import LogSettings, NatsSettings, StoreSettings


class RewardModelSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ZELDA_REWARD_MODEL_", extra="ignore", env_parse_none_str="null")

    window_epochs: int = Field(2, ge=0, description="also train on the scores of this many earlier epochs")
    # Early in training the judges' combined scores sit close together, so the margin must be small enough to
    # yield decisive pairs: 0.1 made every pair a tie in the first epochs. With the progress-led rubric a room
    # walked towards the next objective moves the score by ~0.02 and a stretch of a room's walk by a few
    # thousandths, so 0.02 left the first epoch without a decisive held-out pair (no reward model) and dropped
    # every in-room difference; 0.002 keeps them (docs/results.md, section 13).
    preference_margin: float = Field(
        0.002, gt=0.0, le=1.0, description="combined scores differing by at least this much make a preference pair"
    )
    tie_band: float = Field(
        0.0005, ge=0.0, le=1.0, description="scores closer than this make a near-tie pair with soft label 0.5"
    )
    # A model knows only the places its segments visited; elsewhere its Phi is a guess that held the agent back
    # from every way its first policy did not take: with this optimism every seed measured took the key
    # (docs/results.md, section 14).
    unseen_place_quantile: float | None = Field(
        0.99, ge=0.0, le=1.0, description="a state in a place no segment of the window visited gets this quantile "
        "of Phi over the training states (optimism; zelda_rlaif.reward_model.places); null: the network's Phi "
        "everywhere"
    )
    seed: int = Field(0, description="seed of the split, the pair sampling, the initial weights and the batches")
    batch_size: int = Field(1024, ge=1, description="preference pairs per gradient step")
    passes: int = Field(5, ge=1, description="passes over the training pairs (at least)")
    min_steps: int = Field(
        300, ge=0, description="gradient steps at least: a small window gets more passes to reach them"
    )
    learning_rate: float = Field(1e-3, gt=0.0, description="Adam learning rate")
    weight_decay: float = Field(1e-4, ge=0.0, description="AdamW weight decay")
    states_per_segment: int = Field(
        16, ge=0, description="states sampled per segment and step to estimate its mean reward (0: all states)"
    )
    max_pairs: int = Field(200_000, ge=1, description="training pairs kept at most (a seeded sample beyond)")
    validation_fraction: float = Field(
        0.2, gt=0.0, lt=1.0, description="share of segments held out; pairs of two held-out segments validate"
    )
    min_validation_segments: int = Field(
        6, ge=1, description="segments held out at least (at most half), so small epochs can be validated"
    )
    min_validation_accuracy: float = Field(
        0.6, ge=0.0, le=1.0, description="below this validation pair accuracy the previous model stays"
    )
    device: str = Field("cpu", description="torch device for training: cpu, cuda or cuda:N")
    load_workers: int = Field(8, ge=1, le=64, description="state logs downloaded in parallel")

    nats: NatsSettings = Field(default_factory=NatsSettings)
    store: StoreSettings = Field(default_factory=StoreSettings)
    log: LogSettings = Field(default_factory=LogSettings)

    @field_validator("device")
    @classmethod
    def _known_device(cls, value: str) -> str:
        value = value.strip().lower()
        if value != "cpu" and not (value == "cuda" or (value.startswith("cuda:") and value[5:].isdigit())):
            raise ValueError("must be cpu, cuda or cuda:N")
        return value

    @model_validator(mode="after")
    def _tie_band_below_margin(self) -> RewardModelSettings:
        if self.tie_band >= self.preference_margin:
            raise ValueError(
                f"ZELDA_REWARD_MODEL_TIE_BAND ({self.tie_band}) must be smaller than "
                f"ZELDA_REWARD_MODEL_PREFERENCE_MARGIN ({self.preference_margin})"
            )
        return self

    def training_record(self) -> dict[str, float | int | str]:
        """The settings that determine a model, for its metadata (an unset optional one is left out)."""
        return self.model_dump(exclude={"nats", "store", "log", "load_workers"}, exclude_none=True)
