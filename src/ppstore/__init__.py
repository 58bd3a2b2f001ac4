"""Store plumbing shared by the four protocol packages' store modules.

The five things you most likely want:

- :func:`parse_url`: the one URL that chooses a store (:class:`StoreURL`), with the
  PostgreSQL ``lock_timeout`` and ``statement_timeout`` every connection sets
  (:func:`libpq_url`: the URL as libpq takes it).
- :func:`migrate`: bring a SQLite or PostgreSQL store to the schema version the code knows.
- :class:`Pg`: one psycopg connection with transactions retried on serialization failures.
- :func:`redact`: a URL without its password, safe to print and log.
- :class:`StoreError`: every error, with a stable ``code`` (:mod:`ppstore.errors`);
  :class:`StoreUnavailableError` is a database outage, :class:`StoreUsageError` anything
  else on the caller's side of the line.

Quick start::

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

One URL chooses a store (:func:`parse_url`: ``:memory:``, ``sqlite:PATH``,
``postgresql://…``); one migration runner brings a SQLite file or a PostgreSQL database
to the schema version the code knows (:func:`migrate`); :class:`Pg` is the psycopg
connection helper, imported only when a ``postgresql://`` URL is used. Protocol cores
never import this package: only the store modules do, and only when they open a store.
"""

from __future__ import annotations

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
from ._url import (
    DEFAULT_LOCK_TIMEOUT_MS,
    DEFAULT_STATEMENT_TIMEOUT_MS,
    StoreURL,
    libpq_url,
    parse_url,
    redact,
    secrets_of,
)
from .errors import StoreError, StoreProtocolError, StoreUnavailableError, StoreUsageError

__all__ = [
    "DEFAULT_LOCK_TIMEOUT_MS",
    "DEFAULT_STATEMENT_TIMEOUT_MS",
    "MIGRATION_TABLE",
    "Migrations",
    "Pg",
    "Step",
    "StoreError",
    "StoreProtocolError",
    "StoreURL",
    "StoreUnavailableError",
    "StoreUsageError",
    "advisory_key",
    "application_id",
    "libpq_url",
    "migrate",
    "migrate_postgres",
    "migrate_sqlite",
    "missing_triggers",
    "parse_url",
    "postgres_missing",
    "redact",
    "secrets_of",
]
