"""Store plumbing shared by the four protocol packages' store modules.

One URL chooses a store (:func:`parse_url`: ``:memory:``, ``sqlite:PATH``,
``postgresql://…``); one migration runner brings a SQLite file or a PostgreSQL database
to the schema version the code knows (:func:`migrate`); :class:`Pg` is the psycopg
connection helper, imported only when a ``postgresql://`` URL is used. Protocol cores
never import this package: only the store modules do, and only when they open a store.

>>> from ppstore import parse_url
>>> parse_url(":memory:").kind
'memory'
>>> import sqlite3
>>> from ppstore import migrate
>>> db = sqlite3.connect(":memory:", isolation_level=None)
>>> migrate(db, "demo", [["CREATE TABLE IF NOT EXISTS t (x INTEGER)"]])
0
>>> db.execute("PRAGMA user_version").fetchone()[0]
1
"""

from __future__ import annotations

from ._errors import StoreError
from ._migrate import (
    MIGRATION_TABLE,
    Migrations,
    Step,
    application_id,
    migrate,
    migrate_postgres,
    migrate_sqlite,
    missing_triggers,
)
from ._pg import Pg, advisory_key, postgres_missing
from ._url import StoreURL, parse_url, redact, secrets_of

__all__ = [
    "MIGRATION_TABLE",
    "Migrations",
    "Pg",
    "Step",
    "StoreError",
    "StoreURL",
    "advisory_key",
    "application_id",
    "migrate",
    "migrate_postgres",
    "migrate_sqlite",
    "missing_triggers",
    "parse_url",
    "postgres_missing",
    "redact",
    "secrets_of",
]
