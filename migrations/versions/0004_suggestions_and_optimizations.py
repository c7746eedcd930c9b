"""suggestions and closed optimization loops

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UTC_DATETIME = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql")
LONG_TEXT = sa.Text().with_variant(mysql.LONGTEXT(), "mysql")


def upgrade() -> None:
    op.create_table(
        "optimizations",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("experiment_id", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("strategy", sa.String(length=40), nullable=False),
        sa.Column("budget", sa.Integer(), nullable=False),
        sa.Column("batch_size", sa.Integer(), nullable=False),
        sa.Column("stop_below", sa.Float(), nullable=True),
        sa.Column("rounds", sa.Integer(), nullable=False),
        sa.Column("stage", sa.String(length=40), nullable=True),
        sa.Column("explanation", LONG_TEXT, nullable=True),
        sa.Column("expected_improvement", sa.Float(), nullable=True),
        sa.Column("stop_reason", LONG_TEXT, nullable=True),
        sa.Column("error", LONG_TEXT, nullable=True),
        sa.Column("started_at", UTC_DATETIME, nullable=False),
        sa.Column("updated_at", UTC_DATETIME, nullable=False),
        sa.Column("finished_at", UTC_DATETIME, nullable=True),
        sa.ForeignKeyConstraint(["experiment_id"], ["experiments.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_optimizations_experiment_id", "optimizations", ["experiment_id"])
    with op.batch_alter_table("trials") as batch:
        batch.add_column(sa.Column("optimization_id", sa.Integer(), nullable=True))
        batch.create_index("ix_trials_optimization_id", ["optimization_id"])
        batch.create_foreign_key(
            "fk_trials_optimization_id",
            "optimizations",
            ["optimization_id"],
            ["id"],
            ondelete="SET NULL",
        )
    op.create_table(
        "suggestions",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("experiment_id", sa.Integer(), nullable=False),
        sa.Column("optimization_id", sa.Integer(), nullable=True),
        sa.Column("trial_id", sa.Integer(), nullable=True),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("strategy", sa.String(length=40), nullable=False),
        sa.Column("stage", sa.String(length=40), nullable=False),
        sa.Column("point_type", sa.String(length=20), nullable=False),
        sa.Column("config", sa.JSON(), nullable=False),
        sa.Column("predicted", sa.Float(), nullable=True),
        sa.Column("uncertainty", sa.Float(), nullable=True),
        sa.Column("expected_improvement", sa.Float(), nullable=True),
        sa.Column("predicted_by", sa.String(length=40), nullable=True),
        sa.Column("reason", LONG_TEXT, nullable=False),
        sa.Column("based_on_trials", sa.Integer(), nullable=False),
        sa.Column("created_at", UTC_DATETIME, nullable=False),
        sa.ForeignKeyConstraint(["experiment_id"], ["experiments.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["optimization_id"], ["optimizations.id"], ondelete="SET NULL"),
        sa.ForeignKeyConstraint(["trial_id"], ["trials.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_suggestions_experiment_id", "suggestions", ["experiment_id"])


def downgrade() -> None:
    # Dropping a table drops its indexes (MariaDB refuses to drop one a foreign key needs).
    op.drop_table("suggestions")
    with op.batch_alter_table("trials") as batch:
        batch.drop_constraint("fk_trials_optimization_id", type_="foreignkey")
        batch.drop_index("ix_trials_optimization_id")
        batch.drop_column("optimization_id")
    op.drop_table("optimizations")
