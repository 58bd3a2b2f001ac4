"""The Merkle log store and the DPoP replay cache on PostgreSQL (psycopg 3).

Opened by :func:`vxp.open_log_store` / :func:`vxp.open_replay_cache` for a
``postgresql://`` URL (the ``postgres`` extra). Several processes on one database share
one log per origin and one replay memory.

**Ours:**

- One writer order: :meth:`PostgresLogStore.append` holds a transaction-scoped advisory
  lock on the log's origin while it checks the expected size and inserts, so appends of
  concurrent writers are serialised; a writer whose view is stale gets ``log_conflict``
  and nothing is written (it recomputes on the new size and retries).
- The database itself refuses history rewrites: triggers abort ``UPDATE``, ``DELETE``
  and ``TRUNCATE`` on the log tables, and an insert anywhere but the next free position
  of its log (entries) or of its level (subtree hashes); the primary key ``(origin,
  idx)`` makes two leaves at one index impossible even for a writer that skips the lock.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from ._fetch import replay_arguments, replayed
from .errors import VxpError

if TYPE_CHECKING:
    import psycopg

    Conn = psycopg.Connection[Any]

__all__ = ["LOG_MIGRATIONS", "REPLAY_MIGRATIONS", "PostgresLogStore", "PostgresReplayCache"]

T = TypeVar("T")

SKEW = 300
"""Seconds of clock difference between replicas the replay cache tolerates (**ours**)."""

_REFUSE = """
CREATE FUNCTION vxp_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'vxp log history is append-only (% on %)', TG_OP, TG_TABLE_NAME; END $$
"""

_ENTRY_AT_END = """
CREATE FUNCTION vxp_entry_at_end() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.idx <> (SELECT COALESCE(MAX(idx) + 1, 0) FROM vxp_log_entries
                 WHERE origin = NEW.origin) THEN
    RAISE EXCEPTION 'vxp log entries are only appended at the end';
  END IF;
  RETURN NEW;
END $$
"""

_NODE_AT_END = """
CREATE FUNCTION vxp_node_at_end() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.idx <> (SELECT COALESCE(MAX(idx) + 1, 0) FROM vxp_log_nodes
                 WHERE origin = NEW.origin AND level = NEW.level) THEN
    RAISE EXCEPTION 'vxp log nodes are only appended at the end of their level';
  END IF;
  RETURN NEW;
