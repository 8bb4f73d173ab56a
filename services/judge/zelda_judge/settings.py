"""``JudgeSettings``: the one settings class of the judge service (environment prefix ``ZELDA_JUDGE_``).

One process judges one kind. A shared ``.env`` can still give each kind its own endpoint and model through
``ENDPOINTS``: ``ZELDA_JUDGE_ENDPOINTS__STATE__LLM_MODEL`` beats ``ZELDA_JUDGE_LLM_MODEL`` for the state judge,
and so on for every field of ``EndpointOverrides`` and every kind. Connection blocks (NATS, object store,
logging) are the shared ones with their own prefixes.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Annotated, Any, Literal
from urllib.parse import urlparse

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from zelda_judge.rubric import RubricWeights
from zelda_judge.rule_scores import RULES_MODEL
from zelda_rlaif.events import JudgeKind
from zelda_rlaif.settings import LogSettings, NatsSettings, StoreSettings, refuse_placeholder
from zelda_rlaif.subjects import ConsumerSpec

# Below this a prompt cannot hold the rubric plus the briefest state summary.
MIN_TOKEN_BUDGET = 512


@dataclass(frozen=True)
class LlmEndpoint:
    """Where one judge kind sends its chat completions, after per-kind overrides are applied."""

    url: str
    model: str
    api_key: SecretStr | None
    timeout_s: float
    max_in_flight: int

    @property
    def chat_completions_url(self) -> str:
        return self.url.rstrip("/") + "/chat/completions"


def _base_url(value: str | None) -> str | None:
    if value is None or not value.strip():
        return None
    value = value.strip().rstrip("/").removesuffix("/chat/completions")
    if urlparse(value).scheme not in {"http", "https"} or not urlparse(value).netloc:
        raise ValueError(f"{value!r} is not an http(s) URL; expected the API base, e.g. http://vllm:8000/v1")
    return value


class EndpointOverrides(BaseModel):
    """One kind's own LLM endpoint (``ZELDA_JUDGE_ENDPOINTS__<KIND>__<FIELD>``); unset fields keep the defaults."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    llm_url: str | None = Field(None, description="overrides ZELDA_JUDGE_LLM_URL for this kind")
    llm_model: str | None = Field(None, description="overrides ZELDA_JUDGE_LLM_MODEL for this kind")
    llm_api_key: SecretStr | None = Field(None, description="overrides ZELDA_JUDGE_LLM_API_KEY for this kind")
    llm_timeout_s: float | None = Field(None, gt=0, description="overrides ZELDA_JUDGE_LLM_TIMEOUT_S for this kind")
    max_in_flight: int | None = Field(None, ge=1, le=1024, description="overrides ZELDA_JUDGE_MAX_IN_FLIGHT")

    _check_key = field_validator("llm_api_key")(refuse_placeholder)
    _check_url = field_validator("llm_url")(_base_url)


