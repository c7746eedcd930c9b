"""A revision of each experiment's trials, counted by triggers

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-25
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Every change of a trial (and every new optimization loop) counts up its experiment's
# `trials_revision` in the same transaction, whoever writes it: the API keeps what the trials
# add up to per revision and polls read no trial while nothing changed. Triggers, not the
# application, so that no write path (the workers', the reaper's, an operator's UPDATE) can
# forget it. A later batch migration that copies `trials` or `optimizations` (SQLite) drops
# their triggers and must create them again; test_persistence checks them at head.
BUMPS = {
    "trials_revision_insert": ("INSERT", "trials", "NEW.experiment_id"),
    "trials_revision_update": ("UPDATE", "trials", "NEW.experiment_id"),
    "trials_revision_delete": ("DELETE", "trials", "OLD.experiment_id"),
    "optimizations_revision_insert": ("INSERT", "optimizations", "NEW.experiment_id"),
}


def _create_trigger(name: str, event: str, table: str, experiment: str) -> str:
    bump = f"UPDATE experiments SET trials_revision = trials_revision + 1 WHERE id = {experiment}"
    if op.get_bind().dialect.name == "sqlite":
        return f"CREATE TRIGGER {name} AFTER {event} ON {table} FOR EACH ROW BEGIN {bump}; END"
    return f"CREATE TRIGGER {name} AFTER {event} ON {table} FOR EACH ROW {bump}"


def upgrade() -> None:
    with op.batch_alter_table("experiments") as batch:
        batch.add_column(
            sa.Column("trials_revision", sa.Integer(), nullable=False, server_default="0")
        )
    for name, (event, table, experiment) in BUMPS.items():
        op.execute(_create_trigger(name, event, table, experiment))


def downgrade() -> None:
    for name in BUMPS:
        op.execute(f"DROP TRIGGER IF EXISTS {name}")
    with op.batch_alter_table("experiments") as batch:
        batch.drop_column("trials_revision")
