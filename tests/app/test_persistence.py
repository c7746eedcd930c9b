"""The data layer on both backends: migrations, atomic claims, the worker's use cases."""

from __future__ import annotations

import asyncio
import base64
import json
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
import redis
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect, text, update

from app.db import rows
from app.db.migrate import (
    SchemaOutOfDateError,
    alembic_config,
    ensure_schema,
    head_revision,
    upgrade_to_head,
)
from app.db.models import Base, Experiment, Optimization, Suggestion, Trial, utcnow
from app.db.session import Database
from app.queue import ADVANCE_OPTIMIZATION_TASK, TaskQueue, trial_queue
from app.services import trial_runs
from app.statuses import Failure, TrialStatus
from tests.conftest import clear_trial_queues, mariadb


async def new_experiment(database: Database) -> int:
    """A running experiment on the simulated target, with no trials."""
    async with database.session() as session:
        experiment = Experiment(
            name="t", target="simulated", factors=[], design=None, design_notes=[],
            objective={"response": "tps", "goal": "maximize"}, status="running",
        )  # fmt: skip
        session.add(experiment)
        await session.commit()
        return experiment.id


async def new_trial(database: Database, status: str = TrialStatus.QUEUED) -> int:
    experiment_id = await new_experiment(database)
    async with database.session() as session:
        trial = Trial(
            experiment_id=experiment_id, run_order=1, point_type="factorial",
            config={"nodes": 3}, status=status, attempts=0,
        )  # fmt: skip
        session.add(trial)
        await session.commit()
        return trial.id


async def claim(database: Database, trial_id: int) -> trial_runs.ClaimedTrial | None:
    async with database.session() as session:
        return await trial_runs.claim(
            session, trial_id=trial_id, worker="w", lease=timedelta(minutes=1)
        )


async def test_migrations_match_the_models(database):
    def diff(connection):
        return compare_metadata(MigrationContext.configure(connection), Base.metadata)

    async with database.engine.connect() as connection:
        assert await connection.run_sync(diff) == []
        revision = await connection.execute(text("SELECT version_num FROM alembic_version"))
        assert revision.scalar_one() == head_revision()


async def test_ensure_schema_accepts_head_and_refuses_another_revision(database):
    await ensure_schema(database)
    async with database.engine.begin() as connection:
        await connection.execute(text("UPDATE alembic_version SET version_num = 'old'"))
    try:
        with pytest.raises(SchemaOutOfDateError, match="alembic upgrade head"):
            await ensure_schema(database)
    finally:
        async with database.engine.begin() as connection:
            await connection.execute(
                text("UPDATE alembic_version SET version_num = :head"), {"head": head_revision()}
            )


async def test_a_trial_is_claimed_once(database):
    trial_id = await new_trial(database)
    lease = timedelta(minutes=5)
    async with database.session() as session:
        first = await trial_runs.claim(session, trial_id=trial_id, worker="w1", lease=lease)
    async with database.session() as session:
        second = await trial_runs.claim(session, trial_id=trial_id, worker="w2", lease=lease)
    assert first is not None and first.attempt == 1 and first.config == {"nodes": 3}
    assert second is None
    async with database.session() as session:
        trial = await rows.get_trial(session, trial_id)
    assert trial is not None
    assert trial.status == TrialStatus.RUNNING and trial.worker == "w1" and trial.attempts == 1
    assert trial.lease_expires_at is not None and trial.started_at is not None
    assert timedelta(minutes=4) < trial.lease_expires_at - trial.started_at <= lease


async def test_concurrent_claims_have_one_winner(database):
    trial_id = await new_trial(database)

    async def claim(worker: str) -> bool:
        async with database.session() as session:
            claimed = await trial_runs.claim(
                session, trial_id=trial_id, worker=worker, lease=timedelta(minutes=1)
            )
            return claimed is not None

    results = await asyncio.gather(*(claim(f"w{i}") for i in range(6)))
    assert sum(results) == 1


