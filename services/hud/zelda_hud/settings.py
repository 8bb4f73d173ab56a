"""The HUD's settings: ``ZELDA_HUD_*`` plus the shared NATS, object-store and logging blocks."""

from __future__ import annotations

import ipaddress
from pathlib import Path

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from zelda_rlaif.events import RunId
from zelda_rlaif.settings import LogSettings, NatsSettings, StoreSettings, refuse_placeholder
from zelda_rlaif.up.run_dir import run_id_of, store_url_of

MIN_TOKEN_LENGTH = 16


class HudSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ZELDA_HUD_", extra="ignore")

    host: str = Field("127.0.0.1", description="address to listen on; 0.0.0.0 in a container")
    port: int = Field(8080, ge=0, le=65535, description="port to listen on (0 picks a free one)")
    access_token: SecretStr | None = Field(
        None,
        description="when set, the API and the websocket need it as ?token=... or 'Authorization: Bearer ...'",
    )
    run_id: RunId | None = Field(None, description="show this run only; unset follows the most recently started run")
    run_dir: Path | None = Field(
        None,
        description="serve this finished run of `zelda-rlaif up` (its directory) from what it stored, without NATS; "
        "the run id and the store come from the directory unless given",
    )
    max_fps: float = Field(20.0, gt=0, le=120, description="most frames per second sent to one browser for one env")
    client_queue: int = Field(
        256, ge=8, description="events buffered per browser; one that falls further behind gets a fresh snapshot"
    )
    send_timeout_s: float = Field(
        30.0, gt=0, description="a browser that accepts nothing for this long is disconnected (it reconnects)"
    )
    send_buffer_kib: int = Field(
        64, ge=0, le=65536,
        description="kernel send buffer per browser in KiB (small: a stuck browser's backlog stays in the HUD's "
        "newest-frame-wins outbox rather than as stale frames in the kernel); 0 keeps the OS default",
    )
    history_points: int = Field(720, ge=10, description="training-metric points kept for the charts")
    recent_items: int = Field(
        50, ge=1, description="verdicts, reward-model updates, suggestions and dead letters kept for the page"
    )
    replay_events: int = Field(
        5000, ge=0, description="recent pipeline events read at start so a restarted HUD has history; 0: new only"
    )
    max_runs: int = Field(4, ge=1, description="runs kept in memory when following the latest run")

    nats: NatsSettings = Field(default_factory=NatsSettings)
    store: StoreSettings = Field(default_factory=StoreSettings)
    log: LogSettings = Field(default_factory=LogSettings)

    @field_validator("access_token")
    @classmethod
    def _real_token(cls, value: SecretStr | None) -> SecretStr | None:
        refuse_placeholder(value)
        if value is not None and len(value.get_secret_value()) < MIN_TOKEN_LENGTH:
            raise ValueError(
                f"is shorter than {MIN_TOKEN_LENGTH} characters; generate one with "
                "`python -c 'import secrets; print(secrets.token_urlsafe(24))'`"
            )
        return value

    @model_validator(mode="after")
    def _finished_run(self) -> HudSettings:
        if self.run_dir is None:
            return self
        try:
            if self.run_id is None:
                self.run_id = run_id_of(self.run_dir)
            if "url" not in self.store.model_fields_set:  # ZELDA_STORE_URL or --store-url win over the directory's
                self.store = self.store.model_copy(update={"url": store_url_of(self.run_dir)})
        except ValueError as exc:  # a model-level error names no field: say which setting it is about
            raise ValueError(f"ZELDA_HUD_RUN_DIR (--run-dir): {exc}") from exc
        return self

    @property
    def live(self) -> bool:
        """Whether the HUD follows the bus; False: it serves a finished run from the store alone."""
        return self.run_dir is None

    @property
    def exposed_without_token(self) -> bool:
        """True when the HUD listens beyond loopback and anyone who can reach it may read it."""
        if self.access_token is not None:
            return False
        try:
            return not ipaddress.ip_address(self.host).is_loopback
        except ValueError:  # a host name: only "localhost" is known to be loopback
            return self.host != "localhost"
