"""design report, constraints, whole plots and collapsed points

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-21
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("experiments") as batch:
        batch.add_column(sa.Column("design_report", sa.JSON(), nullable=True))
        # Existing experiments had no constraints: an empty list, then the column is required.
        batch.add_column(sa.Column("constraints", sa.JSON(), nullable=True))
    op.execute("UPDATE experiments SET constraints = '[]'")
    with op.batch_alter_table("experiments") as batch:
        batch.alter_column("constraints", existing_type=sa.JSON(), nullable=False)
    with op.batch_alter_table("trials") as batch:
        batch.add_column(sa.Column("whole_plot", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("duplicate_of", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("trials") as batch:
        batch.drop_column("duplicate_of")
        batch.drop_column("whole_plot")
    with op.batch_alter_table("experiments") as batch:
        batch.drop_column("constraints")
        batch.drop_column("design_report")
