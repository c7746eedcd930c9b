"""Today's configuration (the baseline) and confirmations of the deploy answer against it

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-03
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UTC_DATETIME = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql")
LONG_TEXT = sa.Text().with_variant(mysql.LONGTEXT(), "mysql")
_TRIAL_COLUMNS = ("reads_current", "confirmation_id", "arm", "pair")


def upgrade() -> None:
    op.create_table(
        "confirmations",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column(
            "experiment_id",
            sa.Integer(),
            sa.ForeignKey("experiments.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("response", sa.String(length=64), nullable=False),
        sa.Column("goal", sa.String(length=20), nullable=False),
        sa.Column("candidate", sa.JSON(), nullable=False),
        sa.Column("baseline", sa.JSON(), nullable=False),
        sa.Column("pairs", sa.Integer(), nullable=False),
        sa.Column("seed", sa.Integer(), nullable=False),
        sa.Column("plan", sa.JSON(), nullable=False),
        sa.Column("prediction", sa.JSON(), nullable=True),
        sa.Column("result", sa.JSON(), nullable=True),
        sa.Column("error", LONG_TEXT, nullable=True),
        sa.Column("created_at", UTC_DATETIME, nullable=False),
        sa.Column("finished_at", UTC_DATETIME, nullable=True),
    )
    op.create_index("ix_confirmations_experiment_id", "confirmations", ["experiment_id"])
    # Plain ADD COLUMN, not a batch copy, as in 0010: a copy would drop the triggers of 0007.
    op.add_column("experiments", sa.Column("baseline", sa.JSON(), nullable=True))
    op.add_column("trials", sa.Column("reads_current", sa.JSON(), nullable=True))
    op.add_column("trials", sa.Column("confirmation_id", sa.Integer(), nullable=True))
    op.add_column("trials", sa.Column("arm", sa.String(length=20), nullable=True))
    op.add_column("trials", sa.Column("pair", sa.Integer(), nullable=True))
    op.create_index("ix_trials_confirmation_id", "trials", ["confirmation_id"])


def downgrade() -> None:
    op.drop_index("ix_trials_confirmation_id", table_name="trials")
    # Plain DROP COLUMN too: a batch copy of either table breaks the triggers of 0007.
    for column in _TRIAL_COLUMNS:
        op.drop_column("trials", column)
    op.drop_column("experiments", "baseline")
    op.drop_table("confirmations")
