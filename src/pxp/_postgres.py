"""Rooms, ledgers, seat tokens and link digests on PostgreSQL, shared by server replicas.

Opened by :func:`pxp.server.service_for_url` for a ``postgresql://`` URL (the
``postgres`` extra, psycopg 3). The same rules as the SQLite stores, across processes on
several hosts:

**Ours:**

- ``save`` locks the room's row (``SELECT … FOR UPDATE``) before it compares the stored
  snapshot with the one this room object was loaded with (review pg2 #1: a change that
  appends no ledger entry, such as a draft, counts too) and the stored ledger with the
  room's, so two replicas saving one room at once are serialised and the second is
  refused ``store_conflict`` (it reloads and retries); ``load`` reads the row and the
  ledger under ``FOR SHARE``, so it never mixes two saves.
- The ledger is append-only in the database: triggers refuse ``UPDATE``, ``DELETE``,
  ``TRUNCATE`` and an insert that does not extend the room's chain (``n`` one past the
  last, ``prev`` the last hash).
- Every ``create`` and ``save`` sends ``NOTIFY pxp_rooms, '<room id>'`` inside its
  transaction (delivered when it commits). :meth:`PostgresRoomStore.listen` runs a thread
  that ``LISTEN``\\ s and calls back with the room id, so a ``wait_for_turn`` waiting on one
  replica is woken by a write on another at once (the periodic re-read stays as the
  fallback when the listening connection is down).
- Link digests: a room's links are changed under a transaction-scoped advisory lock on
  the room id, so "a room seen before is refused" and "a later issue wins" hold across
  replicas.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from ._envelope import SEATS
from ._room import Room
from ._server_links import LinkKind, LinkRow, _links_text, _utf8, _writable, stored_row
from ._store import STALE_ROW, LinkWrite, _Bases, _check_extends, _restore, _snapshot, row_unchanged
from .errors import PxpError

if TYPE_CHECKING:
    import psycopg

    Conn = psycopg.Connection[Any]

__all__ = ["CHANNEL", "MIGRATIONS", "PostgresLinkStore", "PostgresRoomStore"]

T = TypeVar("T")

_log = logging.getLogger("pxp")

CHANNEL = "pxp_rooms"
"""The ``NOTIFY`` channel; the payload is the id of the room that changed."""

MIGRATIONS: list[list[str]] = [
    [
        "CREATE TABLE pxp_rooms (id text PRIMARY KEY, snapshot text NOT NULL, head text NOT NULL)",
        "CREATE TABLE pxp_ledger (room_id text NOT NULL REFERENCES pxp_rooms (id),"
        " n bigint NOT NULL, hash text NOT NULL, prev text NOT NULL, entry text NOT NULL,"
        " PRIMARY KEY (room_id, n))",
        "CREATE TABLE pxp_seat_tokens (token text PRIMARY KEY,"
        " room_id text NOT NULL REFERENCES pxp_rooms (id), seat text NOT NULL)",
        "CREATE TABLE pxp_server_links (room_id text NOT NULL, seat text NOT NULL,"
        " kind text NOT NULL, digest text NOT NULL, expires_at text,"
        " revoked boolean NOT NULL DEFAULT false, issued_at bigint,"
        " PRIMARY KEY (room_id, seat, kind))",
        "CREATE FUNCTION pxp_ledger_refuse() RETURNS trigger LANGUAGE plpgsql AS $$"
        " BEGIN RAISE EXCEPTION 'pxp ledger is append-only (% refused)', TG_OP; END $$",
        "CREATE FUNCTION pxp_ledger_chain() RETURNS trigger LANGUAGE plpgsql AS $$"
        " BEGIN"
        "  IF NEW.n <> COALESCE((SELECT MAX(n) FROM pxp_ledger WHERE room_id = NEW.room_id), 0)"
        "     + 1 OR NEW.prev <> COALESCE((SELECT hash FROM pxp_ledger"
        "     WHERE room_id = NEW.room_id AND n = NEW.n - 1), repeat('0', 64)) THEN"
        "   RAISE EXCEPTION 'pxp ledger entry does not extend the chain';"
        "  END IF;"
        "  RETURN NEW;"
        " END $$",
        "CREATE TRIGGER pxp_ledger_fixed BEFORE UPDATE OR DELETE ON pxp_ledger"
        " FOR EACH ROW EXECUTE FUNCTION pxp_ledger_refuse()",
        "CREATE TRIGGER pxp_ledger_no_truncate BEFORE TRUNCATE ON pxp_ledger"
        " FOR EACH STATEMENT EXECUTE FUNCTION pxp_ledger_refuse()",
        "CREATE TRIGGER pxp_ledger_extends BEFORE INSERT ON pxp_ledger"
        " FOR EACH ROW EXECUTE FUNCTION pxp_ledger_chain()",
    ],
    # ours (review i25b #5): who joined with a seat link's invite (the digest of its join_id)
    ["ALTER TABLE pxp_server_links ADD COLUMN joined_by text"],
]
"""The PostgreSQL migrations of the PXP store (``ppstore_migrations``, store ``pxp``)."""


_TRIGGERS = {"pxp_ledger": ["pxp_ledger_fixed", "pxp_ledger_no_truncate", "pxp_ledger_extends"]}


def _open(url: str) -> Any:
    import ppstore
    from ppstore import Pg, StoreError, StoreUnavailableError, missing_triggers

    try:
        pg = Pg(url, application_name="pxp")
    except StoreError as exc:
        raise PxpError("store_unavailable", f"cannot open the room store: {exc.message}") from None
    try:
        with pg.connection() as conn:
            ppstore.migrate_postgres(conn, "pxp", MIGRATIONS)
            gone = missing_triggers(conn, _TRIGGERS)
    except StoreError as exc:
        pg.close()
        # an outage (the database gone, a lock held past a timeout) is not a corrupt store
        outage = isinstance(exc, StoreUnavailableError)
        code = "store_unavailable" if outage else "store_corrupt"
        raise PxpError(code, f"cannot open the room store: {exc.message}") from None
    if gone:  # the tables' owner dropped or disabled the append-only guards
        pg.close()
        raise PxpError("store_corrupt", f"the ledger lost its append-only triggers: {gone}")
    return pg


def _tx(pg: Any, work: Callable[[Conn], T]) -> T:
    from ppstore import StoreError

    try:
        result: T = pg.tx(work)
    except StoreError as exc:
        raise PxpError("store_unavailable", f"the room store failed: {exc.message}") from None
    except UnicodeError:  # text that is not UTF-8 past the checks: refused, nothing written
        raise PxpError("argument_invalid", "a value is not valid UTF-8 text") from None
    return result


def _nul_free(*texts: str | None) -> None:
    if any(text is not None and "\x00" in text for text in texts):
        raise PxpError("argument_invalid", "an id holds a NUL character")
    _writable(*texts)


def _findable(*texts: str | None) -> bool:
    """Whether these can name stored rows (no NUL, UTF-8): else a look-up finds nothing."""
    return not any(text is not None and "\x00" in text for text in texts) and _utf8(*texts)


def _links_lock(conn: Conn, room_id: str) -> None:
    """Take the transaction-scoped advisory lock on a room's links."""
    from ppstore import advisory_key

    conn.execute(
        "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
        (advisory_key("pxp", "links", room_id),),
    )


