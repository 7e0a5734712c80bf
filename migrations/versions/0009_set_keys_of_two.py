"""Short texts' set keys made again for the rule of two shared units.

From this revision a short text one unit away from another is a copy when
the two share at least two units (simindex/signature.py: ONE_UNIT_SHARED;
four before), so a row's set keys are made from three units on (five
before), and a short query looks up keys that rows written before never
got. The upgrade makes every row's keys again (one pass over the rows with
a short set, as revision 0007 made them), so that every query path answers
what a brute-force scan under the new rule does. It moves the generation
(SQLite: the schema cookie, by a table made and dropped; PostgreSQL: the
stored generation), so a process of an older simindex holding the index
reads its settings again and refuses it (it would make keys by the old
rule); a simindex from before this revision refuses the index.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-05
"""

from __future__ import annotations

from alembic import op

from simindex.storage.migrate import remake_keys

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    remake_keys(op.get_bind())


def downgrade() -> None:
    # The keys of the rule of two include those of the rule of four: a
    # simindex of revision 0008 verifies every candidate they give by its
    # own rule, so its answers stay its own.
    pass
