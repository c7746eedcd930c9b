"""A closed loop may have a budget of trial time beside its budget of trials

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-27
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Plain ADD COLUMN, not a batch copy, as in 0010: a copy would drop the triggers of 0007.
    op.add_column("optimizations", sa.Column("budget_seconds", sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("optimizations") as batch:
        batch.drop_column("budget_seconds")
