"""The reaper: a background task of the API that keeps every trial moving.

Workers renew a running trial's lease; when one dies (SIGKILL, a lost machine) its lease runs
out and the reaper sends the trial again, or fails it after the attempt limit. Trials left
queued without a message (the broker restarted without persistence) are sent again; a trial
whose worker died after its experiment was cancelled is cancelled; an optimization loop whose
round ended long ago without the next one planned is asked again. Several API processes may
reap at once: every change is a conditional UPDATE, and a trial sent twice runs once.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta

from app.config import Settings
from app.db.session import Database
from app.queue import TaskQueue
from app.services import trial_runs

log = logging.getLogger(__name__)


async def reap_forever(database: Database, queue: TaskQueue, settings: Settings) -> None:
    """Reap every `reaper_interval_seconds` until cancelled; a pass that fails (database or
    broker down) is logged and retried at the next interval."""
    while True:
        await asyncio.sleep(settings.reaper_interval_seconds)
        try:
            async with database.session() as session:
                reaped = await trial_runs.reap(
                    session,
                    queue=queue,
                    max_attempts=settings.max_trial_attempts,
                    resend_after=timedelta(seconds=settings.resend_after_seconds),
                )
        except Exception as error:  # the next pass retries; the database keeps the state
            log.warning("reaper pass failed: %s", error)
            continue
        if reaped.advanced:
            log.warning(
                "reaper: optimization loops %s had finished their round long ago without "
                "planning the next (a lost message): asked again",
                reaped.advanced,
            )
        if reaped.requeued or reaped.failed or reaped.resent or reaped.cancelled:
            log.warning(
                "reaper: trials %s lost their worker and were sent again, %s failed for good "
                "after %d attempts, %s had lost their message and were sent again, %s lost "
                "their worker after their experiment was cancelled and are cancelled",
                reaped.requeued,
                reaped.failed,
                settings.max_trial_attempts,
                reaped.resent,
                reaped.cancelled,
            )
