"""Sends trial ids to the workers through the broker, by task name (no worker code imported).

Every target has a queue of its own (`trials.<target>`), carrying its trials and the steps of its
experiments' optimization loops: a worker consumes the queues of the targets in its own targets
file, so one worker per cluster, on any machine, gets exactly that cluster's work.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Sequence
from datetime import datetime

import redis
from celery import Celery

RUN_TRIAL_TASK = "galera_doe.run_trial"
ADVANCE_OPTIMIZATION_TASK = "galera_doe.advance_optimization"
TRIALS_QUEUE_PREFIX = "trials."
# Where kombu's Redis transport keeps delivered, unacknowledged messages, and when each was
# delivered (a sorted set scored by the consumer's clock).
UNACKED_KEY = "unacked"
UNACKED_INDEX_KEY = "unacked_index"
# kombu puts an unacknowledged message back in its queue once it was delivered this long ago
# (its default is an hour). It must outlast the longest a live worker holds a message, or the
# message of a trial still running is delivered again: a worker waits up to two hours for its
# target (`trial_runs.execution.LEASE_WAIT`), then runs the trial. A message held by a dead
# worker does not wait for it: the reaper sends the trial again after `resend_after_seconds`
# (see `live_trial_ids`), and when kombu restores the old message at last, its delivery finds
# the trial no longer queued and skips it (the claim is one conditional UPDATE). So a
# duplicate costs a skip, never a second run.
BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 12 * 3600}


def trial_queue(target: str) -> str:
    """The queue of one target's trials and loop steps."""
    return f"{TRIALS_QUEUE_PREFIX}{target}"


class BrokerUnavailableError(RuntimeError):
    """The broker could not be reached; `sent` messages went out before it failed."""

    def __init__(self, message: str, sent: int = 0) -> None:
        super().__init__(message)
        self.sent = sent


class TaskQueue:
    """A publish-only handle on the Celery broker."""

    def __init__(self, broker_url: str) -> None:
        self.broker_url = broker_url
        self._celery = Celery("galera_doe_api", broker=broker_url)
        self._celery.conf.broker_connection_timeout = 3
        self._celery.conf.broker_transport_options = BROKER_TRANSPORT_OPTIONS

    def _send(self, record_id: int, target: str, task: str = RUN_TRIAL_TASK) -> None:
        try:
            # A short, bounded retry: a request must not hang while the broker is down.
            self._celery.send_task(
                task,
                args=[record_id],
                queue=trial_queue(target),
                retry=True,
                retry_policy={"max_retries": 2, "interval_start": 0.2, "interval_step": 0.5},
            )
        except Exception as error:  # kombu raises several unrelated types for "unreachable"
            raise BrokerUnavailableError(
                f"broker {self._redacted()} unreachable: {error}"
            ) from error

    async def enqueue_trials(self, trial_ids: Sequence[int], *, target: str) -> None:
        """Send one `run_trial(trial_id)` message per id, in order, to the target's queue."""
        await asyncio.to_thread(self._send_all, list(trial_ids), target)

    def _send_all(self, trial_ids: list[int], target: str) -> None:
        for sent, trial_id in enumerate(trial_ids):
            try:
                self._send(trial_id, target)
            except BrokerUnavailableError as error:
                raise BrokerUnavailableError(str(error), sent=sent) from error

    async def enqueue_advance(self, optimization_id: int, *, target: str) -> None:
        """Send one `advance_optimization(optimization_id)` message, the loop's next step, to
        the queue of its experiment's target."""
        await asyncio.to_thread(self._send, optimization_id, target, ADVANCE_OPTIMIZATION_TASK)

    async def live_trial_ids(self, *, delivered_since: datetime | None = None) -> set[int]:
        """The trial ids that have a message in the broker: waiting in a queue, or delivered to
        a worker and not yet acknowledged (the Redis transport keeps those in `unacked`).

        With `delivered_since`, a message delivered before then counts only while it waits in
        a queue: the worker holding it may have died before it claimed the trial, and nothing
        in the broker tells a dead holder from one still waiting for its target."""
        return await asyncio.to_thread(self._live_trial_ids, delivered_since)

    def _live_trial_ids(self, delivered_since: datetime | None) -> set[int]:
        try:
            client = redis.Redis.from_url(
                self.broker_url, socket_connect_timeout=2, socket_timeout=5
            )
            queues = client.scan_iter(match=f"{TRIALS_QUEUE_PREFIX}*", _type="list")
            waiting = [item for queue in queues for item in client.lrange(queue, 0, -1)]
            unacked = client.hgetall(UNACKED_KEY)
            delivered_at = dict(client.zrange(UNACKED_INDEX_KEY, 0, -1, withscores=True))
            client.close()
        except redis.RedisError as error:
            raise BrokerUnavailableError(
                f"broker {self._redacted()} unreachable: {error}"
            ) from error
        since = float("-inf") if delivered_since is None else delivered_since.timestamp()
        # A delivery without its time (written between the two reads) is a fresh one.
        delivered = [
            json.loads(item)[0]
            for tag, item in unacked.items()
            if delivered_at.get(tag, float("inf")) >= since
        ]
        messages = [json.loads(item) for item in waiting] + delivered
        return {
            int(json.loads(base64.b64decode(message["body"]))[0][0])
            for message in messages
            if message.get("headers", {}).get("task") == RUN_TRIAL_TASK
        }

    async def ping(self) -> None:
        """Raise BrokerUnavailableError unless the broker answers."""
        await asyncio.to_thread(self._ping)

    def _ping(self) -> None:
        try:
            client = redis.Redis.from_url(
                self.broker_url, socket_connect_timeout=2, socket_timeout=2
            )
            client.ping()
            client.close()
        except redis.RedisError as error:
            raise BrokerUnavailableError(
                f"broker {self._redacted()} unreachable: {error}"
            ) from error

    def _redacted(self) -> str:
        scheme, _, rest = self.broker_url.partition("://")
        return f"{scheme}://{rest.rpartition('@')[2]}"
