"""Every code ppstore raises is in its table and raised here; the table decides the class.

ppstore reads no peer data, so every code is the caller's side of the line (usage). A
database that cannot be reached or that fails a statement is neither the caller's mistake
nor the peer's data: it arrives as StoreUnavailableError (a StoreUsageError), so a server
can retry or answer 503 instead of reporting a bug.
"""

from __future__ import annotations

import contextlib
import inspect
import sqlite3
import sys
from pathlib import Path

import pytest

import ppstore
from ppstore.errors import (
    CODES,
    StoreError,
    StoreProtocolError,
    StoreUnavailableError,
    StoreUsageError,
)
from tests.codecheck import literal_codes, raises_code
from tests.pgcluster import Cluster

OUTAGES = {"store_open", "store_unavailable", "store_timeout"}


def test_every_literal_code_at_a_raise_site_is_in_the_table() -> None:
    found = literal_codes("ppstore", {"StoreError", "StoreUsageError", "StoreUnavailableError"})
    assert found
    missing = {code: where for code, where in found.items() if code not in CODES}
    assert not missing, missing


def test_every_outage_is_raised_as_unavailable() -> None:
    """A raise site of an outage code names StoreUnavailableError (or the root builds it)."""
    assert {c for c in CODES if CODES[c].kind == "protocol"} == set()
    for code in CODES:
        error = StoreError(code, "x")
        assert isinstance(error, StoreUsageError)
        assert isinstance(error, StoreUnavailableError) == (code in OUTAGES), code


def test_bad_url_is_a_usage_error() -> None:
    raises_code(lambda: ppstore.parse_url(7), StoreUsageError, "bad_url")
    raises_code(lambda: ppstore.parse_url("mysql://h/d"), StoreUsageError, "bad_url")


def _db(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path, isolation_level=None)


def test_every_sqlite_code_is_raised(tmp_path: Path) -> None:
    v1 = [["CREATE TABLE IF NOT EXISTS t (x INTEGER)"]]
    newer = tmp_path / "newer.sqlite"
    ppstore.migrate_sqlite(_db(newer), "demo", [*v1, ["CREATE TABLE u (y INTEGER)"]])
    raises_code(
        lambda: ppstore.migrate_sqlite(_db(newer), "demo", v1), StoreUsageError, "schema_too_new"
    )
    raises_code(
        lambda: ppstore.migrate_sqlite(_db(newer), "other", v1), StoreUsageError, "wrong_store"
    )
    broken = [["CREATE TABLE u (z INTEGER)", "THIS IS NOT SQL"]]
    raises_code(
        lambda: ppstore.migrate_sqlite(_db(tmp_path / "b.sqlite"), "demo", broken),
        StoreUsageError,
        "migration_failed",
    )
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"this is not a SQLite database at all, just bytes" * 100)
    raises_code(
        lambda: ppstore.migrate_sqlite(_db(garbage), "demo", v1),
        StoreUnavailableError,
        "store_open",
    )


def test_postgres_without_the_extra_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)
    raises_code(lambda: ppstore.Pg("postgresql:///x"), StoreUsageError, "postgres_unavailable")


def test_a_database_outage_is_unavailable(postgres_cluster: Cluster, postgres_url: str) -> None:
    raises_code(
        lambda: ppstore.Pg(postgres_cluster.url("no_such_database")),
        StoreUnavailableError,
        "store_open",
    )
    pg = ppstore.Pg(postgres_url)
    pid = pg.tx(lambda c: c.execute("SELECT pg_backend_pid()").fetchone()[0])
    killer = ppstore.Pg(postgres_url)
    killer.tx(lambda c: c.execute("SELECT pg_terminate_backend(%s)", (pid,)))
    with pytest.raises(StoreUnavailableError) as caught:
        pg.tx(lambda c: c.execute("SELECT 1").fetchone())
    assert caught.value.code == "store_unavailable"
    pg.close()
    killer.close()


def test_a_bad_timeout_is_a_usage_error() -> None:
    url = "postgresql://db/app?lock_timeout=forever"
    raises_code(lambda: ppstore.parse_url(url), StoreUsageError, "bad_timeout")
    raises_code(lambda: ppstore.Pg(url), StoreUsageError, "bad_timeout")


def test_a_statement_past_its_timeout_is_unavailable(postgres_url: str) -> None:
    pg = ppstore.Pg(postgres_url + "&statement_timeout=50ms")
    with pytest.raises(StoreUnavailableError) as caught:
        pg.tx(lambda c: c.execute("SELECT pg_sleep(5)"))
    assert (caught.value.code, caught.value.sqlstate) == ("store_timeout", "57014")
    pg.close()


def test_a_failed_statement_keeps_its_sqlstate(postgres_url: str) -> None:
    pg = ppstore.Pg(postgres_url)
    pg.tx(lambda c: c.execute("CREATE TABLE k (x INTEGER PRIMARY KEY)"))
    pg.tx(lambda c: c.execute("INSERT INTO k VALUES (1)"))
    with pytest.raises(StoreUnavailableError) as caught:
        pg.tx(lambda c: c.execute("INSERT INTO k VALUES (1)"))
    assert (caught.value.code, caught.value.sqlstate) == ("store_unavailable", "23505")
    pg.close()


def test_every_code_in_the_table_is_raised_by_this_file() -> None:
    source = Path(__file__).read_text(encoding="utf-8")
    assert all(f'"{code}"' in source for code in CODES), [
        c for c in CODES if f'"{c}"' not in source
    ]


def test_the_protocol_class_exists_for_the_shape_every_package_shares() -> None:
    assert issubclass(StoreProtocolError, StoreError)
    assert StoreProtocolError.kind == "protocol"


JUNK = [None, 7, 1.5, "x", "", b"x", [], {}, True, [["SELECT 1"], 7]]
CALLS = [
    name for name in ppstore.__all__ if inspect.isroutine(getattr(ppstore, name)) or name == "Pg"
]


@pytest.mark.parametrize("name", CALLS)
def test_every_public_call_refuses_junk_with_its_own_error(name: str) -> None:
    """Any argument of any shape: a result or a StoreError, never another exception."""
    call = getattr(ppstore, name)
    params = [
        p
        for p in inspect.signature(call).parameters.values()
        if p.default is inspect.Parameter.empty and p.kind is not p.VAR_POSITIONAL
    ]
    for junk in JUNK:
        with contextlib.suppress(StoreError):
            call(*[junk for p in params if p.kind is not p.KEYWORD_ONLY])


def test_junk_migrations_or_store_names_are_store_errors() -> None:
    for junk in JUNK:  # a good connection and store name, junk migrations
        with contextlib.suppress(StoreError):
            ppstore.migrate(sqlite3.connect(":memory:", isolation_level=None), "demo", junk)
        with contextlib.suppress(StoreError):
            ppstore.migrate(sqlite3.connect(":memory:", isolation_level=None), junk, [])


def test_a_bad_argument_is_a_usage_error() -> None:
    db = sqlite3.connect(":memory:", isolation_level=None)
    raises_code(
        lambda: ppstore.migrate(db, "demo", "CREATE TABLE t (x)"), StoreUsageError, "bad_argument"
    )
    raises_code(lambda: ppstore.application_id(7), StoreUsageError, "bad_argument")
    raises_code(lambda: ppstore.redact(None), StoreUsageError, "bad_argument")
    raises_code(lambda: ppstore.Pg(7), StoreUsageError, "bad_url")
    db.close()
