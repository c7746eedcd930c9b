"""FastAPI dependencies: the per-request session and the process-wide service handles."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Annotated

from fastapi import Depends, Path, Request

from app.config import Settings
from app.db.session import AsyncSession, Database
from app.queue import TaskQueue
from app.targets import TargetSpec


def get_database(request: Request) -> Database:
    """The database the app was started with."""
    database: Database = request.app.state.database
    return database


async def get_session(request: Request) -> AsyncIterator[AsyncSession]:
    """One session per request, closed (and rolled back if uncommitted) at its end."""
    async with get_database(request).session() as session:
        yield session


def get_queue(request: Request) -> TaskQueue:
    """The broker handle."""
    queue: TaskQueue = request.app.state.queue
    return queue


def get_targets(request: Request) -> Mapping[str, TargetSpec]:
    """The operator's targets by name."""
    targets: Mapping[str, TargetSpec] = request.app.state.targets
    return targets


def get_settings(request: Request) -> Settings:
    """The settings the app was started with."""
    settings: Settings = request.app.state.settings
    return settings


SessionDep = Annotated[AsyncSession, Depends(get_session)]
DatabaseDep = Annotated[Database, Depends(get_database)]
QueueDep = Annotated[TaskQueue, Depends(get_queue)]
TargetsDep = Annotated[Mapping[str, TargetSpec], Depends(get_targets)]
SettingsDep = Annotated[Settings, Depends(get_settings)]

# Ids are 32-bit database integers: anything larger can name nothing and must not reach a driver.
ExperimentId = Annotated[int, Path(ge=1, le=2**31 - 1)]
TrialId = Annotated[int, Path(ge=1, le=2**31 - 1)]