def _set_link_row(conn: Conn, room_id: str, write: LinkWrite) -> bool:
    """Write one link row of a known room inside the caller's transaction (under the
    room's links lock), unless a later issue is stored; return whether it was written."""
    seat, kind, digest, expires_at, issued_at, joined_by, expect = write
    _links_lock(conn, room_id)
    if not conn.execute("SELECT 1 FROM pxp_server_links WHERE room_id = %s", (room_id,)).fetchone():
        return False
    stored = conn.execute(
        "SELECT issued_at, digest, revoked, expires_at FROM pxp_server_links"
        " WHERE room_id = %s AND seat = %s AND kind = %s FOR UPDATE",
        (room_id, seat, kind),
    ).fetchone()
    if not row_unchanged(None if stored is None else tuple(stored[1:]), expect, expires_at):
        raise PxpError("store_conflict", STALE_ROW)
    if expect is not None and digest == expect:
        return True  # a guard: checked, nothing to write
    held = None if stored is None else stored[0]
    if issued_at is not None and held is not None and int(held) > issued_at:
        return False
    conn.execute(
        "INSERT INTO pxp_server_links"
        " (room_id, seat, kind, digest, expires_at, revoked, issued_at, joined_by)"
        " VALUES (%s, %s, %s, %s, %s, false, %s, %s) ON CONFLICT (room_id, seat, kind)"
        " DO UPDATE SET digest = EXCLUDED.digest, expires_at = EXCLUDED.expires_at,"
        " revoked = false, issued_at = EXCLUDED.issued_at, joined_by = EXCLUDED.joined_by",
        (room_id, seat, kind, digest, expires_at, issued_at, joined_by),
    )
    return True


