"""What the closed loop recommends deploying, kept with the loop

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-25
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("optimizations", sa.Column("recommendation", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("optimizations") as batch:
        batch.drop_column("recommendation")
