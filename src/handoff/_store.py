"""Durable and in-memory stores of records: append-only, idempotent, folded on read.

A store holds every admitted record once, keyed by (id, digest): inserting the same
record again changes nothing. A record id, once admitted, names one content forever: a
different content under an id the same item's owner already used is refused
(``conflict``/``same_id``), so the first admitted wins and nothing can rewrite history.
Nothing is ever updated or deleted. State is computed on read by a
:class:`handoff.Registry`, so a store never holds derived state that could drift.

The interface (:class:`Store`) is two transactions, ``append`` and ``records``, with
nothing SQLite-specific in them, so a shared database can implement it later.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol, Self

from ._canonical import canonical, digest, identity
from ._check import check_record
from ._config import ExtensionRegistry, Roles
from ._evidence import KeySet, verify_proof
from ._fold import ItemState, Registry, _slot
from ._json import parse_line, parse_stored
from ._records import ItemId, Record
from .errors import HandoffError

__all__ = ["MemoryStore", "SQLiteStore", "Store", "open_store"]


class Store(Protocol):
    """What every record store offers (in memory, SQLite, PostgreSQL): append, read, fold,
    close (also as a context manager: ``with open_store(url, …) as store``)."""

    roles: Roles
    extensions: ExtensionRegistry

    def append(self, record: Record | Mapping[str, Any] | str | bytes) -> str:
        """Admit and append one record; return what happened.

        ``accepted`` (also a new signature variant of a held signed record),
        ``duplicate`` or ``ignored`` (not stored: an extension or version this receiver
        does not implement). A rejected record raises :class:`HandoffError`
        and nothing is stored; so does a different content under an id the same owner's
        slot of the same item already holds (``conflict``/``same_id``: first admitted wins).
        Another owner reusing an id is stored beside it (the fold reports ``id_reused``).
        """
        ...

    def records(self, item: ItemId | None = None) -> list[dict[str, Any]]:
        """Return every record version held (for ``item`` only when given), in a stable order."""
        ...

    def registry(self, item: ItemId | None = None) -> Registry:
        """Fold what is held (everything, or one item's records) into a new registry."""
        ...

    def state(self, item: ItemId) -> ItemState:
        """Fold the records of ``item`` and return its state."""
        ...

    def states(self) -> dict[ItemId, ItemState]:
        """Fold everything held and return every item's state."""
        ...

    def close(self) -> None:
        """Release what the store holds open (a database connection); memory holds none."""
        ...

    def __enter__(self) -> Self: ...

    def __exit__(self, *_exc: object) -> None: ...


def _check_proof(obj: Mapping[str, Any], keys: KeySet | None, verifiable: bool) -> None:
    """Refuse a settlement whose proof fails against the principal's keys (ours, §10).

    Only where the store is given the keys: a forged copy admitted first would otherwise
    win "first admitted wins" over the genuine settlement. ``verifiable``: a settlement of
    a person (kinds ``principal`` and ``confirmed``) must carry a proof.
    """
    if keys is None or obj.get("type") != "settled":
        return
    evidence = obj.get("evidence")
    if isinstance(evidence, Mapping) and "proof" in evidence:
        verify_proof(obj, keys)
    elif verifiable and obj["authority"]["kind"] in ("principal", "confirmed"):
        raise HandoffError(
            "proof",
            f"record {obj['id']!r}: a verifiable principal side's settlement of a person must "
            "carry evidence.proof",
            reason="proof_missing",
        )


def _prepare(
    record: Record | Mapping[str, Any] | str | bytes,
    roles: Roles,
    extensions: ExtensionRegistry,
    keys: KeySet | None = None,
    verifiable: bool = False,
) -> tuple[dict[str, Any], str, str]:
    if isinstance(record, Record):
        obj = record.to_json()
    elif isinstance(record, str | bytes):
        obj = parse_line(record)
    elif isinstance(record, Mapping):
        obj = dict(record)
    else:
        raise HandoffError("parse", "a record must be a Record, an object or a JSON line")
    verdict = check_record(obj, roles=roles, extensions=extensions)
    if verdict.status == "ignored":
        return obj, "", "ignored"
    _check_proof(obj, keys, verifiable)
    return obj, digest(obj), verdict.status


def _rewrite(obj: Mapping[str, Any], held: str) -> HandoffError:
    return HandoffError(
        "conflict",
        f"record {obj['id']!r} is already held with other content ({held}); a record id "
        "names one content forever, so the first admitted is kept",
        reason="same_id",
    )


def _check_raised(obj: Mapping[str, Any], held: list[Mapping[str, Any]]) -> None:
    """Refuse an amended whose ``terms_rev`` is not above a held need it supersedes (ours).

    A revision names one set of terms: reusing it for other terms would let a settlement
    of that revision read as a settlement of the new terms.
    """
    if obj.get("type") != "amended":
        return
    wanted = set(obj.get("supersedes") or ())
    for other in held:
        if (
            other.get("id") in wanted
            and other.get("type") in ("raised", "amended")
            and other.get("terms_rev", 0) >= obj["terms_rev"]
        ):
            raise HandoffError(
                "record",
                f"record {obj['id']!r}: an amended must carry a terms_rev above the "
                f"{other['terms_rev']} of {other['id']!r}, which it supersedes",
                reason="terms_rev_not_raised",
            )


class _Folding:
    roles: Roles
    extensions: ExtensionRegistry

    def records(self, item: ItemId | None = None) -> list[dict[str, Any]]:
        raise NotImplementedError

    def registry(self, item: ItemId | None = None) -> Registry:
        """Fold what is held (everything, or one item's records) into a new registry."""
        registry = Registry(roles=self.roles, extensions=self.extensions)
        registry.add_many(self.records(item))
        return registry

    def state(self, item: ItemId) -> ItemState:
        """Fold the records of ``item`` and return its state."""
        return self.registry(item).state(item)

    def states(self) -> dict[ItemId, ItemState]:
        """Fold everything held and return every item's state."""
        return self.registry().states()

    def close(self) -> None:
        """Release what the store holds open (a database connection); memory holds none."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


class MemoryStore(_Folding):
    """An in-memory :class:`Store` (the default for tests and short-lived receivers)."""

    def __init__(
        self,
        *,
        roles: Roles,
        extensions: ExtensionRegistry,
        keys: KeySet | None = None,
        verifiable: bool = False,
    ) -> None:
        """``keys``/``verifiable``: check settlement proofs at append (see ``SQLiteStore``)."""
        self.roles = roles
        self.extensions = extensions
        self.keys = keys
        self.verifiable = verifiable
        self._rows: list[tuple[str, str, ItemId, dict[str, Any]]] = []
        self._held: dict[tuple[ItemId, str, str], tuple[str, str]] = {}
        self._digests: set[tuple[ItemId, str, str]] = set()
        self._lock = threading.Lock()

    def append(self, record: Record | Mapping[str, Any] | str | bytes) -> str:
        """Admit and append one record (see :meth:`Store.append`)."""
        obj, dig, status = _prepare(record, self.roles, self.extensions, self.keys, self.verifiable)
        if status == "ignored":
            return "ignored"
        item = ItemId(obj["ext"].partition("/")[0], obj["project"], obj["key"])
        slot = (item, obj["id"], _slot(obj))
        ident = identity(obj)
        with self._lock:
            held = self._held.get(slot)
            if held is not None and held[1] == ident:
                # the same record; a new signature variant is kept beside it
                signed = "proof" in obj.get("evidence", {})
                if not signed or (item, obj["id"], dig) in self._digests:
                    return "duplicate"
                self._digests.add((item, obj["id"], dig))
                self._rows.append((obj["id"], dig, item, json.loads(json.dumps(obj))))
                return "accepted"
            if held is not None:
                raise _rewrite(obj, held[0])
            self._digests.add((item, obj["id"], dig))
            _check_raised(obj, [r for _, _, i, r in self._rows if i == item])
            self._held[slot] = (dig, ident)
            self._rows.append((obj["id"], dig, item, json.loads(json.dumps(obj))))
        return "accepted"

    def records(self, item: ItemId | None = None) -> list[dict[str, Any]]:
        """Return the held record versions in insertion order (see :meth:`Store.records`)."""
        with self._lock:
            rows = list(self._rows)
        return [json.loads(json.dumps(r)) for _, _, i, r in rows if item is None or i == item]


_SCHEMA = """
CREATE TABLE IF NOT EXISTS handoff_records (
    seq     INTEGER PRIMARY KEY AUTOINCREMENT,
    id      TEXT NOT NULL,
    digest  TEXT NOT NULL,
    ext     TEXT NOT NULL,
    project TEXT NOT NULL,
    key     TEXT NOT NULL,
    body    TEXT NOT NULL,
    UNIQUE (id, digest)
);
CREATE INDEX IF NOT EXISTS handoff_records_item ON handoff_records (ext, project, key);
CREATE TRIGGER IF NOT EXISTS handoff_records_no_update BEFORE UPDATE ON handoff_records
BEGIN SELECT RAISE(ABORT, 'handoff_records is append-only'); END;
CREATE TRIGGER IF NOT EXISTS handoff_records_no_delete BEFORE DELETE ON handoff_records
BEGIN SELECT RAISE(ABORT, 'handoff_records is append-only'); END;
CREATE TRIGGER IF NOT EXISTS handoff_records_no_replace_seq BEFORE INSERT ON handoff_records
WHEN EXISTS (SELECT 1 FROM handoff_records WHERE seq = NEW.seq)
BEGIN SELECT RAISE(ABORT, 'handoff_records is append-only'); END;
CREATE TRIGGER IF NOT EXISTS handoff_records_no_replace BEFORE INSERT ON handoff_records
WHEN EXISTS (SELECT 1 FROM handoff_records WHERE id = NEW.id AND digest = NEW.digest)
BEGIN SELECT RAISE(IGNORE); END;
"""


_ROLE_CODES = frozenset({"ownership", "authority"})
"""Refusals that depend on the roles configuration: what a role change can cause."""

SCHEMA_VERSION = 2
"""The SQLite store's schema version (``PRAGMA user_version``), reached by migrations."""

_MIGRATIONS: dict[int, str] = {
    # 1 -> 2: each record is stamped with the roles it was admitted under
    2: """
ALTER TABLE handoff_records ADD COLUMN roles_version INTEGER;
CREATE TABLE IF NOT EXISTS handoff_roles (
    version INTEGER PRIMARY KEY AUTOINCREMENT,
    roles   TEXT NOT NULL UNIQUE
);
CREATE TRIGGER IF NOT EXISTS handoff_roles_no_update BEFORE UPDATE ON handoff_roles
BEGIN SELECT RAISE(ABORT, 'handoff_roles is append-only'); END;
CREATE TRIGGER IF NOT EXISTS handoff_roles_no_delete BEFORE DELETE ON handoff_roles
BEGIN SELECT RAISE(ABORT, 'handoff_roles is append-only'); END;
CREATE TRIGGER IF NOT EXISTS handoff_records_stamped BEFORE INSERT ON handoff_records
WHEN NEW.roles_version IS NULL
BEGIN SELECT RAISE(ABORT, 'every record is stamped with the roles it was admitted under'); END;
""",
}


MIGRATIONS: list[list[str]] = [
    [statement.strip() for statement in _SCHEMA.split(";\n") if statement.strip()],
    [statement.strip() for statement in _MIGRATIONS[2].split(";\n") if statement.strip()],
]
"""The SQLite store's ordered migrations, run by ``ppstore.migrate_sqlite`` (version 1 is
the schema written before versions were recorded, so such files are adopted)."""


def _body_digest(body: str) -> str:
    try:
        return "sha-256:" + hashlib.sha256(body.encode("utf-8")).hexdigest()
    except UnicodeEncodeError:
        return ""


def _row_id(body: str) -> Any:
    """The id of a stored row, for a report (``None`` when the row cannot be parsed)."""
    try:
        return json.loads(body).get("id")
    except (ValueError, RecursionError, AttributeError):
        return None


class _Stamped(_Folding):
    """What the SQL stores share: rows stamped with the roles they were admitted under.

    A subclass supplies ``_rows`` (``(body, stamp, in_force)`` in insertion order) and
    ``_roles_at`` (the roles of a stamp); folding and reading are the same for all.
    """

    path: str

    def _rows(self, item: ItemId | None) -> list[tuple[str, int | None, int | None]]:
        raise NotImplementedError

    def _roles_at(self, stamp: int) -> Roles:
        raise NotImplementedError

    def records(self, item: ItemId | None = None) -> list[dict[str, Any]]:
        """Return the held record versions in insertion order (see :meth:`Store.records`)."""
        return [parse_stored(body) for body, _, _ in self._rows(item)]

    def registry(self, item: ItemId | None = None) -> Registry:
        """Fold what is held (everything, or one item's records) into a new registry.

        Each stored JCS body is checked again on the way in (strictly, as text) under the
        roles **it was admitted under** (its stamp), never under today's, so a role change
        never makes history unreadable while a row changed behind the store's back is still
        refused. Rows written before stamps existed are checked under the current roles;
        those the current roles refuse are reported (:meth:`Registry.role_changed`).
        """
        registry = Registry(roles=self.roles, extensions=self.extensions)
        groups: dict[int | None, list[str]] = {}
        behind: list[tuple[str, int]] = []
        for body, stamp, in_force in self._rows(item):
            if stamp is not None and in_force is not None and stamp < in_force:
                # stamped with roles older than those already in force at its place (a
                # stale device, before roles moved forward only): read under those in force
                behind.append((body, in_force))
                continue
            groups.setdefault(stamp, []).append(body)
        for body, stamp in behind:
            try:
                registry._add_lines([body], self._roles_at(stamp), stored=True)
            except HandoffError as exc:
                if exc.code in _ROLE_CODES:
                    registry.note_role_changed(_row_id(body), exc)
                else:
                    registry.note_rejected(_row_id(body), exc)
        for stamp, bodies in groups.items():
            if stamp is not None:
                roles = self._roles_at(stamp)
                try:
                    registry._add_lines(bodies, roles, stored=True)
                except HandoffError:
                    # one refused row: read the group row by row, reporting that one
                    for body in bodies:
                        try:
                            registry._add_lines([body], roles, stored=True)
                        except HandoffError as exc:
                            registry.note_rejected(_row_id(body), exc)
                continue
            for body in bodies:
                try:
                    registry._add_lines([body], None, stored=True)
                except HandoffError as exc:
                    if exc.code in _ROLE_CODES:
                        registry.note_role_changed(_row_id(body), exc)
                    else:
                        registry.note_rejected(_row_id(body), exc)
        return registry


class SQLiteStore(_Stamped):
    """A :class:`Store` in one SQLite file: survives restarts, safe for several processes.

    Each append is one ``BEGIN IMMEDIATE`` transaction in WAL mode with a busy timeout, so
    concurrent writers (threads or processes) serialise and none loses a record. The
    table is append-only (triggers refuse UPDATE, DELETE and the row replacement of
    ``INSERT OR REPLACE``); bodies are stored in JCS and checked against their digest on
    every read.
    """

    SCHEMA_VERSION = SCHEMA_VERSION
    """The schema version this class reads and writes (``PRAGMA user_version``)."""

    def __init__(
        self,
        path: str | Path,
        *,
        roles: Roles,
        extensions: ExtensionRegistry,
        timeout: float = 30.0,
        keys: KeySet | None = None,
        verifiable: bool = False,
    ) -> None:
        """Open (or create) the store at ``path``.

        ``keys``: the principal's keys; given, a settlement whose ``evidence.proof`` fails
        is refused at append (``proof``/...), and with ``verifiable`` so is a settlement of
        a person without a proof.
        """
        self.roles = roles
        self.extensions = extensions
        self.keys = keys
        self.verifiable = verifiable
        self.path = str(path)
        self._lock = threading.Lock()
        from ppstore import StoreError, migrate_sqlite

        try:
            self._db = sqlite3.connect(
                self.path, timeout=timeout, isolation_level=None, check_same_thread=False
            )
            self._db.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
            self._db.execute("PRAGMA journal_mode = WAL")
            migrate_sqlite(self._db, "handoff", MIGRATIONS)
        except StoreError as exc:
            self._db.close()
            raise HandoffError(
                "store",
                f"cannot open the SQLite store {self.path}: {exc.message}",
                reason="store_open",
            ) from None
        except sqlite3.Error as exc:
            raise HandoffError(
                "store", f"cannot open the SQLite store {self.path}: {exc}", reason="store_open"
            ) from None

    def _roles_version(self) -> int:
        """The stamp of the current roles (added on first use); inside a write transaction."""
        text = canonical(self.roles.to_json()).decode("utf-8")
        row = self._db.execute(
            "SELECT version FROM handoff_roles WHERE roles = ?", (text,)
        ).fetchone()
        if row is not None:
            latest = self._db.execute("SELECT MAX(version) FROM handoff_roles").fetchone()[0]
            if int(row[0]) < int(latest):
                # roles move forward only: a device still configured with roles the store
                # has since replaced cannot write under them (it could re-admit a revoked
                # party); it must take up the current roles
                raise HandoffError(
                    "store",
                    f"{self.path}: these roles were replaced by newer ones (version "
                    f"{latest}); update the configuration before appending",
                    reason="roles_stale",
                )
            return int(row[0])
        cursor = self._db.execute("INSERT INTO handoff_roles (roles) VALUES (?)", (text,))
        return int(cursor.lastrowid or 0)

    def close(self) -> None:
        """Close the database connection."""
        self._db.close()

    def append(self, record: Record | Mapping[str, Any] | str | bytes) -> str:
        """Admit and append one record (see :meth:`Store.append`)."""
        obj, dig, status = _prepare(record, self.roles, self.extensions, self.keys, self.verifiable)
        if status == "ignored":
            return "ignored"
        body = canonical(obj).decode("utf-8")
        row = (obj["id"], dig, obj["ext"].partition("/")[0], obj["project"], obj["key"], body)
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    others = self._db.execute(
                        "SELECT digest, body FROM handoff_records WHERE id = ? AND digest <> ?"
                        " AND ext = ? AND project = ? AND key = ?",
                        (obj["id"], dig, *row[2:5]),
                    ).fetchall()
                    slot, ident = _slot(obj), identity(obj)
                    for held, text in others:
                        other = parse_stored(text)
                        if _slot(other) != slot:
                            continue
                        if identity(other) != ident:
                            raise _rewrite(obj, held)
                        # the same record with other signature bytes (or, unsigned, another
                        # ts): a signature variant is stored beside it, an unsigned repeat not
                        if "proof" not in obj.get("evidence", {}):
                            self._db.execute("COMMIT")
                            return "duplicate"
                    if obj["type"] == "amended":
                        found = [
                            text
                            for old in obj["supersedes"]
                            for (text,) in self._db.execute(
                                "SELECT body FROM handoff_records WHERE ext = ? AND project = ?"
                                " AND key = ? AND id = ?",
                                (*row[2:5], old),
                            )
                        ]
                        _check_raised(obj, [parse_stored(text) for text in found])
                    cursor = self._db.execute(
                        "INSERT OR IGNORE INTO handoff_records "
                        "(id, digest, ext, project, key, body, roles_version) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?)",
                        (*row, self._roles_version()),
                    )
                    inserted = cursor.rowcount == 1
                    self._db.execute("COMMIT")
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise
            except sqlite3.Error as exc:
                raise HandoffError(
                    "store", f"cannot append to {self.path}: {exc}", reason="store_write"
                ) from None
        return "accepted" if inserted else "duplicate"

    def _roles_at(self, stamp: int) -> Roles:
        try:
            with self._lock:
                row = self._db.execute(
                    "SELECT roles FROM handoff_roles WHERE version = ?", (stamp,)
                ).fetchone()
        except sqlite3.Error as exc:
            raise HandoffError(
                "store", f"cannot read {self.path}: {exc}", reason="store_read"
            ) from None
        if row is None:
            raise HandoffError(
                "store",
                f"{self.path}: a record names roles the store does not hold",
                reason="store_tampered",
            )
        return Roles.from_json(parse_line(row[0], where="stored roles"))

    def _rows(self, item: ItemId | None) -> list[tuple[str, int | None, int | None]]:
        """``(body, stamp, in_force)`` in insertion order; ``in_force`` is the newest stamp
        of any row up to this one in the whole store (the roles in force at its place)."""
        query = (
            "SELECT digest, body, roles_version, in_force FROM (SELECT seq, digest, body,"
            " roles_version, ext, project, key, MAX(roles_version) OVER (ORDER BY seq ROWS"
            " UNBOUNDED PRECEDING) AS in_force FROM handoff_records)"
        )
        try:
            with self._lock:
                if item is None:
                    rows = self._db.execute(query + " ORDER BY seq").fetchall()
                else:
                    rows = self._db.execute(
                        query + " WHERE ext = ? AND project = ? AND key = ? ORDER BY seq",
                        (item.ext, item.project, item.key),
                    ).fetchall()
        except sqlite3.Error as exc:
            raise HandoffError(
                "store", f"cannot read {self.path}: {exc}", reason="store_read"
            ) from None
        for dig, body, _, _ in rows:
            # a body edited behind the store's back no longer matches its digest
            if not isinstance(body, str) or dig != _body_digest(body):
                raise HandoffError(
                    "store",
                    f"{self.path}: a stored record does not match its digest",
                    reason="store_tampered",
                )
        return [(body, stamp, in_force) for _, body, stamp, in_force in rows]

    def __len__(self) -> int:
        with self._lock:
            count: int = self._db.execute("SELECT COUNT(*) FROM handoff_records").fetchone()[0]
        return count


def open_store(
    url: str,
    *,
    roles: Roles,
    extensions: ExtensionRegistry,
    keys: KeySet | None = None,
    verifiable: bool = False,
    create: bool = True,
) -> Store:
    """The record store ``url`` names: ``:memory:``, ``sqlite:PATH`` or ``postgresql://…``.

    ``keys``/``verifiable`` as for :class:`SQLiteStore`. ``create=False`` refuses a store
    that does not exist yet (``io``/``store_missing``) instead of creating it. A URL of
    another kind is ``usage``/``url``. The PostgreSQL store (the ``postgres`` extra) is
    shared by writers on several hosts (docs/spec/stores.md).

    >>> from handoff import EXTENSIONS, Roles, open_store
    >>> roles = Roles.from_json({"principal": "p", "principal_side": ["p-desk"]})
    >>> open_store(":memory:", roles=roles, extensions=EXTENSIONS).records()
    []
    """
    from ppstore import StoreError, parse_url

    try:
        found = parse_url(url)
    except StoreError as exc:
        raise HandoffError("usage", exc.message, reason="url") from None
    if found.kind == "memory":
        return MemoryStore(roles=roles, extensions=extensions, keys=keys, verifiable=verifiable)
    if found.kind == "sqlite":
        if not create and not Path(found.path).exists():
            raise HandoffError("io", f"no SQLite store at {found.path}", reason="store_missing")
        return SQLiteStore(
            found.path, roles=roles, extensions=extensions, keys=keys, verifiable=verifiable
        )
    from ._postgres import PostgresStore

    return PostgresStore(
        found.dsn,
        roles=roles,
        extensions=extensions,
        keys=keys,
        verifiable=verifiable,
        create=create,
    )
