"""Service settings from environment variables (prefix GALERA_DOE_), each with a default."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_SQLITE_PATH = Path.home() / ".local" / "share" / "galera-doe" / "galera_doe.sqlite3"


class Settings(BaseSettings):
    """Configuration of the API, the worker and the CLI."""

    model_config = SettingsConfigDict(env_prefix="GALERA_DOE_", extra="ignore")

    database_url: str = Field(
        default=f"sqlite+aiosqlite:///{DEFAULT_SQLITE_PATH}",
        description="SQLAlchemy async URL: sqlite+aiosqlite:///path or mysql+asyncmy://user@host/db",
    )
    broker_url: str = "redis://127.0.0.1:6379/0"
    targets_file: Path | None = Field(
        default=None, description="YAML file of the operator's targets; built-in defaults if unset"
    )
    max_design_runs: int = Field(default=2000, ge=1)
    max_body_bytes: int = Field(
        default=1_048_576, ge=1024, description="the largest request body the API reads"
    )
    trial_lease_seconds: int = Field(default=3600, ge=10)
    max_trial_attempts: int = Field(default=3, ge=1)
    reaper_interval_seconds: float = Field(
        default=30.0, ge=0, description="how often the API reaps expired leases; 0: never"
    )
    resend_after_seconds: float = Field(
        default=120.0, ge=0, description="a queued trial without a broker message is sent again"
    )
    db_retry_seconds: float = Field(
        default=300.0,
        ge=0,
        description="how long a worker retries, with backoff, a database operation (claim, "
        "lease renewal, recording a result, releasing a target) while the database is "
        "unreachable; 0: no retry",
    )
    cancel_poll_seconds: float = Field(
        default=1.0,
        gt=0,
        le=60,
        description="how often a worker checks whether its running trial was cancelled",
    )


@lru_cache
def get_settings() -> Settings:
    """The process-wide settings, read once from the environment."""
    return Settings()
