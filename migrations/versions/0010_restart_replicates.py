"""A closed loop may measure its replicates in a fresh cluster state (nodes restarted first)

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-26
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Plain ADD COLUMN, not a batch copy: on SQLite a copy of `trials` or `optimizations` would
# drop the triggers that count `trials_revision` (migration 0007).
COLUMNS = {"optimizations": "restart_replicates", "trials": "restart_first"}


def upgrade() -> None:
    for table, column in COLUMNS.items():
        op.add_column(
            table, sa.Column(column, sa.Boolean(), nullable=False, server_default=sa.false())
        )


def downgrade() -> None:
    for table, column in COLUMNS.items():
        with op.batch_alter_table(table) as batch:
            batch.drop_column(column)