class JudgeSettings(BaseSettings):
    # An empty variable (compose passes `VAR:` through as "") means "not set", not "set to nothing".
    model_config = SettingsConfigDict(env_prefix="ZELDA_JUDGE_", env_nested_delimiter="__", extra="ignore",
                                      env_ignore_empty=True)

    kind: JudgeKind | None = Field(None, description="the kind this process judges (or pass --kind)")
    backend: Literal["rules", "openai"] = Field(
        "rules", description="rules: deterministic scores from the state log; openai: an OpenAI-compatible LLM"
    )

    # LLM endpoint (openai backend): the defaults of every kind; ENDPOINTS overrides them for one kind.
    llm_url: str | None = Field(None, description="API base of the OpenAI-compatible server, e.g. http://vllm:8000/v1")
    llm_model: str | None = Field(None, description="model name the server serves, e.g. Qwen/Qwen2.5-7B-Instruct")
    llm_api_key: SecretStr | None = Field(None, description="bearer token, when the server requires one")
    llm_timeout_s: float = Field(60.0, gt=0, description="seconds before one chat completion counts as timed out")
    max_in_flight: int = Field(16, ge=1, le=1024, description="LLM requests in flight per replica")
    endpoints: dict[JudgeKind, EndpointOverrides] = Field(
        default_factory=dict, description="per kind: ZELDA_JUDGE_ENDPOINTS__<KIND>__LLM_URL, __LLM_MODEL, ..."
    )

    # Voting
    votes: int = Field(3, ge=1, le=16, description="M: votes per segment (self-consistency); median per dimension")
    vote_mode: Literal["requests", "n"] = Field(
        "requests", description="requests: M requests with distinct seeds; n: one request with n=M (vLLM)"
    )
    temperature: float = Field(0.7, ge=0.0, le=2.0, description="sampling temperature; must be > 0 when VOTES > 1")
    llm_max_tokens: int = Field(400, ge=32, description="completion tokens allowed per vote")
    llm_retries: int = Field(2, ge=0, le=10, description="extra attempts per vote on timeouts, 5xx or garbage")
    llm_backoff_s: float = Field(0.5, ge=0.0, description="first retry delay; doubles per attempt, with jitter")
    llm_backoff_max_s: float = Field(8.0, ge=0.0, description="cap of the retry delay")
    llm_retry_after_max_s: float = Field(
        60.0, ge=0.0, description="longest wait honoured from a 429/503 answer's Retry-After (seconds or HTTP-date)"
    )

    # Prompt
    token_budget: int = Field(
        3000, ge=MIN_TOKEN_BUDGET, description="prompt tokens allowed (text ~ chars/4, plus a fixed cost per image)"
    )
    key_frames: int = Field(4, ge=1, le=16, description="frames sent to kinds that see frames (the vision judge)")

    rubric: RubricWeights = Field(default_factory=RubricWeights, description="weights of the combined score")

    # Consumer tuning; unset keeps the values declared in zelda_rlaif.subjects.
    ack_wait_s: float | None = Field(None, gt=0, description="seconds a replica may hold a segment without a heartbeat")
    max_deliver: int | None = Field(None, ge=1, description="deliveries before a segment is dead-lettered")
    redelivery_backoff_s: Annotated[list[float] | None, NoDecode] = Field(
        None, description="delays between redeliveries, e.g. 1,5,15,30 (the last one repeats)"
    )

    http_host: str = Field("0.0.0.0", description="address of /healthz and /metrics")  # all interfaces: a pod
    http_port: int = Field(8080, ge=0, le=65535, description="port of /healthz and /metrics; 0 turns them off")

    nats: NatsSettings = Field(default_factory=NatsSettings)
    store: StoreSettings = Field(default_factory=StoreSettings)
    log: LogSettings = Field(default_factory=LogSettings)

    _check_key = field_validator("llm_api_key")(refuse_placeholder)
    _check_url = field_validator("llm_url")(_base_url)

    @field_validator("endpoints", mode="before")
    @classmethod
    def _known_kinds(cls, value: Any) -> Any:
        if isinstance(value, dict):
            kinds = [kind.value for kind in JudgeKind]
            for name in value:
                if str(name).lower() not in kinds:
                    raise ValueError(f"{str(name)!r} is not a judge kind ({', '.join(kinds)}); rename or remove "
                                     f"ZELDA_JUDGE_ENDPOINTS__{str(name).upper()}__*")
        return value

    @field_validator("redelivery_backoff_s", mode="before")
    @classmethod
    def _comma_list(cls, value: Any) -> Any:
        if isinstance(value, str):
            text = value.strip().removeprefix("[").removesuffix("]")
            return [float(part) for part in text.split(",") if part.strip()] or None
        return value

    @field_validator("redelivery_backoff_s")
    @classmethod
    def _positive_delays(cls, value: list[float] | None) -> list[float] | None:
        if value is not None and any(delay < 0 for delay in value):
            raise ValueError("delays must be >= 0 seconds")
        return value

    @model_validator(mode="after")
    def _coherent(self) -> JudgeSettings:
        if self.kind is None:
            kinds = ", ".join(kind.value for kind in JudgeKind)
            raise ValueError(f"set ZELDA_JUDGE_KIND ({kinds}) or pass --kind")
        if self.backend == "openai":
            endpoint = self.endpoint()
            prefix = f"ZELDA_JUDGE_ENDPOINTS__{self.kind.value.upper()}__"
            if not endpoint.url:
                raise ValueError(f"the openai backend needs ZELDA_JUDGE_LLM_URL (or {prefix}LLM_URL)")
            if not endpoint.model:
                raise ValueError(f"the openai backend needs ZELDA_JUDGE_LLM_MODEL (or {prefix}LLM_MODEL)")
            if self.votes > 1 and self.temperature <= 0:
                raise ValueError("VOTES > 1 needs ZELDA_JUDGE_TEMPERATURE > 0, or every vote is the same sample")
        return self

    @property
    def judge_kind(self) -> JudgeKind:
        assert self.kind is not None  # the validator refuses a missing kind
        return self.kind

    def endpoint(self) -> LlmEndpoint:
        """The LLM endpoint of this process's kind: its ENDPOINTS overrides, else the defaults."""
        own = self.endpoints.get(self.judge_kind, EndpointOverrides())

        def pick(name: str) -> Any:
            value = getattr(own, name)
            return value if value is not None else getattr(self, name)

        return LlmEndpoint(
            url=pick("llm_url") or "",
            model=pick("llm_model") or "",
            api_key=pick("llm_api_key"),
            timeout_s=pick("llm_timeout_s"),
            max_in_flight=pick("max_in_flight"),
        )

    def model_label(self) -> str:
        """What every verdict records as its model."""
        return self.endpoint().model if self.backend == "openai" else RULES_MODEL

    def consumer(self, spec: ConsumerSpec[Any]) -> ConsumerSpec[Any]:
        """``spec`` from zelda_rlaif.subjects with the tuning set here (tests use short ack waits)."""
        changes: dict[str, Any] = {}
        if self.ack_wait_s is not None:
            changes["ack_wait"] = timedelta(seconds=self.ack_wait_s)
        if self.max_deliver is not None:
            changes["max_deliver"] = self.max_deliver
        if self.redelivery_backoff_s:
            changes["backoff"] = tuple(timedelta(seconds=s) for s in self.redelivery_backoff_s)
        return replace(spec, **changes) if changes else spec