async def test_only_queued_trials_are_claimed(database):
    for status in (TrialStatus.PENDING, TrialStatus.SUCCEEDED, TrialStatus.CANCELLED):
        trial_id = await new_trial(database, status)
        assert await claim(database, trial_id) is None


async def test_results_are_recorded_and_complete_the_experiment(database):
    trial_id = await new_trial(database)
    claimed = await claim(database, trial_id)
    assert claimed is not None
    async with database.session() as session:
        assert await trial_runs.record_success(
            session, claimed=claimed, responses={"tps": 1234.5}, raw_output="x" * 100_000
        )
    async with database.session() as session:
        # A second record of the same claim changes nothing.
        assert not await trial_runs.record_failure(session, claimed=claimed, error="late")
        trial = await rows.get_trial(session, trial_id)
        experiment = await rows.get_experiment(session, claimed.experiment_id)
    assert trial is not None and experiment is not None
    assert trial.status == TrialStatus.SUCCEEDED and trial.responses == {"tps": 1234.5}
    assert trial.raw_output is not None and len(trial.raw_output) == 100_000
    assert trial.error is None and trial.lease_expires_at is None and trial.finished_at
    assert experiment.status == "completed"


async def test_failures_keep_their_error(database):
    trial_id = await new_trial(database)
    claimed = await claim(database, trial_id)
    assert claimed is not None
    async with database.session() as session:
        await trial_runs.record_failure(session, claimed=claimed, error="sysbench exited 1")
    async with database.session() as session:
        trial = await rows.get_trial(session, trial_id)
    assert trial is not None
    assert trial.status == TrialStatus.FAILED and trial.failure == "error"
    assert trial.error == "attempt 1 (error): sysbench exited 1"


async def test_infrastructure_failures_are_retried_until_the_attempt_limit(database):
    trial_id = await new_trial(database)
    for attempt in (1, 2, 3):
        claimed = await claim(database, trial_id)
        assert claimed is not None and claimed.attempt == attempt
        async with database.session() as session:
            status = await trial_runs.record_failure(
                session,
                claimed=claimed,
                error=f"node 2 left the cluster ({attempt})",
                failure=Failure.INFRASTRUCTURE,
                max_attempts=3,
            )
        assert status == (TrialStatus.FAILED if attempt == 3 else TrialStatus.QUEUED)
    async with database.session() as session:
        trial = await rows.get_trial(session, trial_id)
    assert trial is not None and trial.failure == "infrastructure" and trial.attempts == 3
    assert trial.error is not None and trial.error.count("node 2 left the cluster") == 3


async def test_infeasible_configurations_are_never_retried(database):
    trial_id = await new_trial(database)
    claimed = await claim(database, trial_id)
    assert claimed is not None
    async with database.session() as session:
        status = await trial_runs.record_failure(
            session,
            claimed=claimed,
            error="Too many connections",
            failure=Failure.INFEASIBLE,
            max_attempts=3,
        )
    assert status == TrialStatus.FAILED


async def test_a_target_is_leased_to_one_holder_at_a_time(database):
    ttl = timedelta(seconds=30)
    async with database.session() as session:
        assert await trial_runs.acquire_target(session, target="lab", holder="w1", ttl=ttl)
    async with database.session() as session:
        assert not await trial_runs.acquire_target(session, target="lab", holder="w2", ttl=ttl)
        # Other targets are independent, and the holder renews its own lease.
        assert await trial_runs.acquire_target(session, target="ext", holder="w2", ttl=ttl)
        assert await trial_runs.acquire_target(session, target="lab", holder="w1", ttl=ttl)
    async with database.session() as session:
        await trial_runs.release_target(session, target="lab", holder="w1")
        assert await trial_runs.acquire_target(session, target="lab", holder="w2", ttl=ttl)
    async with database.session() as session:
        # A lease that expired can be taken over.
        await trial_runs.acquire_target(session, target="old", holder="w1", ttl=timedelta(0))
        assert await trial_runs.acquire_target(session, target="old", holder="w4", ttl=ttl)
    for target, holder in (("lab", "w2"), ("ext", "w2"), ("old", "w4")):
        async with database.session() as session:
            await trial_runs.release_target(session, target=target, holder=holder)


