"""Room stores: in memory, and SQLite (rooms survive a restart; the ledger is append-only).

A store is a small protocol of transactions (:class:`RoomStore`): ``create``, ``load``,
``save`` (append the room's new ledger entries and replace its snapshot, refusing a copy
another writer overtook since it was loaded, or a history that does not extend what is
stored), ``locate`` (seat link token to room and seat) and ``room_ids``. Nothing in it
is SQLite-specific, so a shared database can serve the same interface.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ._envelope import SEATS
from ._room import Room
from .errors import PxpError

if TYPE_CHECKING:
    from ._server_links import LinkKind

__all__ = ["MemoryRoomStore", "RoomStore", "SqliteRoomStore"]


class RoomStore(Protocol):
    """Where rooms live between actions."""

    def create(self, room: Room) -> None:
        """Store a new room; ``store_conflict`` if the id is taken."""
        ...

    def load(self, room_id: str) -> Room:
        """Return the stored room (ledger verified); ``room_unknown`` if there is none."""
        ...

    def save(self, room: Room) -> None:
        """Append the room's new ledger entries and store its state, atomically.

        Refused (``store_conflict``) when the stored room is no longer the one this room
        object was loaded (or last created or saved) with through this store, whether the
        change in between appended ledger entries or only changed the snapshot (a draft);
        or when the stored ledger is not a prefix of the room's. The caller reloads and
        redoes its action; nothing is written.
        """
        ...

    def locate(self, token: str) -> tuple[str, str] | None:
        """Return ``(room id, seat)`` for a seat link token, or ``None``."""
        ...

    def room_ids(self) -> list[str]:
        """Every stored room id, sorted."""
        ...


def _snapshot(room: Room) -> tuple[str, list[dict[str, Any]]]:
    export = room.export()
    ledger = export.pop("ledger")
    return json.dumps(export, sort_keys=True), ledger


def _restore(snapshot: str, ledger: list[dict[str, Any]]) -> Room:
    from ._export import import_room

    data = json.loads(snapshot)
    data["ledger"] = ledger
    # a stored room: the checks added since it was stored note it (spec section 8)
    return import_room(Room, data, stored=True)


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _check_extends(stored: list[str], room: Room, room_id: str) -> None:
    entries = room.ledger.entries
    if len(stored) > len(entries) or any(stored[i] != entries[i].hash for i in range(len(stored))):
        raise PxpError(
            "store_conflict",
            f"room {room_id}'s ledger does not extend the stored ledger; reload and retry",
        )


class _Bases:
    """**Ours** (review pg2 #1): the stored snapshot each room object was last loaded,
    created or saved with, so ``save`` can refuse a copy that another writer overtook.

    One per store object (never process-wide); weak, so a room its caller dropped is
    forgotten. A save compares the stored snapshot with the base under the store's
    write lock: the compare-and-swap of a version counter, with the snapshot itself as
    the version (a change undone in between leaves the very state the copy was made
    from, so applying the copy's action to it loses nothing).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._of: weakref.WeakKeyDictionary[Room, str] = weakref.WeakKeyDictionary()

    def remember(self, room: Room, snapshot: str) -> None:
        """Record ``snapshot`` as what ``room`` was loaded or saved with."""
        with self._lock:
            self._of[room] = snapshot

    def check(self, room: Room, stored: str) -> None:
        """Refuse (``store_conflict``) when the stored snapshot is not ``room``'s base."""
        with self._lock:
            base = self._of.get(room)
        if base is None:
            raise PxpError(
                "store_conflict",
                f"this copy of room {room.id} was not loaded from this store; load it and retry",
            )
        if base != stored:
            raise PxpError(
                "store_conflict",
                f"room {room.id} was saved by another writer since this copy was loaded;"
                " reload and retry",
            )


class MemoryRoomStore:
    """A :class:`RoomStore` in process memory (copies in and out, thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rooms: dict[str, tuple[str, list[dict[str, Any]]]] = {}
        self._bases = _Bases()

    def _token_clash(self, room: Room) -> None:
        """Refuse a seat token that already opens another seat or room (as SQLite does)."""
        for seat in SEATS:
            token = room._seats[seat].token
            if token is not None and self._locate(token) not in (None, (room.id, seat)):
                raise PxpError(
                    "store_conflict", f"seat {seat}'s token already opens another seat or room"
                )

    def create(self, room: Room) -> None:
        """Store a new room."""
        with self._lock:
            if room.id in self._rooms:
                raise PxpError("store_conflict", f"a room with id {room.id} already exists")
            self._token_clash(room)
            self._rooms[room.id] = found = _snapshot(room)
            self._bases.remember(room, found[0])

    def load(self, room_id: str) -> Room:
        """Return a fresh copy of the stored room."""
        with self._lock:
            found = self._rooms.get(room_id)
        if found is None:
            raise PxpError("room_unknown", f"no room has id {room_id!r}")
        room = _restore(found[0], json.loads(json.dumps(found[1])))
        self._bases.remember(room, found[0])
        return room

    def save(self, room: Room) -> None:
        """Append new entries and replace the snapshot."""
        snapshot, ledger = _snapshot(room)
        with self._lock:
            found = self._rooms.get(room.id)
            if found is None:
                raise PxpError("room_unknown", f"no room has id {room.id!r}")
            self._bases.check(room, found[0])
            _check_extends([e["hash"] for e in found[1]], room, room.id)
            self._token_clash(room)
            self._rooms[room.id] = (snapshot, found[1] + ledger[len(found[1]) :])
            self._bases.remember(room, snapshot)

    def locate(self, token: str) -> tuple[str, str] | None:
        """Find the room and seat of a seat link token."""
        with self._lock:
            return self._locate(token)

    def _locate(self, token: str) -> tuple[str, str] | None:
        for room_id, (snapshot, _) in self._rooms.items():
            seats = json.loads(snapshot)["seats"]
            for seat in SEATS:
                if seats[seat]["token"] is not None and seats[seat]["token"] == token:
                    return room_id, seat
        return None

    def room_ids(self) -> list[str]:
        """Every stored room id."""
        with self._lock:
            return sorted(self._rooms)


_SCHEMA = """
CREATE TABLE IF NOT EXISTS pxp_rooms (
    id TEXT PRIMARY KEY,
    snapshot TEXT NOT NULL,
    head TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS pxp_ledger (
    room_id TEXT NOT NULL REFERENCES pxp_rooms(id),
    n INTEGER NOT NULL,
    hash TEXT NOT NULL,
    prev TEXT NOT NULL,
    entry TEXT NOT NULL,
    PRIMARY KEY (room_id, n)
);
CREATE TABLE IF NOT EXISTS pxp_seat_tokens (
    token TEXT PRIMARY KEY,
    room_id TEXT NOT NULL REFERENCES pxp_rooms(id),
    seat TEXT NOT NULL
);
CREATE TRIGGER IF NOT EXISTS pxp_ledger_no_update BEFORE UPDATE ON pxp_ledger
BEGIN SELECT RAISE(ABORT, 'pxp ledger is append-only'); END;
CREATE TRIGGER IF NOT EXISTS pxp_ledger_no_delete BEFORE DELETE ON pxp_ledger
BEGIN SELECT RAISE(ABORT, 'pxp ledger is append-only'); END;
CREATE TRIGGER IF NOT EXISTS pxp_ledger_chain BEFORE INSERT ON pxp_ledger
WHEN NEW.n <> COALESCE((SELECT MAX(n) FROM pxp_ledger WHERE room_id = NEW.room_id), 0) + 1
  OR NEW.prev <> COALESCE(
       (SELECT hash FROM pxp_ledger WHERE room_id = NEW.room_id AND n = NEW.n - 1),
       '0000000000000000000000000000000000000000000000000000000000000000')
BEGIN SELECT RAISE(ABORT, 'pxp ledger entry does not extend the chain'); END;
"""


_LINKS = (
    "CREATE TABLE IF NOT EXISTS pxp_server_links ("
    " room_id TEXT NOT NULL, seat TEXT NOT NULL, kind TEXT NOT NULL,"
    " digest TEXT NOT NULL, PRIMARY KEY (room_id, seat, kind))"
)


LinkWrite = tuple[str, str, str, "str | None", "int | None", "str | None", "str | None"]
"""One link row to write with a room's save: ``(seat, kind, digest, expires_at, issued_at,
joined_by, expect)`` (see :meth:`pxp.server.LinkStore.set_link`). ``expect``, when not
``None``, makes the write a compare-and-swap: the stored row must still hold the digest
``expect``, unrevoked, with the expiry ``expires_at``, or the whole transaction is refused
``store_conflict`` (**ours**, review pxp-adv2 #1: a join retry rewrites rows it checked
before the transaction; an operator's revoke or expiry, or a release, landing in between
stands). A write whose ``digest`` is ``expect`` is a guard: the row is checked as above and
nothing is written (**ours**, review pxp-join #1: the invite a first join spends)."""

STALE_ROW = "a link row changed since it was checked (revoked, expired or issued again)"
"""The sentence of the ``store_conflict`` a compare-and-swap link write refuses with."""


def row_unchanged(
    stored: tuple[object, object, object] | None, expect: str | None, expires_at: str | None
) -> bool:
    """Whether a stored ``(digest, revoked, expires_at)`` is what a compare-and-swap write
    expects (``expect`` ``None``: no condition)."""
    if expect is None:
        return True
    return (
        stored is not None
        and stored[0] == expect
        and not stored[1]
        and (None if stored[2] is None else str(stored[2])) == expires_at
    )


def set_link_row(db: sqlite3.Connection, room_id: str, write: LinkWrite) -> bool:
    """Write one link row of a known room inside the caller's transaction, unless the row
    stored was issued at a later ledger entry; return whether it was written."""
    seat, kind, digest, expires_at, issued_at, joined_by, expect = write
    known = db.execute("SELECT 1 FROM pxp_server_links WHERE room_id = ?", (room_id,)).fetchone()
    stored = db.execute(
        "SELECT issued_at, digest, revoked, expires_at FROM pxp_server_links"
        " WHERE room_id = ? AND seat = ? AND kind = ?",
        (room_id, seat, kind),
    ).fetchone()
    if not row_unchanged(None if stored is None else stored[1:], expect, expires_at):
        raise PxpError("store_conflict", STALE_ROW)
    if expect is not None and digest == expect:
        return True  # a guard: checked, nothing to write
    later = (
        issued_at is not None
        and stored is not None
        and stored[0] is not None
        and int(stored[0]) > issued_at
    )
    if known is None or later:
        return False
    db.execute(
        "INSERT OR REPLACE INTO pxp_server_links"
        " (room_id, seat, kind, digest, expires_at, revoked, issued_at, joined_by)"
        " VALUES (?,?,?,?,?,0,?,?)",
        (room_id, seat, kind, digest, expires_at, issued_at, joined_by),
    )
    return True


def add_link_rows(
    db: sqlite3.Connection,
    room_id: str,
    digests: Mapping[tuple[str, LinkKind], str],
    expires_at: str | None,
) -> None:
    """Record the link digests of a new room inside the caller's transaction; a room id
    that already has links is refused ``room_exists``."""
    seen = db.execute("SELECT 1 FROM pxp_server_links WHERE room_id = ?", (room_id,)).fetchone()
    if seen is not None:
        raise PxpError("room_exists", f"room {room_id} already has links")
    db.executemany(
        "INSERT INTO pxp_server_links (room_id, seat, kind, digest, expires_at) VALUES (?,?,?,?,?)",
        [(room_id, seat, kind, d, expires_at) for (seat, kind), d in sorted(digests.items())],
    )


def _link_columns(db: sqlite3.Connection) -> None:
    """Add the link columns a file of an earlier layout lacks (each in its turn)."""
    have = {row[1] for row in db.execute("PRAGMA table_info(pxp_server_links)")}
    if "expires_at" not in have:
        db.execute("ALTER TABLE pxp_server_links ADD COLUMN expires_at TEXT")
    if "revoked" not in have:
        db.execute("ALTER TABLE pxp_server_links ADD COLUMN revoked INTEGER NOT NULL DEFAULT 0")
    if "issued_at" not in have:
        db.execute("ALTER TABLE pxp_server_links ADD COLUMN issued_at INTEGER")


def _joined_by_column(db: sqlite3.Connection) -> None:
    """Version 2: who joined with a seat link's invite (the digest of the ``join_id`` the
    joining agent chose, :meth:`pxp.server.RoomService.join`; never an agent key)."""
    have = {row[1] for row in db.execute("PRAGMA table_info(pxp_server_links)")}
    if "joined_by" not in have:
        db.execute("ALTER TABLE pxp_server_links ADD COLUMN joined_by TEXT")


SQLITE_MIGRATIONS: list[list[Any]] = [
    [
        *(statement.strip() for statement in _SCHEMA.split(";\n") if statement.strip()),
        _LINKS,
        _link_columns,
    ],
    [_joined_by_column],
]
"""The ordered migrations of a PXP SQLite file (rooms, ledgers, seat tokens and the
server's link digests: one store, ``pxp``, recorded in ``PRAGMA user_version``). Version 1
is the layout before versions were recorded; its steps are idempotent, so such a file,
whichever of the earlier link columns it has, is adopted as it is. Version 2 adds the link
column ``joined_by`` (**ours**, review i25b #5: an honest join retry)."""


def open_sqlite(path: str | Path) -> sqlite3.Connection:
    """Open (creating or upgrading) a PXP SQLite file; ``store_corrupt`` when it cannot be."""
    from ppstore import StoreError, migrate_sqlite

    db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None, timeout=10.0)
    try:
        migrate_sqlite(db, "pxp", SQLITE_MIGRATIONS)
        # the version-1 statements are idempotent: run again on every open, they put back
        # append-only ledger triggers a file lost (as before versions were recorded)
        db.executescript(_SCHEMA)
    except StoreError as exc:
        db.close()
        raise PxpError(
            "store_corrupt", f"cannot open the room store {path}: {exc.message}"
        ) from None
    return db


class SqliteRoomStore:
    """A :class:`RoomStore` in an SQLite file.

    Ledger rows can only be inserted, each extending the chain (triggers refuse UPDATE,
    DELETE and out-of-chain inserts); every ``load`` re-verifies the whole ledger.
    """

    def __init__(self, path: str | Path) -> None:
        self._lock = threading.Lock()
        self._path = str(path)
        self._db = open_sqlite(path)
        self._db.execute("PRAGMA foreign_keys = ON")
        self._bases = _Bases()

    def close(self) -> None:
        """Close the database connection."""
        with self._lock:
            self._db.close()

    def _write(
        self,
        room: Room,
        *,
        new: bool,
        links: Sequence[LinkWrite] = (),
        add_links: Mapping[tuple[str, LinkKind], str] | None = None,
        expires_at: str | None = None,
    ) -> list[bool]:
        """Create or save ``room``, and write ``links`` (rows of the server's link table in
        this same file) in the same transaction: all of it, or nothing. ``add_links`` (a
        new room's link digests, expiring at ``expires_at``) are recorded in it too."""
        snapshot, ledger = _snapshot(room)
        written: list[bool] = []
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                row = self._db.execute(
                    "SELECT snapshot FROM pxp_rooms WHERE id = ?", (room.id,)
                ).fetchone()
                if new and row is not None:
                    raise PxpError("store_conflict", f"a room with id {room.id} already exists")
                if not new and row is None:
                    raise PxpError("room_unknown", f"no room has id {room.id!r}")
                if not new:
                    self._bases.check(room, str(row[0]))
                stored = [
                    h
                    for (h,) in self._db.execute(
                        "SELECT hash FROM pxp_ledger WHERE room_id = ? ORDER BY n", (room.id,)
                    )
                ]
                _check_extends(stored, room, room.id)
                if new:
                    self._db.execute(
                        "INSERT INTO pxp_rooms (id, snapshot, head) VALUES (?, ?, ?)",
                        (room.id, snapshot, room.head),
                    )
                else:
                    self._db.execute(
                        "UPDATE pxp_rooms SET snapshot = ?, head = ? WHERE id = ?",
                        (snapshot, room.head, room.id),
                    )
                self._db.executemany(
                    "INSERT INTO pxp_ledger (room_id, n, hash, prev, entry) VALUES (?, ?, ?, ?, ?)",
                    [
                        (room.id, e["n"], e["hash"], e["prev"], json.dumps(e))
                        for e in ledger[len(stored) :]
                    ],
                )
                for seat in SEATS:
                    token = room._seats[seat].token
                    if token is not None:
                        bound = self._db.execute(
                            "SELECT room_id, seat FROM pxp_seat_tokens WHERE token = ?", (token,)
                        ).fetchone()
                        if bound is not None and tuple(bound) != (room.id, seat):
                            raise PxpError(
                                "store_conflict",
                                f"seat {seat}'s token already opens another seat or room",
                            )
                        self._db.execute(
                            "INSERT OR IGNORE INTO pxp_seat_tokens (token, room_id, seat) "
                            "VALUES (?, ?, ?)",
                            (token, room.id, seat),
                        )
                if add_links is not None:
                    add_link_rows(self._db, room.id, add_links, expires_at)
                written = [set_link_row(self._db, room.id, write) for write in links]
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._bases.remember(room, snapshot)
        return written

    def _same_file(self, path: str | Path) -> bool:
        """Whether ``path`` names this store's file (so its writes can share a transaction)."""
        return self._path != ":memory:" and os.path.realpath(self._path) == os.path.realpath(path)

    def create(self, room: Room) -> None:
        """Store a new room."""
        self._write(room, new=True)

    def save(self, room: Room) -> None:
        """Append new entries and replace the snapshot in one transaction."""
        self._write(room, new=False)

    def load(self, room_id: str) -> Room:
        """Load and re-verify a stored room."""
        if not _utf8(room_id):  # not text a room id can be (review pg2 #3)
            raise PxpError("room_unknown", f"no room has id {room_id!r}")
        with self._lock:
            # One read transaction: the snapshot and the ledger come from the same state,
            # whatever another connection or process commits between the two statements.
            self._db.execute("BEGIN")
            try:
                row = self._db.execute(
                    "SELECT snapshot, head FROM pxp_rooms WHERE id = ?", (room_id,)
                ).fetchone()
                texts = (
                    []
                    if row is None
                    else [
                        text
                        for (text,) in self._db.execute(
                            "SELECT entry FROM pxp_ledger WHERE room_id = ? ORDER BY n",
                            (room_id,),
                        )
                    ]
                )
            finally:
                self._db.execute("COMMIT")
            if row is None:
                raise PxpError("room_unknown", f"no room has id {room_id!r}")
        try:
            entries = [json.loads(text) for text in texts]
            room = _restore(row[0], entries)
        except PxpError:
            raise
        except (ValueError, TypeError):  # a damaged row (bad JSON, or not a room snapshot)
            raise PxpError("store_corrupt", f"room {room_id}'s stored rows are not JSON") from None
        if room.head != row[1]:
            raise PxpError("store_corrupt", f"room {room_id}'s ledger does not end at its head")
        self._bases.remember(room, str(row[0]))
        return room

    def locate(self, token: str) -> tuple[str, str] | None:
        """Find the room and seat of a seat link token."""
        if not _utf8(token):
            return None
        with self._lock:
            row = self._db.execute(
                "SELECT room_id, seat FROM pxp_seat_tokens WHERE token = ?", (token,)
            ).fetchone()
        return None if row is None else (str(row[0]), str(row[1]))

    def room_ids(self) -> list[str]:
        """Every stored room id."""
        with self._lock:
            return [str(i) for (i,) in self._db.execute("SELECT id FROM pxp_rooms ORDER BY id")]
