"""The one answer to deploy after a loop's latest round, with its evidence, kept with the loop

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-02
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Plain ADD COLUMN, not a batch copy, as in 0010: a copy would drop the triggers of 0007.
    op.add_column("optimizations", sa.Column("deploy", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("optimizations") as batch:
        batch.drop_column("deploy")
