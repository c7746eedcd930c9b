"""A trial that reads today's settings from its target's nodes before it runs (a baseline's
"current"): the simulated target's read, the contract's refusal, and the worker's path from
the values read to the configuration run and stored, through `trial_runs.execute` on a SQLite
database of its own (no broker: a trial that succeeds or fails as infeasible sends nothing).
The real clusters' reads are tested on them: tests/worker/test_galera.py (lab) and
tests/worker/test_ssh_target.py (ssh)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest

from app.db import rows
from app.db.migrate import upgrade_to_head
from app.db.models import Experiment, Trial
from app.db.session import Database
from app.queue import TaskQueue
from app.services import trial_runs
from app.services.trial_runs import ClaimedTrial
from app.services.trial_runs.sending import new_trial
from app.statuses import Failure, TrialSource, TrialStatus
from experiments.factors import FactorSpace
from worker import tasks
from worker.targets.base import Target, TargetError, TrialResult, Value
from worker.targets.simulated import SIMULATED_DEFAULTS, SimulatedTarget

TARGET = "simulated-current"
FACTORS: list[dict[str, Any]] = [
    {"name": "nodes", "kind": "integer", "low": 1, "high": 5},
    {"name": "threads_per_client", "kind": "integer", "low": 1, "high": 32},
    {"name": "wsrep_slave_threads", "kind": "integer", "low": 1, "high": 16},
]
GIVEN = {"nodes": 3, "threads_per_client": 8}


class Unreadable(Target):
    """A target that runs trials but keeps the contract's default read."""

    kind = "unreadable"
    accepted_factors = ()

    def run(
        self,
        config: dict[str, Value],
        *,
        run_key: int,
        cancel: threading.Event | None = None,
        fresh: bool = False,
    ) -> TrialResult:
        return TrialResult(responses={"tps": 1.0}, raw_output="")


@pytest.fixture
def simulated(monkeypatch: pytest.MonkeyPatch) -> SimulatedTarget:
    """A noise-free simulated target, the one the worker runs trials of `TARGET` on."""
    target = SimulatedTarget(TARGET, {"noise": 0.0})
    monkeypatch.setitem(tasks._targets, TARGET, target)
    return target


def claimed(factors: list[dict[str, Any]] = FACTORS, target: str = TARGET) -> ClaimedTrial:
    return ClaimedTrial(
        trial_id=7,
        experiment_id=1,
        target=target,
        config=dict(GIVEN),
        attempt=1,
        worker="w",
        reads_current=("wsrep_slave_threads",),
        factors=factors,
    )


def test_the_simulated_nodes_report_the_model_s_own_default():
    target = SimulatedTarget("s", {})
    assert target.read_current(GIVEN, ["wsrep_slave_threads"]) == {
        "wsrep_slave_threads": str(SIMULATED_DEFAULTS["wsrep_slave_threads"])
    }
    # What a trial that leaves it out runs with: the value read is the one the model uses.
    quiet = SimulatedTarget("s", {"noise": 0.0})
    read = int(quiet.read_current(GIVEN, ["wsrep_slave_threads"])["wsrep_slave_threads"])
    assert (
        quiet.run(GIVEN, run_key=1).responses
        == quiet.run(GIVEN | {"wsrep_slave_threads": read}, run_key=1).responses
    )
    with pytest.raises(TargetError, match=r"cannot read threads_per_client .*wsrep_slave_threads"):
        target.read_current(GIVEN, ["wsrep_slave_threads", "threads_per_client"])


def test_a_target_that_cannot_read_says_so():
    with pytest.raises(TargetError) as refused:
        Unreadable("box", {}).read_current({}, ["wsrep_slave_threads"])
    assert str(refused.value) == "target 'box' (unreadable) cannot read its nodes' settings"


def test_the_worker_runs_the_values_read_and_returns_them(simulated: SimulatedTarget):
    outcome = tasks._run_on_target(claimed(), threading.Event())
    assert outcome.failure is None, outcome.error
    whole = GIVEN | {"wsrep_slave_threads": 1}
    assert outcome.config == whole
    assert list(outcome.config) == [f["name"] for f in FACTORS]  # in factor order
    assert outcome.record == {"read_from_nodes": {"wsrep_slave_threads": "1"}}
    assert outcome.responses == simulated.run(whole, run_key=7).responses
    # A trial that reads nothing runs its stored configuration and leaves it as it is.
    plain = ClaimedTrial(7, 1, TARGET, dict(whole), 1, "w", factors=FACTORS)
    assert tasks._run_on_target(plain, threading.Event()).config is None


