"""The Celery app `worker.celery_app:celery_app`: Redis broker, one trial at a time per worker."""

from __future__ import annotations

from celery import Celery
from kombu import Queue

from app.config import get_settings
from app.queue import BROKER_TRANSPORT_OPTIONS, trial_queue
from app.target_specs import load_targets

settings = get_settings()
celery_app = Celery("galera_doe", broker=settings.broker_url, include=["worker.tasks"])
celery_app.conf.update(
    # Without -Q a worker consumes the queue of every target it can run: its own targets file
    # decides what it takes, so a worker never receives a trial for a cluster it does not know.
    task_queues=[
        Queue(trial_queue(spec.name))
        for spec in load_targets(settings.targets_file).values()
        if spec.runnable
    ],
    # A trial is acknowledged only after it is recorded, so a worker lost mid-trial
    # leaves the message to be delivered again; the database claim makes the rerun safe.
    task_acks_late=True,
    task_reject_on_worker_lost=True,
    worker_prefetch_multiplier=1,
    # kombu's visibility timeout: why hours, and why a dead worker's trial does not wait for
    # it (the reaper sends it again), in app.queue.
    broker_transport_options=BROKER_TRANSPORT_OPTIONS,
    task_ignore_result=True,
    broker_connection_retry_on_startup=True,
    worker_hijack_root_logger=False,
)
