"""The service the integration tests talk to: a real API and a real worker process."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
import redis

from app.client import Client
from app.config import Settings
from app.processes import running_service
from app.queue import TRIALS_QUEUE


@pytest.fixture(scope="module")
def service(settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Client]:
    """The API and one worker as child processes, on the test database and the test Redis."""
    redis.Redis.from_url(settings.broker_url).delete(TRIALS_QUEUE)
    env = os.environ | {
        "GALERA_DOE_DATABASE_URL": settings.database_url,
        "GALERA_DOE_BROKER_URL": settings.broker_url,
    }
    with running_service(env, tmp_path_factory.mktemp("service")) as running:
        yield running.client
