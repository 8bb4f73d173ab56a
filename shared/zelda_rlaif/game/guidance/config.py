"""Online LLM guidance settings: one validated block, shipped inside ``EnvConfig`` to every env runner.

Nothing secret lives here (Ray ships and logs env configs): the API key of the guidance LLM is read by each
env runner from its own environment, ``ZELDA_GUIDANCE_LLM_API_KEY`` (see ``GuidanceSecrets``).

Rate limits. Each env keeps a token bucket refilled at ``min(per_env_rate_per_s, global_rate_per_s /
num_envs)`` requests per second (``burst`` tokens at most), plus at most ``max_in_flight`` unanswered
requests. Dividing the global budget by the number of envs is an upper bound, not a shared counter: the sum
of every env's share never exceeds the global budget, with no coordination between env runner processes (an
exact global limiter would need a network round trip per request, which the env step must never wait on).
It is conservative when some envs are idle, whose share then goes unused. The trainer fills ``num_envs``.
"""

from __future__ import annotations

from typing import Literal
from urllib.parse import urlparse

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from zelda_rlaif.settings import refuse_placeholder

Backend = Literal["rules", "openai"]
Source = Literal["text", "vision"]


def _api_base(value: str | None) -> str | None:
    if value is None or not value.strip():
        return None
    value = value.strip().rstrip("/").removesuffix("/chat/completions")
    parsed = urlparse(value)
    if parsed.scheme not in {"http", "https"} or not parsed.netloc:
        raise ValueError(f"{value!r} is not an http(s) URL; expected the API base, e.g. http://vllm:8000/v1")
    return value


class GuidanceConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = Field(False, description="ask for suggested actions during play and reward agreeing with them")
    backend: Backend = Field(
        "rules", description="rules: a planner over the decoded state (local, free); openai: an OpenAI-compatible LLM"
    )
    follow_walkthrough: bool = Field(
        False, description="tell guidance the game profile's walkthrough objective next in line and the way there "
        "(where the profile has a walkthrough): the rules planner heads for it before exploring, an LLM reads it in "
        "the state summary"
    )
    text_probability: float = Field(0.02, ge=0.0, le=1.0, description="chance per step of a request with the state "
                                    "summary")
    vision_probability: float = Field(0.03, ge=0.0, le=1.0, description="chance per step of a request with the screen "
                                      "(openai backend only: the rules planner cannot see)")
    expiry_steps: int = Field(20, ge=1, description="a suggestion applies for this many steps from its arrival")
    max_delay_steps: int = Field(
        600, ge=0, description="answers arriving more steps than this after their request are stale and dropped "
        "(as are answers arriving after the player left the room); an env runner steps ~1000 times a second, so "
        "this is roughly the LLM latency tolerated, in milliseconds"
    )
    per_env_rate_per_s: float = Field(0.5, gt=0.0, description="LLM requests per second one env may send")
    global_rate_per_s: float = Field(8.0, gt=0.0, description="LLM requests per second of the whole run, shared "
                                     "equally by num_envs envs")
    num_envs: int = Field(1, ge=1, description="envs of the run (the trainer sets it) for the global share")
    burst: int = Field(2, ge=1, description="requests an env may send back to back before its rate applies")
    max_in_flight: int = Field(1, ge=1, le=16, description="unanswered LLM requests per env")
    llm_url: str | None = Field(None, description="API base of the OpenAI-compatible server, e.g. http://vllm:8000/v1")
    llm_model: str | None = Field(None, description="model for text requests, e.g. Qwen/Qwen2.5-7B-Instruct")
    vision_llm_url: str | None = Field(None, description="API base for vision requests; unset uses llm_url")
    vision_llm_model: str | None = Field(None, description="multimodal model for vision requests, e.g. "
                                         "Qwen/Qwen2.5-VL-32B-Instruct; unset uses llm_model")
    timeout_s: float = Field(10.0, gt=0.0, description="seconds before a request counts as failed")
    max_tokens: int = Field(120, ge=16, description="completion tokens allowed per answer")
    temperature: float = Field(0.3, ge=0.0, le=2.0, description="sampling temperature of the guidance LLM")
    seed: int = Field(0, description="seeds the per-step draws (with the env's reset seed)")

    _check_urls = field_validator("llm_url", "vision_llm_url")(_api_base)

    @model_validator(mode="after")
    def _coherent(self) -> GuidanceConfig:
        if self.text_probability + (self.vision_probability if self.sees_screen else 0.0) > 1.0:
            raise ValueError("text_probability + vision_probability cannot exceed 1 (one request per step at most)")
        if self.enabled and self.backend == "openai":
            if self.llm_url is None:
                raise ValueError("the openai guidance backend needs llm_url (trainer: ZELDA_TRAINER_GUIDANCE__LLM_URL)")
            if self.llm_model is None:
                raise ValueError(
                    "the openai guidance backend needs llm_model (trainer: ZELDA_TRAINER_GUIDANCE__LLM_MODEL)"
                )
        return self

    @property
    def rate_per_s(self) -> float:
        """This env's request rate: its own limit or its share of the global budget, whichever is lower."""
        return min(self.per_env_rate_per_s, self.global_rate_per_s / self.num_envs)

    @property
    def sees_screen(self) -> bool:
        """Vision requests are drawn only when a backend can look at the screen."""
        return self.backend == "openai" and self.vision_probability > 0


class GuidanceSecrets(BaseSettings):
    """Read by each env runner from its own environment, never shipped in the env config."""

    model_config = SettingsConfigDict(env_prefix="ZELDA_GUIDANCE_", extra="ignore", env_ignore_empty=True)

    llm_api_key: SecretStr | None = Field(None, description="bearer token of the guidance LLM, when it needs one")

    _check_key = field_validator("llm_api_key")(refuse_placeholder)