@pytest.fixture
async def scratch_url(database_url: str, tmp_path) -> AsyncIterator[str]:
    """An empty database of its own on the same backend, for migrating up and down."""
    if database_url.startswith("sqlite"):
        yield f"sqlite+aiosqlite:///{tmp_path / 'scratch.sqlite3'}"
        return
    name = f"galera_doe_scratch_{uuid.uuid4().hex[:10]}"
    await mariadb(f"CREATE DATABASE {name} CHARACTER SET utf8mb4")
    try:
        yield database_url.rsplit("/", 1)[0] + f"/{name}?charset=utf8mb4"
    finally:
        await mariadb(f"DROP DATABASE IF EXISTS {name}")


async def test_the_loop_tables_migrate_down_and_up_keeping_the_trials(scratch_url):
    await asyncio.to_thread(upgrade_to_head, scratch_url)
    database = Database(scratch_url)
    try:
        trial_id = await new_trial(database, TrialStatus.SUCCEEDED)
        async with database.session() as session:
            trial = await rows.get_trial(session, trial_id)
            loop = Optimization(experiment_id=trial.experiment_id, strategy="bayes", budget=5)
            session.add(loop)
            await session.flush()
            trial.optimization_id = loop.id
            session.add(
                Suggestion(
                    experiment_id=trial.experiment_id, optimization_id=loop.id, trial_id=trial_id,
                    strategy="bayes", stage="bayes", point_type="bayes", config={"nodes": 3},
                    reason="because", status="accepted",
                )
            )  # fmt: skip
            await session.commit()
        await database.dispose()
        await asyncio.to_thread(command.downgrade, alembic_config(scratch_url), "0003")
        async with database.engine.connect() as connection:
            tables = await connection.run_sync(lambda c: inspect(c).get_table_names())
            assert "optimizations" not in tables and "suggestions" not in tables
            count = await connection.execute(text("SELECT COUNT(*) FROM trials"))
            assert count.scalar_one() == 1
        await database.dispose()
        await asyncio.to_thread(upgrade_to_head, scratch_url)
        async with database.session() as session:
            trial = await rows.get_trial(session, trial_id)
            assert trial is not None and trial.optimization_id is None
    finally:
        await database.dispose()


async def test_the_reaper_requeues_expired_trials_and_fails_them_after_the_last_attempt(
    database, redis_url
):
    queue = TaskQueue(redis_url)
    expired, alive = await new_trial(database), await new_trial(database)
    for trial_id in (expired, alive):
        assert await claim(database, trial_id) is not None

    async def expire_and_reap() -> trial_runs.Reaped:
        async with database.session() as session:
            await session.execute(
                update(Trial).where(Trial.id == expired).values(lease_expires_at=utcnow())
            )
            await session.commit()
            return await trial_runs.reap(
                session, queue=queue, max_attempts=2, resend_after=timedelta(hours=1)
            )

    reaped = await expire_and_reap()
    assert reaped.requeued == [expired] and reaped.failed == []
    assert expired in await queue.live_trial_ids()
    # The second attempt dies too: that was the last one.
    assert await claim(database, expired) is not None
    reaped = await expire_and_reap()
    assert reaped.failed == [expired] and reaped.requeued == []
    async with database.session() as session:
        trial = await rows.get_trial(session, expired)
        untouched = await rows.get_trial(session, alive)
    assert trial is not None and untouched is not None
    assert trial.status == TrialStatus.FAILED and trial.failure == Failure.LOST
    assert trial.error is not None and trial.error.count("(lost): worker w stopped") == 2
    assert untouched.status == TrialStatus.RUNNING and untouched.attempts == 1


