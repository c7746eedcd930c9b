"""What the trials add up to, kept per trials revision: the triggers that count the revision
on both backends, and polls that read the trials again exactly when they changed."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import delete, select, update

from app.db import overview, rows
from app.db.models import Experiment, Optimization, Trial, utcnow
from app.db.session import Database
from app.services.tallies import Tally, TallyCache
from app.statuses import TrialStatus
from tests.app.test_api import SIMULATED, create
from tests.app.test_persistence import new_experiment


async def revision(database: Database, experiment_id: int) -> int:
    async with database.session() as session:
        query = select(Experiment.trials_revision).where(Experiment.id == experiment_id)
        return int((await session.execute(query)).scalar_one())


async def test_every_change_of_a_trial_and_every_new_loop_counts_up_the_revision(database):
    ours, other = await new_experiment(database), await new_experiment(database)
    assert await revision(database, ours) == 0
    async with database.session() as session:
        session.add_all(
            Trial(experiment_id=ours, run_order=i, point_type="factorial", config={"n": i})
            for i in (1, 2)
        )
        await session.commit()
    assert await revision(database, ours) == 2  # one per row
    async with database.session() as session:
        await session.execute(
            update(Trial).where(Trial.experiment_id == ours).values(status=TrialStatus.QUEUED)
        )
        await session.commit()
    assert await revision(database, ours) == 4
    async with database.session() as session:
        trial = (await rows.list_trials(session, ours))[0]
        trial.responses = {"tps": 1.0}
        await session.commit()
    assert await revision(database, ours) == 5
    async with database.session() as session:
        session.add(Optimization(experiment_id=ours, strategy="bayes", budget=3))
        await session.commit()
    assert await revision(database, ours) == 6
    async with database.session() as session:
        await session.execute(delete(Trial).where(Trial.id == trial.id))
        await session.commit()
    assert await revision(database, ours) == 7
    assert await revision(database, other) == 0


def counting_reads(monkeypatch) -> list[int]:
    """Count the reads of trial tallies (one per page of experiments read)."""
    reads: list[int] = []
    read = overview.overview_trials

    async def counted(*args: Any, **kwargs: Any) -> Any:
        reads.append(1)
        return await read(*args, **kwargs)

    monkeypatch.setattr(overview, "overview_trials", counted)
    return reads


async def test_polls_read_the_trials_again_exactly_when_they_changed(
    api, app_under_test, monkeypatch
):
    made = await create(api, SIMULATED)
    reads = counting_reads(monkeypatch)
    first = (await api.get(f"/experiments/{made['id']}")).json()
    again = (await api.get(f"/experiments/{made['id']}")).json()
    assert again == first and len(reads) == 1
    assert first["progress"]["pending"] == len(made["trials"]) and first["best"] is None

    # A worker records a result: another session, as another process would.
    winner = made["trials"][3]["id"]
    async with app_under_test.state.database.session() as session:
        await session.execute(
            update(Trial)
            .where(Trial.id == winner)
            .values(
                status=TrialStatus.SUCCEEDED,
                started_at=utcnow(),
                finished_at=utcnow(),
                responses={"tps": 1234.5},
            )
        )
        await session.commit()
    after = (await api.get(f"/experiments/{made['id']}")).json()
    assert len(reads) == 2
    assert after["progress"]["succeeded"] == 1
    assert after["best"] == {
        "trial_id": winner,
        "value": 1234.5,
        "config": made["trials"][3]["config"],
    }

    await api.get("/experiments")  # tallies the page (the other tests' experiments too)
    before_listing = len(reads)
    listed = (await api.get("/experiments")).json()
    (page,) = [e for e in listed if e["id"] == made["id"]]
    # All but what moves with the clock: how long it has run, and when it will end.
    for moving in ("elapsed_s", "estimated_finish_at"):
        del page["timing"][moving], after["timing"][moving]
    assert page == after
    assert len(reads) == before_listing  # nothing changed: no trial read


async def test_the_cache_keeps_the_most_recently_used_tallies():
    cache = TallyCache(size=2)
    tally = Tally(summaries=(), top=(), running_starts=(), latest_loop=None, loop_trials=0)
    objective = {"response": "tps", "goal": "maximize"}
    made = utcnow()
    a, b, c = (
        Experiment(id=i, created_at=made, trials_revision=0, objective=objective) for i in (1, 2, 3)
    )
    cache.put(a, tally)
    cache.put(b, tally)
    assert cache.get(a) is tally  # a is now the most recently used
    cache.put(c, tally)
    assert cache.get(b) is None and cache.get(a) is tally and cache.get(c) is tally
    a.trials_revision = 1
    assert cache.get(a) is None  # another revision is another tally
    a.objective = {"response": "latency_p95_ms", "goal": "minimize"}
    a.trials_revision = 0
    assert cache.get(a) is None  # and so is another objective
    cache.put(b, tally)
    assert cache.get(b) is tally
    b.created_at = made + timedelta(seconds=1)
    assert cache.get(b) is None  # and another experiment that got an id used before
