"""Alembic environment for simindex.

simindex runs the migrations itself (simindex.storage.upgrade) and hands in an
open connection through ``config.attributes["connection"]``, inside a
transaction of its own: the upgrade and the index's settings commit together.

From a checkout, a developer can also run Alembic directly::

    alembic -x url=sqlite:///docs.db upgrade head
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection, create_engine

config = context.config
VERSION_TABLE = "simindex_alembic_version"


def run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        version_table=VERSION_TABLE,
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    raise SystemExit("simindex migrations run online only (they need the index's block layout)")

passed_in = config.attributes.get("connection")
if passed_in is not None:
    run(passed_in)
else:
    url = context.get_x_argument(as_dictionary=True).get("url") or config.get_main_option(
        "sqlalchemy.url"
    )
    if not url:
        raise SystemExit("give the database: alembic -x url=sqlite:///path.db upgrade head")
    with create_engine(url).begin() as connection:
        run(connection)