async def test_the_reaper_asks_again_for_the_round_of_a_loop_whose_message_was_lost(
    database, redis_url
):
    broker = redis.Redis.from_url(redis_url)
    finished = await new_trial(database)
    async with database.session() as session:
        trial = await rows.get_trial(session, finished)
        assert trial is not None
        long_ago = utcnow() - timedelta(minutes=10)
        trial.status, trial.finished_at = TrialStatus.SUCCEEDED, long_ago
        stalled = Optimization(
            experiment_id=trial.experiment_id, strategy="bayes", budget=5, updated_at=long_ago
        )
        session.add(stalled)
        await session.commit()
        reaped = await trial_runs.reap(
            session, queue=TaskQueue(redis_url), max_attempts=2, resend_after=timedelta(minutes=2)
        )
        assert stalled.id in reaped.advanced
        # A round that ended a moment ago is the worker's to ask for: the reaper waits.
        trial.finished_at = utcnow()
        await session.commit()
        later = await trial_runs.reap(
            session, queue=TaskQueue(redis_url), max_attempts=2, resend_after=timedelta(minutes=2)
        )
        assert stalled.id not in later.advanced
    messages = [json.loads(m) for m in broker.lrange(trial_queue("simulated"), 0, -1)]
    asked = [m for m in messages if m["headers"]["task"] == ADVANCE_OPTIMIZATION_TASK]
    assert [m["headers"]["argsrepr"] for m in asked].count(f"[{stalled.id}]") == 1
    broker.delete(trial_queue("simulated"))


def trials_waiting_in(broker: redis.Redis, target: str) -> list[int]:
    """The trial ids of the messages waiting in a target's queue."""
    messages = [json.loads(item) for item in broker.lrange(trial_queue(target), 0, -1)]
    return [json.loads(base64.b64decode(m["body"]))[0][0] for m in messages]


async def test_the_reaper_sends_again_each_queued_trial_whose_message_was_lost(database, redis_url):
    clear_trial_queues(redis_url)
    queue = TaskQueue(redis_url)
    ours = lost_here, lost_there, live, recent = [await new_trial(database) for _ in range(4)]
    long_ago, just_now = utcnow() - timedelta(minutes=10), utcnow()
    async with database.session() as session:
        for trial_id in ours:
            queued_at = just_now if trial_id == recent else long_ago
            await session.execute(
                update(Trial).where(Trial.id == trial_id).values(queued_at=queued_at)
            )
        there = (await rows.get_trial(session, lost_there)).experiment_id
        await session.execute(update(Experiment).where(Experiment.id == there).values(target="lab"))
        await session.commit()
    await queue.enqueue_trials([live], target="simulated")
    broker = redis.Redis.from_url(redis_url)
    try:
        async with database.session() as session:
            reaped = await trial_runs.reap(
                session, queue=queue, max_attempts=3, resend_after=timedelta(minutes=5)
            )
        # (Other tests' queued trials may be sent again too: the database is shared.)
        assert {lost_here, lost_there} <= set(reaped.resent)
        assert live not in reaped.resent and recent not in reaped.resent
        assert trials_waiting_in(broker, "simulated").count(lost_here) == 1
        assert trials_waiting_in(broker, "simulated").count(live) == 1
        assert trials_waiting_in(broker, "lab") == [lost_there]
        async with database.session() as session:
            for trial_id, sent_before in ((lost_here, None), (live, long_ago), (recent, just_now)):
                trial = await rows.get_trial(session, trial_id)
                assert trial is not None and trial.status == TrialStatus.QUEUED
                if sent_before is None:  # sent again: now
                    assert trial.queued_at > just_now
                else:
                    assert trial.queued_at == sent_before
    finally:
        broker.close()
        clear_trial_queues(redis_url)
        # The database is the session's: a later service's reaper would send these queued
        # trials again, and the one on "lab" would make its worker start a lab cluster.
        async with database.session() as session:
            await session.execute(
                update(Trial).where(Trial.id.in_(ours)).values(status=TrialStatus.CANCELLED)
            )
            await session.commit()