def _add_link_rows(
    conn: Conn, room_id: str, digests: Mapping[tuple[str, LinkKind], str], expires_at: str | None
) -> None:
    """Record the link digests of a new room inside the caller's transaction (under the
    room's links lock); a room id that already has links is refused ``room_exists``."""
    _links_lock(conn, room_id)
    if conn.execute("SELECT 1 FROM pxp_server_links WHERE room_id = %s", (room_id,)).fetchone():
        raise PxpError("room_exists", f"room {room_id} already has links")
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO pxp_server_links (room_id, seat, kind, digest, expires_at)"
            " VALUES (%s, %s, %s, %s, %s)",
            [(room_id, s, k, d, expires_at) for (s, k), d in sorted(digests.items())],
        )


class PostgresRoomStore:
    """A :class:`~pxp.RoomStore` in PostgreSQL (tables ``pxp_rooms``, ``pxp_ledger``,
    ``pxp_seat_tokens``), shared by server replicas; see the module docstring."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._pg = _open(url)
        self._halts: list[Callable[[], None]] = []
        self._bases = _Bases()

    def close(self) -> None:
        """Stop the listeners and close the database connection."""
        for halt in self._halts:
            halt()
        self._halts.clear()
        self._pg.close()

    def _write(
        self,
        room: Room,
        *,
        new: bool,
        links: Sequence[LinkWrite] = (),
        add_links: Mapping[tuple[str, LinkKind], str] | None = None,
        expires_at: str | None = None,
    ) -> list[bool]:
        """Create or save ``room``, and write ``links`` (rows of the link table in this
        same database) in the same transaction: all of it, or nothing. ``add_links`` (a
        new room's link digests, expiring at ``expires_at``) are recorded in it too."""
        snapshot, ledger = _snapshot(room)
        _nul_free(room.id, expires_at, *_links_text(dict(add_links or {})))
        for write in links:
            _nul_free(room.id, *(text for text in write if isinstance(text, str)))

        def work(conn: Conn) -> list[bool]:
            if new:
                added = conn.execute(
                    "INSERT INTO pxp_rooms (id, snapshot, head) VALUES (%s, %s, %s)"
                    " ON CONFLICT (id) DO NOTHING",
                    (room.id, snapshot, room.head),
                ).rowcount
                if added != 1:
                    raise PxpError("store_conflict", f"a room with id {room.id} already exists")
                stored: list[str] = []
            else:
                row = conn.execute(
                    "SELECT snapshot FROM pxp_rooms WHERE id = %s FOR UPDATE", (room.id,)
                ).fetchone()
                if row is None:
                    raise PxpError("room_unknown", f"no room has id {room.id!r}")
                self._bases.check(room, str(row[0]))
                stored = [
                    str(h)
                    for (h,) in conn.execute(
                        "SELECT hash FROM pxp_ledger WHERE room_id = %s ORDER BY n", (room.id,)
                    ).fetchall()
                ]
                _check_extends(stored, room, room.id)
                conn.execute(
                    "UPDATE pxp_rooms SET snapshot = %s, head = %s WHERE id = %s",
                    (snapshot, room.head, room.id),
                )
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO pxp_ledger (room_id, n, hash, prev, entry)"
                    " VALUES (%s, %s, %s, %s, %s)",
                    [
                        (room.id, e["n"], e["hash"], e["prev"], json.dumps(e))
                        for e in ledger[len(stored) :]
                    ],
                )
            for seat in SEATS:
                token = room._seats[seat].token
                if token is None:
                    continue
                conn.execute(
                    "INSERT INTO pxp_seat_tokens (token, room_id, seat) VALUES (%s, %s, %s)"
                    " ON CONFLICT (token) DO NOTHING",
                    (token, room.id, seat),
                )
                bound = conn.execute(
                    "SELECT room_id, seat FROM pxp_seat_tokens WHERE token = %s", (token,)
                ).fetchone()
                if bound is None or tuple(bound) != (room.id, seat):
                    raise PxpError(
                        "store_conflict", f"seat {seat}'s token already opens another seat or room"
                    )
            if add_links is not None:
                _add_link_rows(conn, room.id, add_links, expires_at)
            written = [_set_link_row(conn, room.id, write) for write in links]
            conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, room.id))
            return written

        written = _tx(self._pg, work)
        self._bases.remember(room, snapshot)
        return written

    def _same_database(self, url: str) -> bool:
        """Whether ``url`` names this store's database (so writes can share a transaction)."""
        return url == self._url

    def create(self, room: Room) -> None:
        """Store a new room."""
        self._write(room, new=True)

    def save(self, room: Room) -> None:
        """Append new entries and replace the snapshot in one transaction (row-locked)."""
        self._write(room, new=False)

    def load(self, room_id: str) -> Room:
        """Load and re-verify a stored room (the row and the ledger of one state)."""
        if not _utf8(room_id):  # not text a room id can be (review pg2 #3)
            raise PxpError("room_unknown", f"no room has id {room_id!r}")
        _nul_free(room_id)

        def work(conn: Conn) -> tuple[Any, list[str]]:
            row = conn.execute(
                "SELECT snapshot, head FROM pxp_rooms WHERE id = %s FOR SHARE", (room_id,)
            ).fetchone()
            if row is None:
                return None, []
            texts = [
                str(t)
                for (t,) in conn.execute(
                    "SELECT entry FROM pxp_ledger WHERE room_id = %s ORDER BY n", (room_id,)
                ).fetchall()
            ]
            return row, texts

        row, texts = _tx(self._pg, work)
        if row is None:
            raise PxpError("room_unknown", f"no room has id {room_id!r}")
        try:
            room = _restore(row[0], [json.loads(text) for text in texts])
        except PxpError:
            raise
        except (ValueError, TypeError):
            raise PxpError("store_corrupt", f"room {room_id}'s stored rows are not JSON") from None
        if room.head != row[1]:
            raise PxpError("store_corrupt", f"room {room_id}'s ledger does not end at its head")
        self._bases.remember(room, str(row[0]))
        return room

    def locate(self, token: str) -> tuple[str, str] | None:
        """Find the room and seat of a seat link token."""
        if not _findable(token):
            return None
        row = _tx(
            self._pg,
            lambda conn: conn.execute(
                "SELECT room_id, seat FROM pxp_seat_tokens WHERE token = %s", (token,)
            ).fetchone(),
        )
        return None if row is None else (str(row[0]), str(row[1]))

    def room_ids(self) -> list[str]:
        """Every stored room id, sorted (code point order)."""
        rows = _tx(
            self._pg,
            lambda conn: conn.execute(
                'SELECT id FROM pxp_rooms ORDER BY id COLLATE "C"'
            ).fetchall(),
        )
        return [str(i) for (i,) in rows]

    def listen(
        self,
        callback: Callable[[str], None],
        *,
        wake_all: Callable[[], None] | None = None,
    ) -> Callable[[], None]:
        """Call ``callback(room id)`` from a thread whenever any replica changes a room.

        Returns a function that stops the thread (:meth:`close` stops them all). A dropped
        listening connection is logged (warning, logger ``pxp``) and reopened after a
        second; **ours** (review pg2 #4): a change notified while it was down is lost, so
        once it listens again ``wake_all()`` is called, which makes every waiter read its
        room again at once rather than at its next periodic re-read.
        """
        import psycopg

        from ppstore import libpq_url

        stop = threading.Event()
        dsn = libpq_url(self._url)  # without ppstore's own parameters, which libpq refuses

        def run() -> None:
            dropped = False
            while not stop.is_set():
                try:
                    with psycopg.connect(dsn, autocommit=True) as conn:
                        conn.execute(f"LISTEN {CHANNEL}")
                        if dropped:
                            dropped = False
                            _log.warning("pxp: the room change listener listens again")
                            if wake_all is not None:
                                with contextlib.suppress(Exception):
                                    wake_all()
                        while not stop.is_set():
                            for note in conn.notifies(timeout=0.5):
                                with contextlib.suppress(Exception):
                                    callback(note.payload)
                except psycopg.Error as exc:
                    if not dropped:  # once per outage, the type only (no URL, no password)
                        _log.warning(
                            "pxp: the room change listener lost its database connection (%s);"
                            " retrying every second, waiters re-read their rooms meanwhile",
                            type(exc).__name__,
                        )
                    dropped = True
                    stop.wait(1.0)

        thread = threading.Thread(target=run, name="pxp-listen", daemon=True)
        thread.start()

        def halt() -> None:
            stop.set()
            thread.join(timeout=5)

        self._halts.append(halt)
        return halt


