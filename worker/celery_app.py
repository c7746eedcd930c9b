"""The Celery app `worker.celery_app:celery_app`: Redis broker, one trial at a time per worker."""

from __future__ import annotations

from celery import Celery

from app.config import get_settings
from app.queue import TRIALS_QUEUE

celery_app = Celery("galera_doe", broker=get_settings().broker_url, include=["worker.tasks"])
celery_app.conf.update(
    # A trial is acknowledged only after it is recorded, so a worker lost mid-trial
    # leaves the message to be delivered again; the database claim makes the rerun safe.
    task_acks_late=True,
    task_reject_on_worker_lost=True,
    worker_prefetch_multiplier=1,
    task_default_queue=TRIALS_QUEUE,
    task_ignore_result=True,
    broker_connection_retry_on_startup=True,
    worker_hijack_root_logger=False,
)
