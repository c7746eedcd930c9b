"""An index of trials by experiment and status

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-24
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Every read of an experiment counts its trials by status and ranks its succeeded ones:
    # MariaDB otherwise intersects the experiment and status indexes, SQLite picks one of them.
    op.create_index("ix_trials_experiment_status", "trials", ["experiment_id", "status"])


def downgrade() -> None:
    op.drop_index("ix_trials_experiment_status", table_name="trials")
