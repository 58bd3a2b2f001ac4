"""One migration runner for SQLite and PostgreSQL: ordered migrations, recorded per store.

A store lists its migrations in order; version ``n`` is the schema after the first ``n``
of them, and version 1 is the store's schema as it stood before versions were recorded.
Opening a store applies the missing ones in **one** transaction (all or nothing), so two
processes opening the same database at once never both migrate, and a failed migration
leaves the previous version intact.

**Ours:** where the version is recorded.

- SQLite: ``PRAGMA user_version`` of the file, one store per file, the file marked as
  that store's with ``PRAGMA application_id`` (a number derived from the store name:
  :func:`application_id`); a file of another store is refused (``wrong_store``) rather
  than read with the wrong schema. Version 1 statements must be idempotent (``CREATE …
  IF NOT EXISTS``): a file written before versions were recorded holds version 0 (and
  application id 0) beside the version-1 tables.
- PostgreSQL: the table ``ppstore_migrations (store, version, applied_at)``, one row per
  migration applied, in the schema the connection's ``search_path`` names first, so one
  database can hold every store of a deployment (each store's tables carry its prefix).
  The runner holds the transaction-scoped advisory lock ``ppstore_migrations`` while it
  reads and applies, so replicas starting together serialise here. A store already at
  the latest version is only read (no ``CREATE`` right needed), so the runtime role may
  differ from the role that owns the tables and migrates them.

A store written by a newer version than the code knows is refused (``schema_too_new``):
reading it could misread data, and writing could corrupt it.
"""

from __future__ import annotations

import sqlite3
import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ._pg import postgres_missing, timed_out
from .errors import StoreError

__all__ = [
    "MIGRATION_TABLE",
    "Migrations",
    "Step",
    "application_id",
    "migrate",
    "migrate_postgres",
    "migrate_sqlite",
    "missing_triggers",
]

MIGRATION_TABLE = "ppstore_migrations"
"""The PostgreSQL table recording which migrations each store has had."""

Step = str | Callable[[Any], None]
"""One step of a migration: an SQL statement, or a function given the connection (for a
change that depends on what an older file holds, e.g. a column added only where missing)."""

Migrations = Sequence[Sequence[Step]]
"""Migration ``i`` (0-based) takes the schema from version ``i`` to ``i + 1``; each is a
list of steps run in order."""


def _run(db: Any, step: Step) -> None:
    if isinstance(step, str):
        db.execute(step)
    else:
        step(db)


_LOCK_KEY = 0x7070_7374_6F72_65  # "ppstore" as a number: the runner's advisory lock


def _too_new(store: str, found: int, known: int) -> StoreError:
    return StoreError(
        "schema_too_new",
        f"the {store} store is at schema version {found}, newer than the {known} this "
        "version of the library knows; upgrade the library",
    )


def _negative(store: str, found: int) -> StoreError:
    return StoreError(
        "wrong_store", f"the {store} store records schema version {found}, which no version is"
    )


def _checked(store: object, migrations: object = ()) -> None:
    """Refuse a store name or migrations of another kind (``bad_argument``)."""
    if not isinstance(store, str) or not store:
        raise StoreError("bad_argument", "a store name is a non-empty string")
    ok = isinstance(migrations, list | tuple) and all(
        isinstance(m, list | tuple) and all(isinstance(s, str) or callable(s) for s in m)
        for m in migrations
    )
    if not ok:
        raise StoreError(
            "bad_argument",
            f"the {store} store's migrations are a list of lists of SQL strings or callables",
        )


def application_id(store: str) -> int:
    """The ``PRAGMA application_id`` marking a SQLite file as ``store``'s (never 0)."""
    _checked(store)
    return zlib.crc32(b"ppstore:" + store.encode("utf-8")) & 0x7FFF_FFFF or 1


def migrate_sqlite(db: sqlite3.Connection, store: str, migrations: Migrations) -> int:
    """Bring a SQLite store to ``len(migrations)``; return the version it was at.

    ``db`` must be in autocommit mode (``isolation_level=None``). The version is the
    file's ``PRAGMA user_version``.
    """
    _checked(store, migrations)
    if not isinstance(db, sqlite3.Connection):
        raise StoreError("bad_argument", "migrate_sqlite takes a sqlite3.Connection")
    latest = len(migrations)
    mark = application_id(store)

    def read() -> tuple[int, int]:
        (version,) = db.execute("PRAGMA user_version").fetchone()
        (owner,) = db.execute("PRAGMA application_id").fetchone()
        if owner not in (0, mark):
            raise StoreError(
                "wrong_store",
                f"the file is not a {store} store (it belongs to another kind of store)",
            )
        if version > latest:
            raise _too_new(store, version, latest)
        if version < 0:
            raise _negative(store, version)
        return int(version), int(owner)

    try:
        found, owner = read()
    except sqlite3.Error as exc:
        raise StoreError("store_open", f"cannot read the {store} store: {exc}") from None
    if found == latest and owner == mark:
        return found
    try:
        db.execute("BEGIN IMMEDIATE")
    except sqlite3.Error as exc:
        raise StoreError("store_open", f"cannot migrate the {store} store: {exc}") from None
    try:
        found, owner = read()  # another process may have migrated meanwhile
        for migration in migrations[found:]:
            for step in migration:
                _run(db, step)
        db.execute(f"PRAGMA user_version = {int(latest)}")
        db.execute(f"PRAGMA application_id = {int(mark)}")
        db.execute("COMMIT")
    except BaseException as exc:
        db.execute("ROLLBACK")
        if isinstance(exc, sqlite3.Error):
            raise StoreError(
                "migration_failed", f"migrating the {store} store failed: {exc}"
            ) from None
        raise
    return found