class PostgresLinkStore:
    """A :class:`~pxp.server.LinkStore` in PostgreSQL (table ``pxp_server_links``)."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._pg = _open(url)

    def close(self) -> None:
        """Close the database connection."""
        self._pg.close()

    def add_room(
        self,
        room_id: str,
        digests: dict[tuple[str, LinkKind], str],
        *,
        expires_at: str | None = None,
    ) -> None:
        """Record the digests of a new room in one transaction; a known room is refused."""
        _nul_free(room_id, expires_at, *_links_text(digests))

        _tx(self._pg, lambda conn: _add_link_rows(conn, room_id, digests, expires_at))

    def set_link(
        self,
        room_id: str,
        seat: str,
        kind: LinkKind,
        digest: str,
        *,
        expires_at: str | None = None,
        issued_at: int | None = None,
        joined_by: str | None = None,
    ) -> bool:
        """Replace the link of that seat and kind, unless a later issue is stored."""
        _nul_free(room_id, seat, kind, digest, expires_at, joined_by)
        write = (seat, kind, digest, expires_at, issued_at, joined_by, None)
        return _tx(self._pg, lambda conn: _set_link_row(conn, room_id, write))

    def _update(self, sql: str, args: tuple[Any, ...]) -> int:
        if not _findable(*(a for a in args if isinstance(a, str))):
            return 0  # such a room, seat or kind is not stored
        return _tx(self._pg, lambda conn: int(conn.execute(sql, args).rowcount))

    def revoke(self, room_id: str, *, seat: str | None = None, kind: LinkKind | None = None) -> int:
        """Revoke the selected links of a room."""
        return self._update(
            "UPDATE pxp_server_links SET revoked = true WHERE room_id = %s"
            " AND (%s::text IS NULL OR seat = %s) AND (%s::text IS NULL OR kind = %s)",
            (room_id, seat, seat, kind, kind),
        )

    def set_expiry(
        self,
        room_id: str,
        expires_at: str | None,
        *,
        seat: str | None = None,
        kind: LinkKind | None = None,
    ) -> int:
        """Set the expiry of the selected links of a room."""
        _nul_free(expires_at)
        return self._update(
            "UPDATE pxp_server_links SET expires_at = %s WHERE room_id = %s"
            " AND (%s::text IS NULL OR seat = %s) AND (%s::text IS NULL OR kind = %s)",
            (expires_at, room_id, seat, seat, kind, kind),
        )

    def rows(self, room_id: str) -> list[LinkRow]:
        """Every stored link of ``room_id``."""
        if not _findable(room_id):
            return []
        found = _tx(
            self._pg,
            lambda conn: conn.execute(
                "SELECT seat, kind, digest, expires_at, revoked, issued_at, joined_by"
                " FROM pxp_server_links WHERE room_id = %s ORDER BY seat, kind",
                (room_id,),
            ).fetchall(),
        )
        return [row for row in (stored_row(*found_row) for found_row in found) if row is not None]

    def room_digests(self, room_id: str) -> dict[tuple[str, LinkKind], str]:
        """Return the digests of ``room_id``."""
        return {(r.seat, r.kind): r.digest for r in self.rows(room_id)}
