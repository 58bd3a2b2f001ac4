"""The Handoff record store on PostgreSQL, shared by writers on several hosts (psycopg 3).

The same rules as :class:`~handoff.SQLiteStore`: append-only, idempotent by ``(id,
digest)``, a record id names one content forever within its owner's slot of an item
(first admitted wins), rows stamped with the roles they were admitted under, roles move
forward only, bodies checked against their digest on every read.

**Ours** (the order of locks in an append, all transaction-scoped):

1. the roles lock: shared while appending under roles the store holds, exclusive while
   adding new roles (so a writer whose roles were just replaced sees it, and is refused
   ``roles_stale``, exactly as a single SQLite writer would);
2. the item lock (``ext``, ``project``, ``key``): every check of the id rule and the
   ``terms_rev`` rule happens under it, so two writers admitting two contents under one id
   at once cannot both win.

The database refuses ``UPDATE``, ``DELETE`` and ``TRUNCATE`` of records and roles.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from ._canonical import canonical, identity
from ._config import ExtensionRegistry, Roles
from ._evidence import KeySet
from ._fold import _slot
from ._json import parse_line, parse_stored
from ._records import ItemId, Record
from ._store import _body_digest, _check_raised, _prepare, _rewrite, _Stamped
from .errors import HandoffError

if TYPE_CHECKING:
    import psycopg

    Conn = psycopg.Connection[Any]

__all__ = ["MIGRATIONS", "PostgresStore"]

T = TypeVar("T")

MIGRATIONS: list[list[str]] = [
    [
        "CREATE TABLE handoff_roles (version bigserial PRIMARY KEY, roles text NOT NULL UNIQUE)",
        "CREATE TABLE handoff_records (seq bigserial PRIMARY KEY, id text NOT NULL,"
        " digest text NOT NULL, ext text NOT NULL, project text NOT NULL, key text NOT NULL,"
        " body text NOT NULL, roles_version bigint NOT NULL REFERENCES handoff_roles,"
        " UNIQUE (id, digest))",
        "CREATE INDEX handoff_records_item ON handoff_records (ext, project, key, seq)",
        "CREATE FUNCTION handoff_refuse() RETURNS trigger LANGUAGE plpgsql AS $$"
        " BEGIN RAISE EXCEPTION '% is append-only (% refused)', TG_TABLE_NAME, TG_OP; END $$",
        *(
            f"CREATE TRIGGER {table}_fixed BEFORE UPDATE OR DELETE ON {table}"
            " FOR EACH ROW EXECUTE FUNCTION handoff_refuse()"
            for table in ("handoff_records", "handoff_roles")
        ),
        *(
            f"CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table}"
            " FOR EACH STATEMENT EXECUTE FUNCTION handoff_refuse()"
            for table in ("handoff_records", "handoff_roles")
        ),
    ],
]
"""The PostgreSQL migrations of the record store (``ppstore_migrations``, store ``handoff``)."""

_ROLES_LOCK = "handoff\x1froles"

_TRIGGERS = {
    table: [f"{table}_fixed", f"{table}_no_truncate"]
    for table in ("handoff_records", "handoff_roles")
}


class PostgresStore(_Stamped):
    """A :class:`~handoff.Store` in PostgreSQL (tables ``handoff_*``), shared by writers.

    ``url`` is a ``postgresql://`` URL; ``keys``/``verifiable`` as for
    :class:`~handoff.SQLiteStore`. ``create=False`` refuses a database where no store was
    ever created (``io``/``store_missing``) instead of creating one.
    """

    def __init__(
        self,
        url: str,
        *,
        roles: Roles,
        extensions: ExtensionRegistry,
        keys: KeySet | None = None,
        verifiable: bool = False,
        create: bool = True,
    ) -> None:
        from ppstore import Pg, StoreError, migrate_postgres, missing_triggers, redact

        if not isinstance(url, str):
            raise HandoffError(
                "usage", f"a store URL is a string, not {type(url).__name__}", reason="url"
            )
        self.roles = roles
        self.extensions = extensions
        self.keys = keys
        self.verifiable = verifiable
        self.path = redact(url)
        self._lock = threading.Lock()
        try:
            self._pg = Pg(url, application_name="handoff")
        except StoreError as exc:
            if exc.code in ("bad_url", "bad_timeout"):  # the caller's URL, as open_store says
                raise HandoffError("usage", exc.message, reason="url") from None
            raise HandoffError(
                "store", f"cannot open the store {self.path}: {exc.message}", reason="store_open"
            ) from None
        try:
            with self._pg.connection() as conn:
                if not create and conn.execute(
                    "SELECT to_regclass('handoff_records') IS NULL"
                ).fetchone() == (True,):
                    raise HandoffError(
                        "io", f"no Handoff store at {self.path}", reason="store_missing"
                    )
                migrate_postgres(conn, "handoff", MIGRATIONS)
                gone = missing_triggers(conn, _TRIGGERS)
            if gone:  # the tables' owner dropped or disabled the append-only guards
                raise HandoffError(
                    "store",
                    f"{self.path}: the append-only triggers are gone ({', '.join(gone)})",
                    reason="store_tampered",
                )
        except StoreError as exc:
            self._pg.close()
            raise HandoffError(
                "store", f"cannot open the store {self.path}: {exc.message}", reason="store_open"
            ) from None
        except HandoffError:
            self._pg.close()
            raise

    def close(self) -> None:
        """Close the database connection."""
        self._pg.close()

    def _tx(self, work: Callable[[Conn], T], reason: str) -> T:
        from ppstore import StoreError

        try:
            result: T = self._pg.tx(work)
        except StoreError as exc:
            raise HandoffError(
                "store", f"the store {self.path} failed: {exc.message}", reason=reason
            ) from None
        return result

    def _roles_version(self, conn: Conn, text: str) -> int | HandoffError:
        """Take the roles lock; the stamp of ``text`` (added if new), or why it is stale."""
        from ppstore import advisory_key

        known = conn.execute("SELECT 1 FROM handoff_roles WHERE roles = %s", (text,)).fetchone()
        take = "pg_advisory_xact_lock_shared" if known else "pg_advisory_xact_lock"
        conn.execute(f"SELECT {take}(hashtextextended(%s, 0))", (advisory_key(_ROLES_LOCK),))
        row = conn.execute("SELECT version FROM handoff_roles WHERE roles = %s", (text,)).fetchone()
        if row is None:
            if known:  # pragma: no cover - roles rows are never deleted
                raise HandoffError("store", f"{self.path}: roles vanished", reason="store_tampered")
            added = conn.execute(
                "INSERT INTO handoff_roles (roles) VALUES (%s) RETURNING version", (text,)
            ).fetchone()
            return int(added[0]) if added else 0
        latest = conn.execute("SELECT MAX(version) FROM handoff_roles").fetchone()
        if latest is not None and int(row[0]) < int(latest[0]):
            # roles move forward only (see SQLiteStore): a device with replaced roles
            # cannot write under them
            return HandoffError(
                "store",
                f"{self.path}: these roles were replaced by newer ones (version "
                f"{latest[0]}); update the configuration before appending",
                reason="roles_stale",
            )
        return int(row[0])

    def append(self, record: Record | Mapping[str, Any] | str | bytes) -> str:
        """Admit and append one record (see :meth:`handoff.Store.append`)."""
        from ppstore import advisory_key

        obj, dig, status = _prepare(record, self.roles, self.extensions, self.keys, self.verifiable)
        if status == "ignored":
            return "ignored"
        body = canonical(obj).decode("utf-8")
        ext = obj["ext"].partition("/")[0]
        where = (ext, obj["project"], obj["key"])
        roles_text = canonical(self.roles.to_json()).decode("utf-8")
        slot, ident = _slot(obj), identity(obj)

        def work(conn: Conn) -> str:
            stamp = self._roles_version(conn, roles_text)
            conn.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                (advisory_key("handoff", "item", *where),),
            )
            others = conn.execute(
                "SELECT digest, body FROM handoff_records WHERE id = %s AND digest <> %s"
                " AND ext = %s AND project = %s AND key = %s",
                (obj["id"], dig, *where),
            ).fetchall()
            for held, text in others:
                other = parse_stored(text)
                if _slot(other) != slot:
                    continue
                if identity(other) != ident:
                    raise _rewrite(obj, held)
                # the same record with other signature bytes: a signature variant is
                # stored beside it, an unsigned repeat is not
                if "proof" not in obj.get("evidence", {}):
                    return "duplicate"
            if obj["type"] == "amended":
                found = [
                    text
                    for old in obj["supersedes"]
                    for (text,) in conn.execute(
                        "SELECT body FROM handoff_records WHERE ext = %s AND project = %s"
                        " AND key = %s AND id = %s",
                        (*where, old),
                    ).fetchall()
                ]
                _check_raised(obj, [parse_stored(text) for text in found])
            if isinstance(stamp, HandoffError):
                raise stamp
            cur = conn.execute(
                "INSERT INTO handoff_records (id, digest, ext, project, key, body, roles_version)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (id, digest) DO NOTHING",
                (obj["id"], dig, *where, body, stamp),
            )
            return "accepted" if cur.rowcount == 1 else "duplicate"

        if "\x00" in body or any("\x00" in part for part in (*where, obj["id"])):
            raise HandoffError(  # PostgreSQL text holds no NUL; JCS bodies escape it anyway
                "record", "a record id or item field holds a NUL character", reason="nul"
            )
        return self._tx(work, "store_write")

    def _roles_at(self, stamp: int) -> Roles:
        row = self._tx(
            lambda conn: conn.execute(
                "SELECT roles FROM handoff_roles WHERE version = %s", (stamp,)
            ).fetchone(),
            "store_read",
        )
        if row is None:
            raise HandoffError(
                "store",
                f"{self.path}: a record names roles the store does not hold",
                reason="store_tampered",
            )
        return Roles.from_json(parse_line(row[0], where="stored roles"))

    def _rows(self, item: ItemId | None) -> list[tuple[str, int | None, int | None]]:
        """``(body, stamp, in_force)`` in insertion order (see ``SQLiteStore._rows``)."""
        query = (
            "SELECT digest, body, roles_version, in_force FROM (SELECT seq, digest, body,"
            " roles_version, ext, project, key, MAX(roles_version) OVER (ORDER BY seq ROWS"
            " UNBOUNDED PRECEDING) AS in_force FROM handoff_records) AS stamped"
        )

        def work(conn: Conn) -> list[tuple[Any, ...]]:
            if item is None:
                return conn.execute(query + " ORDER BY seq").fetchall()
            return conn.execute(
                query + " WHERE ext = %s AND project = %s AND key = %s ORDER BY seq",
                (item.ext, item.project, item.key),
            ).fetchall()

        rows = self._tx(work, "store_read")
        for dig, body, _, _ in rows:
            if not isinstance(body, str) or dig != _body_digest(body):
                raise HandoffError(
                    "store",
                    f"{self.path}: a stored record does not match its digest",
                    reason="store_tampered",
                )
        return [(body, int(stamp), int(in_force)) for _, body, stamp, in_force in rows]

    def __len__(self) -> int:
        row = self._tx(
            lambda conn: conn.execute("SELECT COUNT(*) FROM handoff_records").fetchone(),
            "store_read",
        )
        return int(row[0]) if row else 0
