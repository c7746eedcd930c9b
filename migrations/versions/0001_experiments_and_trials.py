"""experiments and trials

Revision ID: 0001
Revises:
Create Date: 2026-11-21
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Frozen copies of the model types: a migration must not change when the models do.
UTC_DATETIME = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql")
LONG_TEXT = sa.Text().with_variant(mysql.LONGTEXT(), "mysql")


def upgrade() -> None:
    op.create_table(
        "experiments",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("target", sa.String(length=100), nullable=False),
        sa.Column("factors", sa.JSON(), nullable=False),
        sa.Column("design", sa.JSON(), nullable=True),
        sa.Column("design_notes", sa.JSON(), nullable=False),
        sa.Column("objective", sa.JSON(), nullable=False),
        sa.Column("created_at", UTC_DATETIME, nullable=False),
        sa.Column("updated_at", UTC_DATETIME, nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_table(
        "trials",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("experiment_id", sa.Integer(), nullable=False),
        sa.Column("run_order", sa.Integer(), nullable=False),
        sa.Column("std_order", sa.Integer(), nullable=True),
        sa.Column("block", sa.Integer(), nullable=False),
        sa.Column("replicate", sa.Integer(), nullable=False),
        sa.Column("point_type", sa.String(length=20), nullable=False),
        sa.Column("rounded", sa.Boolean(), nullable=False),
        sa.Column("source", sa.String(length=20), nullable=False),
        sa.Column("config", sa.JSON(), nullable=False),
        sa.Column("coded", sa.JSON(), nullable=True),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("lease_expires_at", UTC_DATETIME, nullable=True),
        sa.Column("worker", sa.String(length=200), nullable=True),
        sa.Column("queued_at", UTC_DATETIME, nullable=True),
        sa.Column("started_at", UTC_DATETIME, nullable=True),
        sa.Column("finished_at", UTC_DATETIME, nullable=True),
        sa.Column("responses", sa.JSON(), nullable=True),
        sa.Column("raw_output", LONG_TEXT, nullable=True),
        sa.Column("error", LONG_TEXT, nullable=True),
        sa.ForeignKeyConstraint(["experiment_id"], ["experiments.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_trials_experiment_id", "trials", ["experiment_id"])
    op.create_index("ix_trials_experiment_run_order", "trials", ["experiment_id", "run_order"])
    op.create_index("ix_trials_status", "trials", ["status"])


def downgrade() -> None:
    op.drop_table("trials")
    op.drop_table("experiments")