def migrate_postgres(conn: Any, store: str, migrations: Migrations) -> int:
    """Bring a PostgreSQL store to ``len(migrations)``; return the version it was at.

    ``conn`` is a psycopg connection in autocommit mode; the work is one transaction
    under the runner's advisory lock, recorded in :data:`MIGRATION_TABLE`.
    """
    _checked(store, migrations)
    psycopg = _psycopg_for(conn)
    latest = len(migrations)
    try:
        # up to date already: nothing to create, so a role without CREATE may open it
        with conn.transaction():
            if conn.execute("SELECT to_regclass(%s) IS NOT NULL", (MIGRATION_TABLE,)).fetchone()[0]:
                row = conn.execute(
                    f"SELECT COALESCE(MAX(version), 0), MIN(version) FROM {MIGRATION_TABLE}"  # noqa: S608
                    " WHERE store = %s",
                    (store,),
                ).fetchone()
                if row[1] is not None and int(row[1]) < 1:
                    raise _negative(store, int(row[1]))
                if int(row[0]) == latest:
                    return latest
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
            conn.execute(
                f"CREATE TABLE IF NOT EXISTS {MIGRATION_TABLE} ("
                " store text NOT NULL, version integer NOT NULL,"
                " applied_at timestamptz NOT NULL DEFAULT now(),"
                " PRIMARY KEY (store, version))"
            )
            row = conn.execute(
                f"SELECT COALESCE(MAX(version), 0) FROM {MIGRATION_TABLE} WHERE store = %s",  # noqa: S608
                (store,),
            ).fetchone()
            found = int(row[0])
            if found > latest:
                raise _too_new(store, found, latest)
            if found < 0:
                raise _negative(store, found)
            for number, migration in enumerate(migrations[found:], start=found + 1):
                for step in migration:
                    _run(conn, step)
                conn.execute(
                    f"INSERT INTO {MIGRATION_TABLE} (store, version) VALUES (%s, %s)",  # noqa: S608
                    (store, number),
                )
    except psycopg.Error as exc:
        waited = timed_out(exc, f"migrating the {store} store", _limits(conn))
        if waited is not None:  # another replica's migration holds the lock: try again later
            raise waited from None
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise StoreError(
            "migration_failed", f"migrating the {store} store failed: {first}"
        ) from None
    return found


def _limits(conn: Any) -> dict[str, int] | None:
    """The connection's ``lock_timeout`` and ``statement_timeout`` in milliseconds (after a
    failed transaction, for its sentence); ``None`` when they cannot be read."""
    import psycopg

    try:
        rows = conn.execute(
            "SELECT name, setting::int FROM pg_settings"
            " WHERE name IN ('lock_timeout', 'statement_timeout')"
        ).fetchall()
    except psycopg.Error:
        return None
    return {str(name): int(value) for name, value in rows}


def _psycopg_for(conn: object) -> Any:
    """The psycopg module, once ``conn`` is one of its connections (else ``bad_argument``)."""
    if postgres_missing() is None:
        import psycopg

        if isinstance(conn, psycopg.Connection):
            return psycopg
    raise StoreError("bad_argument", "a PostgreSQL connection is a psycopg connection")


def migrate(db: Any, store: str, migrations: Migrations) -> int:
    """Run :func:`migrate_sqlite` or :func:`migrate_postgres`, whichever ``db`` is."""
    if isinstance(db, sqlite3.Connection):
        return migrate_sqlite(db, store, migrations)
    return migrate_postgres(db, store, migrations)


def missing_triggers(conn: Any, expected: Mapping[str, Sequence[str]]) -> list[str]:
    """The triggers of ``expected`` (table to trigger names) that are absent or disabled.

    A role that owns the tables can drop or disable the append-only triggers; a store
    checks them on open and refuses to run without them (**ours**, review of issue 23).
    """
    _psycopg_for(conn)
    ok = isinstance(expected, Mapping) and all(
        isinstance(t, str) and isinstance(n, list | tuple) and all(isinstance(x, str) for x in n)
        for t, n in expected.items()
    )
    if not ok:
        raise StoreError("bad_argument", "the expected triggers map table names to name lists")
    gone: list[str] = []
    for table, names in expected.items():
        rows = conn.execute(
            "SELECT tgname FROM pg_trigger WHERE tgrelid = to_regclass(%s) AND tgenabled = 'O'",
            (table,),
        ).fetchall()
        have = {str(row[0]) for row in rows}
        gone += [f"{table}.{name}" for name in names if name not in have]
    return gone
