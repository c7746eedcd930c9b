"""What each experiment's trials add up to, read for a page of experiments at once and kept
per revision of its trials.

Status polls dominate the API's traffic, and adding up an experiment's trials (counts, timing,
best trial) reads every one of them. Database triggers count up `experiments.trials_revision`
in the same transaction as any change of a trial or a new loop (migration 0007), so a tally
read at one revision holds until the revision moves, whichever process wrote the change."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.db import overview
from app.db.models import Experiment
from app.db.overview import StatusSummary
from app.statuses import TrialStatus

DEFAULT_CACHE_SIZE = 10_000


@dataclass(frozen=True)
class Tally:
    """One experiment's trials added up: a summary per status, its top trials for its
    objective (see `overview.top_trials`), the starts of its running trials, and its
    newest optimization loop (id, and how many trials that loop made)."""

    summaries: tuple[StatusSummary, ...]
    top: tuple[Any, ...]
    running_starts: tuple[datetime, ...]
    latest_loop: int | None
    loop_trials: int


_Key = tuple[int, datetime, int, str, str]


def _key(experiment: Experiment) -> _Key:
    # The creation time too: an id that an operator's DELETE freed may be used again (SQLite).
    objective = experiment.parsed_objective
    return (
        experiment.id,
        experiment.created_at,
        experiment.trials_revision,
        objective.response,
        objective.goal,
    )


class TallyCache:
    """Tallies by experiment, trials revision and objective; the `size` most recently used
    are kept. One per process and database: the revision is only meaningful in its database.

    Only for experiments read from the database in the same transaction that reads their
    tallies: an experiment changed earlier in a session holds a revision older than its row."""

    def __init__(self, size: int = DEFAULT_CACHE_SIZE) -> None:
        self._size = size
        self._entries: OrderedDict[_Key, Tally] = OrderedDict()

    def get(self, experiment: Experiment) -> Tally | None:
        """The tally of the experiment at its revision, if kept."""
        key = _key(experiment)
        tally = self._entries.get(key)
        if tally is not None:
            self._entries.move_to_end(key)
        return tally

    def put(self, experiment: Experiment, tally: Tally) -> None:
        """Keep a tally read after the experiment (so at its revision or a later one)."""
        key = _key(experiment)
        self._entries[key] = tally
        self._entries.move_to_end(key)
        while len(self._entries) > self._size:
            self._entries.popitem(last=False)


async def tallies(
    session: AsyncSession, experiments: Sequence[Experiment], cache: TallyCache | None = None
) -> dict[int, Tally]:
    """The tally of each experiment by id: from `cache` when its trials have not changed
    since, otherwise read (one query for the page in the common case; one more per other
    objective on the page, for loops, and for an experiment with more than two running
    trials)."""
    known = {e.id: t for e in experiments if cache and (t := cache.get(e)) is not None}
    missing = [e for e in experiments if e.id not in known]
    if not missing:
        return known
    read = await _read(session, missing)
    if cache is not None:
        for experiment in missing:
            cache.put(experiment, read[experiment.id])
    return known | read


async def _read(session: AsyncSession, experiments: Sequence[Experiment]) -> dict[int, Tally]:
    objectives: dict[tuple[str, str], list[int]] = {}
    for experiment in experiments:
        objective = experiment.parsed_objective
        key = (objective.response, objective.goal)
        objectives.setdefault(key, []).append(experiment.id)
    (response, goal), top_ids = next(iter(objectives.items()))
    ids = [e.id for e in experiments]
    added_up = await overview.overview_trials(
        session, ids, top_ids=top_ids, response=response, maximize=goal == "maximize"
    )
    top = list(added_up.top)
    for (response, goal), more in list(objectives.items())[1:]:
        top += await overview.top_trials(
            session, more, response=response, maximize=goal == "maximize"
        )
    summaries = added_up.summaries
    # A target runs one trial at a time: the summary has the starts of up to two running ones.
    running = [
        (s.experiment_id, start)
        for s in summaries
        if s.status == TrialStatus.RUNNING
        for start in s.starts or []
    ]
    if any(s.status == TrialStatus.RUNNING and s.starts is None for s in summaries):
        running = await overview.running_trial_starts(session, ids)
    used = await overview.count_loop_trials(session, list(added_up.latest_loops.values()))
    read = {}
    for experiment_id in ids:
        loop = added_up.latest_loops.get(experiment_id)
        read[experiment_id] = Tally(
            summaries=tuple(s for s in summaries if s.experiment_id == experiment_id),
            top=tuple(row for row in top if row.experiment_id == experiment_id),
            running_starts=tuple(start for owner, start in running if owner == experiment_id),
            latest_loop=loop,
            loop_trials=0 if loop is None else used.get(loop, 0),
        )
    return read
