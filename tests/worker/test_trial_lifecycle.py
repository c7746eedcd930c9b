"""The worker's use cases under faults, on both database backends: a record made twice (the
connection broke during the commit), a stale claim, a trial the reaper took back while the
worker could not reach the database (no result recorded over it), a lease renewed while the
reaper waited to take it back, cancellation, and the retries of database steps."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import update
from sqlalchemy.exc import IntegrityError, OperationalError

from app.config import get_settings
from app.db import rows
from app.db.models import Trial, utcnow
from app.db.session import Database
from app.queue import TaskQueue
from app.services import experiment_commands, trial_runs
from app.statuses import Failure, TrialStatus
from tests.app.test_persistence import new_trial
from worker import runtime

LEASE = timedelta(minutes=1)


async def claim(database: Database, trial_id: int, worker: str) -> trial_runs.ClaimedTrial:
    async with database.session() as session:
        claimed = await trial_runs.claim(session, trial_id=trial_id, worker=worker, lease=LEASE)
    assert claimed is not None and claimed.worker == worker
    return claimed


async def read(database: Database, trial_id: int) -> Trial:
    async with database.session() as session:
        trial = await rows.get_trial(session, trial_id)
    assert trial is not None
    return trial


async def expire_and_reap(database: Database, trial_id: int, redis_url: str) -> None:
    async with database.session() as session:
        await session.execute(
            update(Trial).where(Trial.id == trial_id).values(lease_expires_at=utcnow())
        )
        await session.commit()
        await trial_runs.reap(
            session, queue=TaskQueue(redis_url), max_attempts=3, resend_after=timedelta(hours=1)
        )


async def test_a_result_recorded_twice_is_recorded_once(database):
    trial_id = await new_trial(database)
    claimed = await claim(database, trial_id, "w1")
    for _ in range(2):  # the second time: a retry after the answer to the commit was lost
        async with database.session() as session:
            assert await trial_runs.record_success(
                session, claimed=claimed, responses={"tps": 10.0}, raw_output="out"
            )
    trial = await read(database, trial_id)
    assert trial.status == TrialStatus.SUCCEEDED and trial.attempts == 1
    assert trial.responses == {"tps": 10.0}


async def test_a_claim_found_again_after_its_answer_was_lost(database):
    trial_id = await new_trial(database)
    claimed = await claim(database, trial_id, "w1")
    async with database.session() as session:
        assert await trial_runs.claim(session, trial_id=trial_id, worker="w1", lease=LEASE) is None
        assert await trial_runs.held_by(session, trial_id=trial_id, worker="w1") == claimed
        assert await trial_runs.held_by(session, trial_id=trial_id, worker="w2") is None


async def test_a_stale_claim_records_nothing(database, redis_url):
    trial_id = await new_trial(database)
    stale = await claim(database, trial_id, "w1")
    await expire_and_reap(database, trial_id, redis_url)
    fresh = await claim(database, trial_id, "w2")
    async with database.session() as session:
        assert await trial_runs.stop_reason(session, claimed=stale) is not None
        assert await trial_runs.stop_reason(session, claimed=fresh) is None
        assert not await trial_runs.record_success(
            session, claimed=stale, responses={"tps": 1.0}, raw_output="stale"
        )
        assert await trial_runs.record_failure(session, claimed=stale, error="late") is None
        assert await trial_runs.record_success(
            session, claimed=fresh, responses={"tps": 2.0}, raw_output="fresh"
        )
    trial = await read(database, trial_id)
    assert trial.responses == {"tps": 2.0} and trial.attempts == 2 and trial.worker == "w2"


async def test_no_result_is_recorded_over_a_trial_the_reaper_took_back(database, redis_url):
    # The worker could not renew its lease (the database locked or down); the reaper counted
    # the attempt lost and sent the trial again before the worker recorded its result: the
    # worker stops, records nothing, and the next attempt runs it. Never "succeeded" with
    # "attempt 1 (lost)" as its error.
    trial_id = await new_trial(database)
    claimed = await claim(database, trial_id, "w1")
    await expire_and_reap(database, trial_id, redis_url)
    assert (await read(database, trial_id)).status == TrialStatus.QUEUED
    async with database.session() as session:
        reason = await trial_runs.stop_reason(session, claimed=claimed)
        assert reason == "its lease ran out and the reaper sent it again"
        assert not await trial_runs.record_success(
            session, claimed=claimed, responses={"tps": 3.0}, raw_output="late"
        )
        assert await trial_runs.record_failure(session, claimed=claimed, error="late") is None
        assert not await trial_runs.record_cancelled(session, claimed=claimed)
    lost = await read(database, trial_id)
    assert lost.status == TrialStatus.QUEUED and lost.responses is None
    assert lost.error is not None and lost.error.startswith("attempt 1 (lost): worker w1")
    again = await claim(database, trial_id, "w1")
    async with database.session() as session:
        assert await trial_runs.record_success(
            session, claimed=again, responses={"tps": 4.0}, raw_output="again"
        )
    trial = await read(database, trial_id)
    assert trial.status == TrialStatus.SUCCEEDED and trial.attempts == 2
    assert trial.responses == {"tps": 4.0} and trial.error == lost.error


async def test_the_reaper_leaves_a_lease_renewed_after_it_read_it(database):
    # The reaper read the lease as expired, then waited behind a lock while the worker renewed
    # it: the lease is the worker's again, the trial is not taken back.
    trial_id = await new_trial(database)
    await claim(database, trial_id, "w1")
    async with database.session() as session:
        expired = utcnow() - timedelta(seconds=1)
        await session.execute(
            update(Trial).where(Trial.id == trial_id).values(lease_expires_at=expired)
        )
        await session.commit()
        read_at = utcnow()
        assert [t.id for t in await rows.expired_trials(session, read_at)] == [trial_id]

        async def take_back() -> bool:
            taken = await rows.transition(
                session,
                trial_id,
                from_statuses=[TrialStatus.RUNNING],
                to_status=TrialStatus.QUEUED,
                lease_expired_by=read_at,
            )
            await session.rollback()
            return taken

        assert await take_back()  # not renewed: the reaper's to take
        assert await trial_runs.renew_lease(session, trial_id=trial_id, worker="w1", lease=LEASE)
        assert not await take_back()
    assert (await read(database, trial_id)).status == TrialStatus.RUNNING


async def test_an_infrastructure_failure_recorded_twice_keeps_one_error_line(database):
    trial_id = await new_trial(database)
    claimed = await claim(database, trial_id, "w1")
    for _ in range(2):
        async with database.session() as session:
            status = await trial_runs.record_failure(
                session,
                claimed=claimed,
                error="node 2 left",
                failure=Failure.INFRASTRUCTURE,
                max_attempts=3,
            )
        assert status == TrialStatus.QUEUED
    trial = await read(database, trial_id)
    assert trial.error == "attempt 1 (infrastructure): node 2 left"


async def test_a_running_trial_of_a_cancelled_experiment_is_stopped_and_cancelled(database):
    trial_id = await new_trial(database)
    claimed = await claim(database, trial_id, "w1")
    async with database.session() as session:
        assert await trial_runs.stop_reason(session, claimed=claimed) is None
        await experiment_commands.cancel(session, experiment_id=claimed.experiment_id)
    async with database.session() as session:
        assert await trial_runs.stop_reason(session, claimed=claimed) == "cancelled"
        assert await trial_runs.record_cancelled(session, claimed=claimed)
    trial = await read(database, trial_id)
    assert trial.status == TrialStatus.CANCELLED and trial.attempts == 1
    assert trial.responses is None and trial.failure is None and trial.finished_at is not None
    assert trial.lease_expires_at is None


async def test_the_reaper_cancels_a_lost_trial_of_a_cancelled_experiment(database, redis_url):
    trial_id = await new_trial(database)
    claimed = await claim(database, trial_id, "w1")
    async with database.session() as session:
        await experiment_commands.cancel(session, experiment_id=claimed.experiment_id)
    await expire_and_reap(database, trial_id, redis_url)
    trial = await read(database, trial_id)
    assert trial.status == TrialStatus.CANCELLED and trial.attempts == 1
    assert trial_id not in await TaskQueue(redis_url).live_trial_ids()


@pytest.fixture
def short_retries(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """db_retry_seconds of 2 s and quick backoff for this test's worker code."""
    monkeypatch.setenv("GALERA_DOE_DATABASE_URL", f"sqlite+aiosqlite:///{tmp_path / 'w.db'}")
    monkeypatch.setenv("GALERA_DOE_DB_RETRY_SECONDS", "2")
    monkeypatch.setattr(runtime, "FIRST_RETRY_DELAY_S", 0.05)
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def _unreachable() -> OperationalError:
    return OperationalError("SELECT 1", {}, ConnectionRefusedError(111, "Connection refused"))


async def test_database_steps_are_retried_while_the_database_is_unreachable(short_retries, caplog):
    tries = []

    async def flaky(_session: object) -> str:
        tries.append(1)
        if len(tries) < 3:
            raise _unreachable()
        return "done"

    assert await runtime.retrying("testing", flaky) == "done"
    assert len(tries) == 3
    assert "database unreachable while testing" in caplog.text
    assert "database reachable again: testing done after 2 failed tries" in caplog.text
    runtime.close()


async def test_database_retries_are_bounded_and_only_for_an_unreachable_database(
    short_retries,
):
    async def down(_session: object) -> None:
        raise _unreachable()

    async def refused(_session: object) -> None:
        raise IntegrityError("INSERT", {}, ValueError("duplicate"))

    with pytest.raises(OperationalError):
        await runtime.retrying("testing", down)
    with pytest.raises(IntegrityError):
        await runtime.retrying("testing", refused)
    runtime.close()
