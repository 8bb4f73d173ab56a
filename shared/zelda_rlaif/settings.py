"""Settings building blocks shared by every service's own settings class.

Each service declares exactly one ``BaseSettings`` subclass with its own ``ZELDA_<SERVICE>_`` prefix; the
connection settings below (bus, object store, logging) are shared blocks with their own prefixes so one
``.env`` configures every service the same way. Secrets never have defaults, and a placeholder value such
as ``changeme`` is refused at start. ``load_settings`` turns pydantic's validation error into one message
that names the environment variable to fix.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeVar, get_args, get_origin
from urllib.parse import urlparse

from pydantic import BaseModel, Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from zelda_rlaif.errors import SettingsError

S = TypeVar("S", bound=BaseSettings)

PLACEHOLDER_SECRETS = frozenset(
    {"changeme", "change-me", "change_me", "placeholder", "secret", "password", "minioadmin", "xxx", "todo"}
)


def refuse_placeholder(value: SecretStr | None) -> SecretStr | None:
    if value is not None:
        raw = value.get_secret_value().strip()
        if not raw or raw.lower() in PLACEHOLDER_SECRETS or raw.startswith("<"):
            raise ValueError("is empty or a placeholder; set a real secret (see .env.example)")
    return value


class NatsSettings(BaseSettings):
    """How to reach NATS JetStream."""

    model_config = SettingsConfigDict(env_prefix="ZELDA_NATS_", extra="ignore")

    url: str = Field("nats://127.0.0.1:4222", description="NATS server URL(s), comma-separated")
    user: str | None = Field(None, description="user name, when the server requires one")
    password: SecretStr | None = Field(None, description="password for `user`")
    token: SecretStr | None = Field(None, description="auth token, as an alternative to user/password")
    connect_timeout_s: float = Field(5.0, gt=0, description="seconds to wait for the first connection")
    publish_timeout_s: float = Field(5.0, gt=0, description="seconds one attempt of a durable publish waits for "
                                     "JetStream's acknowledgement before it is retried")
    outage_limit_s: float = Field(600.0, gt=0, description="seconds NATS may stay unreachable while a service "
                                  "retries; past it the service stops and says how to resume")
    retry_max_delay_s: float = Field(5.0, gt=0, description="cap of the exponential back-off between retries")

    _check_password = field_validator("password", "token")(refuse_placeholder)

    @field_validator("url")
    @classmethod
    def _nats_scheme(cls, value: str) -> str:
        for url in value.split(","):
            if urlparse(url.strip()).scheme not in {"nats", "tls", "ws", "wss"}:
                raise ValueError(f"{url!r} is not a NATS URL; expected e.g. nats://host:4222")
        return value


class StoreSettings(BaseSettings):
    """Where segments, scores, models and checkpoints live: ``file:///path`` or ``s3://bucket/prefix``."""

    model_config = SettingsConfigDict(env_prefix="ZELDA_STORE_", extra="ignore")

    url: str = Field("file://./runs/store", description="file:///abs/path, file://./rel/path or s3://bucket[/prefix]")
    s3_endpoint: str | None = Field(None, description="S3 endpoint for MinIO etc., e.g. http://minio:9000")
    s3_region: str = Field("us-east-1", description="S3 region (MinIO accepts any)")
    s3_access_key: SecretStr | None = Field(None, description="S3 access key id (required for s3://)")
    s3_secret_key: SecretStr | None = Field(None, description="S3 secret access key (required for s3://)")
    s3_connect_timeout_s: float = Field(5.0, gt=0, description="seconds one S3 request waits to connect")
    s3_read_timeout_s: float = Field(30.0, gt=0, description="seconds one S3 request waits for an answer: a server "
                                     "that accepts connections but never answers is detected after this")
    outage_limit_s: float = Field(600.0, gt=0, description="seconds the object store may stay unreachable while a "
                                  "service retries; past it the service stops and says how to resume")
    retry_max_delay_s: float = Field(5.0, gt=0, description="cap of the exponential back-off between retries")

    _check_secret = field_validator("s3_secret_key", "s3_access_key")(refuse_placeholder)

    @field_validator("url")
    @classmethod
    def _store_scheme(cls, value: str) -> str:
        if urlparse(value).scheme not in {"file", "s3"}:
            raise ValueError(f"{value!r} must start with file:// or s3://")
        return value

    @model_validator(mode="after")
    def _s3_needs_credentials(self) -> StoreSettings:
        if self.url.startswith("s3://") and (self.s3_access_key is None or self.s3_secret_key is None):
            raise ValueError(
                "an s3:// store needs ZELDA_STORE_S3_ACCESS_KEY and ZELDA_STORE_S3_SECRET_KEY"
            )
        return self


class LogSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ZELDA_LOG_", extra="ignore")

    level: str = Field("INFO", description="DEBUG, INFO, WARNING or ERROR")
    format: Literal["text", "json"] = Field("text", description="text for people, json for log collectors")

    @field_validator("level")
    @classmethod
    def _known_level(cls, value: str) -> str:
        if value.upper() not in {"DEBUG", "INFO", "WARNING", "ERROR"}:
            raise ValueError("must be DEBUG, INFO, WARNING or ERROR")
        return value.upper()


def _env_name(settings_cls: type[BaseSettings], loc: tuple[int | str, ...]) -> str:
    """Map a validation error location to the environment variable a user should fix.

    A nested settings block reads its own prefix (``ZELDA_NATS_URL``); a nested model or mapping is read
    through the nested delimiter (``("endpoints", "vision", "llm_url")`` -> ``ZELDA_JUDGE_ENDPOINTS__VISION__LLM_URL``).
    """
    cls: type[BaseSettings] = settings_cls
    parts = [str(part) for part in loc if part != "[key]"]  # "[key]": pydantic's marker for a bad mapping key
    while len(parts) > 1:
        field = cls.model_fields.get(parts[0])
        nested = field.annotation if field else None
        if not (isinstance(nested, type) and issubclass(nested, BaseSettings)):
            break
        cls, parts = nested, parts[1:]
    prefix = str(cls.model_config.get("env_prefix", ""))
    delimiter = str(cls.model_config.get("env_nested_delimiter") or "__")
    return f"{prefix}{delimiter.join(parts)}".upper() if parts else f"{prefix}*"


def load_settings(settings_cls: type[S], **overrides: Any) -> S:
    """Build a settings object; on bad input raise ``SettingsError`` naming each offending variable."""
    try:
        return settings_cls(**overrides)
    except ValidationError as exc:
        owner = next(
            (c for c in _settings_classes(settings_cls) if c.__name__ == exc.title), settings_cls
        )
        problems = []
        for error in exc.errors():
            loc = tuple(error.get("loc", ()))
            value = error.get("input")
            secret = _is_secret(owner, loc)
            shown = "" if secret or isinstance(value, dict) or value is None else f" (got {str(value)[:60]!r})"
            message = str(error.get("msg", "invalid")).removeprefix("Value error, ")
            problems.append(f"{_env_name(owner, loc)}: {message}{shown}" if loc else message)
        raise SettingsError("invalid configuration: " + "; ".join(problems)) from None


def _is_secret(settings_cls: type[BaseSettings], loc: tuple[int | str, ...]) -> bool:
    """Whether the field at ``loc`` holds a secret, whose value must never appear in an error message.

    The location is followed through nested models (by field name) and mappings (by key, to the value type).
    """
    annotation: Any = settings_cls
    for part in loc:
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            field = annotation.model_fields.get(str(part))
            if field is None:
                return False
            annotation = field.annotation
        elif get_origin(annotation) in (dict, Mapping) and part != "[key]":
            annotation = get_args(annotation)[-1]
    return "SecretStr" in str(annotation)


def _settings_classes(root: type[BaseSettings]) -> list[type[BaseSettings]]:
    found = [root]
    for field in root.model_fields.values():
        nested = field.annotation
        if isinstance(nested, type) and issubclass(nested, BaseSettings):
            found.extend(_settings_classes(nested))
    return found