def test_a_value_outside_the_factor_s_space_fails_the_trial_as_infeasible(
    simulated: SimulatedTarget,
):
    narrow = [*FACTORS[:2], {"name": "wsrep_slave_threads", "kind": "integer", "low": 2, "high": 8}]
    outcome = tasks._run_on_target(claimed(narrow), threading.Event())
    assert outcome.failure == Failure.INFEASIBLE
    assert outcome.error.startswith(
        "baseline.wsrep_slave_threads: the nodes run wsrep_slave_threads = 1; "
    ), outcome.error
    assert "2" in outcome.error and "8" in outcome.error


def test_a_target_that_cannot_read_fails_the_trial(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setitem(tasks._targets, "box", Unreadable("box", {}))
    outcome = tasks._run_on_target(claimed(target="box"), threading.Event())
    assert outcome.failure == Failure.ERROR
    assert outcome.error == "target 'box' (unreadable) cannot read its nodes' settings"


@pytest.fixture(scope="module")
async def database(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Database]:
    """A migrated SQLite database of the module's own."""
    url = f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('current') / 'current.sqlite3'}"
    await asyncio.to_thread(upgrade_to_head, url)
    handle = Database(url)
    yield handle
    await handle.dispose()


async def baseline_trial(database: Database, factors: list[dict[str, Any]]) -> int:
    """A queued trial holding only the given values, reading wsrep_slave_threads."""
    async with database.session() as session:
        experiment = Experiment(
            name="baseline", target=TARGET, factors=factors, design=None, design_notes=[],
            objective={"response": "tps", "goal": "maximize"}, status="running",
        )  # fmt: skip
        session.add(experiment)
        await session.flush()
        trial = Trial(
            experiment_id=experiment.id, run_order=1, point_type="baseline",
            source=TrialSource.BASELINE, config=dict(GIVEN), coded=None,
            reads_current=["wsrep_slave_threads"], status=TrialStatus.QUEUED, attempts=0,
        )  # fmt: skip
        session.add(trial)
        await session.commit()
        return trial.id


def worker_on(database: Database) -> trial_runs.Worker:
    async def steps(what: str, operation: Any) -> Any:
        async with database.session() as session:
            return await operation(session)

    return trial_runs.Worker(
        holder="current-test",
        lease=timedelta(minutes=1),
        max_attempts=3,
        cancel_poll_seconds=0.1,
        # Never reached: neither outcome here sends a message.
        queue=TaskQueue("redis://127.0.0.1:1/0"),
        steps=steps,
        sessions=database.session,
        run=tasks._run_on_target,
        recover=tasks._recover,
    )


async def stored(database: Database, trial_id: int) -> Trial:
    async with database.session() as session:
        trial = await rows.get_trial(session, trial_id)
    assert trial is not None
    return trial


async def test_the_trial_stores_the_configuration_read_with_its_coded_values(
    database: Database, simulated: SimulatedTarget
):
    trial_id = await baseline_trial(database, FACTORS)
    async with database.session() as session:
        held = await trial_runs.claim(
            session, trial_id=trial_id, worker="someone", lease=timedelta(minutes=1)
        )
    assert held is not None
    assert held.reads_current == ("wsrep_slave_threads",) and held.factors == FACTORS
    async with database.session() as session:  # give it back to the queue for the worker
        await rows.transition(
            session, trial_id, from_statuses=[TrialStatus.RUNNING], to_status=TrialStatus.QUEUED
        )
        await session.commit()

    assert await trial_runs.execute(trial_id, worker_on(database)) == "succeeded"
    trial = await stored(database, trial_id)
    whole = GIVEN | {"wsrep_slave_threads": 1}
    assert trial.status == TrialStatus.SUCCEEDED
    assert trial.config == whole
    space = FactorSpace.from_dicts(FACTORS)
    made = new_trial(
        space, experiment_id=1, run_order=1, config=whole, point_type="x", source=TrialSource.DESIGN
    )
    assert trial.coded == made.coded  # as a trial planned at these values is coded
    assert trial.record == {"read_from_nodes": {"wsrep_slave_threads": "1"}}
    assert trial.responses == simulated.run(whole, run_key=trial_id).responses


async def test_a_value_read_outside_the_space_fails_the_trial_once(
    database: Database, simulated: SimulatedTarget
):
    narrow = [*FACTORS[:2], {"name": "wsrep_slave_threads", "kind": "integer", "low": 4, "high": 8}]
    trial_id = await baseline_trial(database, narrow)
    assert await trial_runs.execute(trial_id, worker_on(database)) == "failed"
    trial = await stored(database, trial_id)
    assert (trial.status, trial.failure, trial.attempts) == (
        TrialStatus.FAILED,
        Failure.INFEASIBLE,
        1,
    )
    assert "baseline.wsrep_slave_threads: the nodes run wsrep_slave_threads = 1" in trial.error
    assert trial.config == GIVEN and trial.coded is None  # nothing was run