END $$
"""

LOG_MIGRATIONS: list[list[str]] = [
    [
        "CREATE TABLE vxp_log_meta (origin text PRIMARY KEY)",
        "CREATE TABLE vxp_log_entries (origin text NOT NULL REFERENCES vxp_log_meta,"
        " idx bigint NOT NULL, data bytea NOT NULL, PRIMARY KEY (origin, idx))",
        "CREATE TABLE vxp_log_nodes (origin text NOT NULL REFERENCES vxp_log_meta,"
        " level integer NOT NULL, idx bigint NOT NULL, hash bytea NOT NULL,"
        " PRIMARY KEY (origin, level, idx))",
        _REFUSE,
        _ENTRY_AT_END,
        _NODE_AT_END,
        *(
            f"CREATE TRIGGER {table}_fixed BEFORE UPDATE OR DELETE ON {table}"
            " FOR EACH ROW EXECUTE FUNCTION vxp_refuse()"
            for table in ("vxp_log_meta", "vxp_log_entries", "vxp_log_nodes")
        ),
        *(
            f"CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table}"
            " FOR EACH STATEMENT EXECUTE FUNCTION vxp_refuse()"
            for table in ("vxp_log_meta", "vxp_log_entries", "vxp_log_nodes")
        ),
        "CREATE TRIGGER vxp_log_entries_at_end BEFORE INSERT ON vxp_log_entries"
        " FOR EACH ROW EXECUTE FUNCTION vxp_entry_at_end()",
        "CREATE TRIGGER vxp_log_nodes_at_end BEFORE INSERT ON vxp_log_nodes"
        " FOR EACH ROW EXECUTE FUNCTION vxp_node_at_end()",
    ],
]
"""The PostgreSQL migrations of the log store (``ppstore_migrations``, store ``vxp_log``)."""

REPLAY_MIGRATIONS: list[list[str]] = [
    [
        "CREATE TABLE vxp_dpop_jti (key text PRIMARY KEY, until bigint NOT NULL)",
        "CREATE INDEX vxp_dpop_jti_until ON vxp_dpop_jti (until)",
    ],
]
"""The PostgreSQL migrations of the replay cache (store ``vxp_replay``)."""


_LOG_TRIGGERS = {
    table: [f"{table}_fixed", f"{table}_no_truncate"]
    + ([f"{table}_at_end"] if table != "vxp_log_meta" else [])
    for table in ("vxp_log_meta", "vxp_log_entries", "vxp_log_nodes")
}


def _open(
    url: str,
    store: str,
    migrations: list[list[str]],
    code: str,
    triggers: dict[str, list[str]] | None = None,
) -> Any:
    from ppstore import Pg, StoreError, migrate_postgres, missing_triggers

    try:
        pg = Pg(url, application_name="vxp")
    except StoreError as exc:
        raise VxpError(code, f"cannot open the {store} store: {exc.message}") from None
    try:
        with pg.connection() as conn:
            migrate_postgres(conn, store, migrations)
            gone = missing_triggers(conn, triggers or {})
    except StoreError as exc:
        pg.close()
        raise VxpError(code, f"cannot open the {store} store: {exc.message}") from None
    if gone:  # someone who owns the tables dropped or disabled the append-only guards
        pg.close()
        raise VxpError(
            "log_corrupt", f"the {store} store lost its append-only triggers ({', '.join(gone)})"
        )
    return pg


_CONFLICTS = ("23505", "P0001")
"""SQLSTATEs of an append another writer got in first: a unique violation (an index taken)
or the at-the-end trigger. Anything else (a dropped connection: the append may have
landed) is ``log_store_error``, never ``log_conflict``, which callers retry on."""


def _tx(pg: Any, work: Callable[[Conn], T], code: str) -> T:
    from ppstore import StoreError

    try:
        result: T = pg.tx(work)
    except StoreError as exc:
        if code == "log_conflict" and exc.sqlstate not in _CONFLICTS:
            code = "log_store_error"
        raise VxpError(code, f"the database failed: {exc.message}") from None
    return result


class PostgresLogStore:
    """A :class:`~vxp.LogStore` in PostgreSQL: one log per ``origin``, shared by writers.

    Rows are only inserted, each at the next free position (database triggers); appends
    are serialised per origin by an advisory lock (see the module docstring).
    """

    def __init__(self, url: str, origin: str) -> None:
        if not isinstance(origin, str) or not origin or "\x00" in origin:
            raise VxpError("log_origin_invalid", "a log origin is a non-empty one-line string")
        self.origin = origin
        self._pg = _open(url, "vxp_log", LOG_MIGRATIONS, "log_store_error", _LOG_TRIGGERS)
        try:
            _tx(
                self._pg,
                lambda conn: conn.execute(
                    "INSERT INTO vxp_log_meta (origin) VALUES (%s) ON CONFLICT DO NOTHING",
                    (origin,),
                ),
                "log_store_error",
            )
        except VxpError:
            self._pg.close()
            raise

    def size(self) -> int:
        """Return the number of entries (read from the database, so other writers count)."""
        row = _tx(
            self._pg,
            lambda conn: conn.execute(
                "SELECT COALESCE(MAX(idx) + 1, 0) FROM vxp_log_entries WHERE origin = %s",
                (self.origin,),
            ).fetchone(),
            "log_store_error",
        )
        return int(row[0]) if row else 0

    def append(
        self, expected_size: int, entries: Sequence[bytes], nodes: Sequence[tuple[int, int, bytes]]
    ) -> None:
        """Insert ``entries`` and ``nodes`` in one transaction if the size is ``expected_size``."""
        from ppstore import advisory_key

        def work(conn: Conn) -> None:
            conn.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                (advisory_key("vxp", "log", self.origin),),
            )
            row = conn.execute(
                "SELECT COALESCE(MAX(idx) + 1, 0) FROM vxp_log_entries WHERE origin = %s",
                (self.origin,),
            ).fetchone()
            current = int(row[0]) if row else 0
            if current != expected_size:
                raise VxpError(
                    "log_conflict",
                    f"the log holds {current} entries, not the {expected_size} expected",
                )
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO vxp_log_entries (origin, idx, data) VALUES (%s, %s, %s)",
                    [(self.origin, expected_size + i, bytes(e)) for i, e in enumerate(entries)],
                )
                cur.executemany(
                    "INSERT INTO vxp_log_nodes (origin, level, idx, hash) VALUES (%s, %s, %s, %s)",
                    [(self.origin, lv, ix, bytes(h)) for lv, ix, h in nodes],
                )

        _tx(self._pg, work, "log_conflict")

    def entry(self, index: int) -> bytes:
        """Return entry ``index``."""
        row = _tx(
            self._pg,
            lambda conn: conn.execute(
                "SELECT data FROM vxp_log_entries WHERE origin = %s AND idx = %s",
                (self.origin, index),
            ).fetchone(),
            "log_store_error",
        )
        if row is None:
            raise VxpError("log_entry_missing", f"the log has no entry {index}")
        return bytes(row[0])

    def node(self, level: int, index: int) -> bytes | None:
        """Return the hash of complete subtree (``level``, ``index``) if stored."""
        row = _tx(
            self._pg,
            lambda conn: conn.execute(
                "SELECT hash FROM vxp_log_nodes WHERE origin = %s AND level = %s AND idx = %s",
                (self.origin, level, index),
            ).fetchone(),
            "log_store_error",
        )
        return None if row is None else bytes(row[0])

    def close(self) -> None:
        """Close the database connection."""
        self._pg.close()


class PostgresReplayCache:
    """A :class:`~vxp.ReplayCache` in PostgreSQL, shared by every process on the database.

    Each store_once is one transaction: expired keys are dropped, then the key is
    inserted unless present; the primary key decides between concurrent checkers.
    """

    def __init__(self, url: str) -> None:
        self._pg = _open(url, "vxp_replay", REPLAY_MIGRATIONS, "replay_store_unavailable")

    def store_once(self, key: str, until: int, now: int) -> None:
        """Remember ``key`` until ``until``; ``dpop_replay`` if it is already there.

        **Ours:** replicas' clocks differ, so a key is purged only :data:`SKEW` seconds
        after its ``until`` by the caller's clock: a replica running fast cannot forget a
        key a slower one still accepts (review #8).
        """
        key, until, now = replay_arguments(key, until, now)

        def work(conn: Conn) -> bool:
            conn.execute("DELETE FROM vxp_dpop_jti WHERE until < %s", (now - SKEW,))
            cur = conn.execute(
                "INSERT INTO vxp_dpop_jti (key, until) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                (key.replace("\\", "\\\\").replace("\x00", "\\0"), until),
            )
            return cur.rowcount == 1

        if not _tx(self._pg, work, "replay_store_unavailable"):
            raise replayed(key)

    def close(self) -> None:
        """Close the database connection."""
        self._pg.close()
