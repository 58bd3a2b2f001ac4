"""Seat links, invites and principal links of the PXP room server: minting, parsing, checking.

A room has two seats, ``A`` and ``B``. A seat's links:

* the **seat link**, the credential one proxy (an MCP client) passes to every tool;
* the **principal link**, which opens the principal's web page and is the only way to answer
  an escalation as ``via: "web"``;
* seat B's **invite** (``invite_link_for_counterpart``), which the creator forwards: it only
  joins the seat, once. The first join spends it for a fresh seat link given to the agent
  that joined and nobody else; presented again, it contests the seat (see
  :meth:`pxp._server_rooms.RoomService.join`).

Each secret carries 256 random bits. Only its SHA-256 digest is stored, so a copy of the
database opens no seat. A presented token is hashed and compared with every stored digest
of its room with :func:`hmac.compare_digest` (all of them, whichever matches), so neither the
comparison time nor the order of the checks says which seat or kind was close.

Links are never logged and never shown to the other seat: nothing in this module logs, and
the server returns a link only to the caller it was minted for. Seat B's seat link and
principal link are minted late, at the first join with B's invite (:func:`mint_token`,
:meth:`LinkStore.set_link`), because everything ``create_room`` returns reaches seat A's side.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, Protocol
from urllib.parse import parse_qs

from ._room import format_time
from .errors import PxpError

__all__ = [
    "INVITE_ONLY",
    "LINK_EXPIRED",
    "LINK_REVOKED",
    "UNKNOWN_LINK",
    "LinkKind",
    "LinkRow",
    "LinkStore",
    "MemoryLinkStore",
    "MintedLinks",
    "SeatGrant",
    "SqliteLinkStore",
    "check_link",
    "mint_links",
    "mint_token",
    "parse_link",
    "stored_row",
    "token_digest",
]

LinkKind = Literal["seat", "principal", "invite"]
"""``"seat"`` for the proxy's MCP credential, ``"principal"`` for the web page, ``"invite"``
for seat B's one join."""

_SEATS = ("A", "B")
_KINDS: tuple[LinkKind, ...] = ("seat", "principal", "invite")
_PATH = {"seat": "s", "principal": "p"}
_TOKEN_BYTES = 32
# room id (16 lowercase hex) then a separator then the token (43 base64url characters).
# room ids: ours are 16 hex digits; a room imported from the reference keeps its own id
_REF = re.compile(r"(?:^|/)(?P<room>[A-Za-z0-9]{1,64})[./](?P<token>[A-Za-z0-9_-]{43})$")
_SEAT_LINK = re.compile(r"(?:^|/)room/(?P<room>[A-Za-z0-9]{1,64})\?(?P<query>[^#\s]*)$")
_TOKEN = re.compile(r"[A-Za-z0-9_-]{43}")
UNKNOWN_LINK = "This link does not open a seat in any room on this server."
"""The one sentence of ``link_unknown``: whatever was wrong with the link, it says nothing
about which rooms, seats or kinds exist."""


def _b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("ascii")).hexdigest()


def token_digest(token: str) -> str:
    """Return the SHA-256 digest (hex) of a link secret: all a :class:`LinkStore` keeps."""
    return _digest(token)


def mint_token(random_bytes: Callable[[int], bytes]) -> str:
    """Return one fresh link secret of 256 random bits (base64url, 43 characters)."""
    raw = random_bytes(_TOKEN_BYTES)
    if len(raw) != _TOKEN_BYTES:
        raise PxpError("random_invalid", "the random source returned the wrong number of bytes")
    return _b64url(raw)


@dataclass(frozen=True)
class SeatGrant:
    """What a valid link opens: the room, the seat and the kind of link presented."""

    room_id: str
    seat: str
    kind: LinkKind


@dataclass(frozen=True)
class MintedLinks:
    """The fresh secrets of one room, returned once at creation and never stored in clear.

    ``tokens[(seat, kind)]`` is the secret; :meth:`link` turns it into the link handed out.
    """

    room_id: str
    tokens: dict[tuple[str, LinkKind], str]

    def link(self, base_url: str, seat: str, kind: LinkKind) -> str:
        """Return the link of ``seat`` and ``kind`` under ``base_url`` (no trailing slash)."""
        token = self.tokens[(seat, kind)]
        if kind != "principal":
            # the reference's seat link shape: https://.../room/ID?seat=A&t=TOKEN (an invite
            # has it too: a client of the reference joins with it)
            return f"{base_url}/room/{self.room_id}?seat={seat}&t={token}"
        return f"{base_url}/{_PATH[kind]}/{self.room_id}/{token}"

    def digests(self) -> dict[tuple[str, LinkKind], str]:
        """Return the SHA-256 digest of every secret, which is all a store keeps."""
        return {key: _digest(token) for key, token in self.tokens.items()}


def mint_links(random_bytes: Callable[[int], bytes]) -> MintedLinks:
    """Mint a room id (64 random bits) and four secrets of 256 random bits each.

    ``random_bytes(n)`` must return ``n`` bytes from a cryptographically secure source
    (``secrets.token_bytes`` in production; a seeded source only in tests).
    """
    room_raw = random_bytes(8)
    if len(room_raw) != 8:
        raise PxpError("random_invalid", "the random source returned the wrong number of bytes")
    tokens: dict[tuple[str, LinkKind], str] = {}
    for seat in _SEATS:
        for kind in ("seat", "principal"):
            raw = random_bytes(_TOKEN_BYTES)
            if len(raw) != _TOKEN_BYTES:
                raise PxpError(
                    "random_invalid", "the random source returned the wrong number of bytes"
                )
            tokens[(seat, kind)] = _b64url(raw)
    if len(set(tokens.values())) != len(tokens):
        raise PxpError("random_invalid", "the random source repeated itself")
    return MintedLinks(room_raw.hex(), tokens)


def parse_link(link: object) -> tuple[str, str]:
    """Return ``(room_id, token)`` from a link, or raise ``PxpError('link_unknown')``.

    Accepts a seat link as the reference writes it (``.../room/<room>?seat=A&t=<token>``),
    a principal link (``.../p/<room>/<token>``), the older ``.../s/<room>/<token>`` and the
    bare ``<room>.<token>``. The kind and seat are not taken from the link: the stored
    digests decide them (:func:`check_link` refuses a link whose ``seat`` says otherwise).
    """
    return _parse(link)[:2]


def _parse(link: object) -> tuple[str, str, str | None]:
    if not isinstance(link, str) or len(link) > 2048:
        raise PxpError("link_unknown", UNKNOWN_LINK)
    text = link.strip()
    match = _SEAT_LINK.search(text)
    if match is not None:
        try:
            query = parse_qs(match.group("query"), max_num_fields=8)
        except ValueError:
            raise PxpError("link_unknown", UNKNOWN_LINK) from None
        seats, tokens = query.get("seat", []), query.get("t", [])
        if len(seats) == 1 and len(tokens) == 1 and _TOKEN.fullmatch(tokens[0]):
            return match.group("room"), tokens[0], seats[0]
        raise PxpError("link_unknown", UNKNOWN_LINK)
    match = _REF.search(text)
    if match is None:
        raise PxpError("link_unknown", UNKNOWN_LINK)
    return match.group("room"), match.group("token"), None


@dataclass(frozen=True)
class LinkRow:
    """One stored link: its seat and kind, the digest of its secret, when it expires
    (``format_time`` text, ``None``: never), whether it was revoked, the ledger entry that
    issued it and (a seat link an invite was spent for) the digest of the ``join_id`` the
    joining agent chose (:meth:`pxp.server.RoomService.join`; never an agent key)."""

    seat: str
    kind: LinkKind
    digest: str
    expires_at: str | None = None
    revoked: bool = False
    issued_at: int | None = None
    joined_by: str | None = None


def stored_row(
    seat: object,
    kind: object,
    digest: object,
    expires_at: object,
    revoked: object,
    issued_at: object,
    joined_by: object,
) -> LinkRow | None:
    """A link row as a database returned it, or ``None`` for a seat or kind no link has."""
    kinds: dict[object, LinkKind] = {k: k for k in _KINDS}
    if seat not in _SEATS or kind not in kinds:
        return None
    return LinkRow(
        str(seat),
        kinds[kind],
        str(digest),
        None if expires_at is None else str(expires_at),
        bool(revoked),
        None if issued_at is None else int(str(issued_at)),
        None if joined_by is None else str(joined_by),
    )


Selector = tuple[str | None, LinkKind | None]


def _utf8(*texts: object) -> bool:
    """Whether every text encodes as UTF-8; a lone surrogate (what ``json.loads`` makes of
    ``"\\ud800"``) does not, so it names nothing stored (**ours**, review pg2 #3)."""
    for text in texts:
        if isinstance(text, str):
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:
                return False
    return True


def _writable(*texts: object) -> None:
    """Refuse (``argument_invalid``) to store text that is not UTF-8, in every store alike."""
    if not _utf8(*texts):
        raise PxpError("argument_invalid", "an id, digest or time is not valid UTF-8 text")


def _links_text(digests: dict[tuple[str, LinkKind], str]) -> list[str]:
    return [text for (seat, kind), digest in digests.items() for text in (seat, kind, digest)]


def _selected(row: LinkRow, seat: str | None, kind: LinkKind | None) -> bool:
    return (seat is None or row.seat == seat) and (kind is None or row.kind == kind)


class LinkStore(Protocol):
    """Where the digests of a room's links live, with their expiry and revocation."""

    def add_room(
        self,
        room_id: str,
        digests: dict[tuple[str, LinkKind], str],
        *,
        expires_at: str | None = None,
    ) -> None:
        """Record the digests of a new room; a room id seen before is refused."""

    def rows(self, room_id: str) -> list[LinkRow]:
        """Every stored link of ``room_id`` (empty when the room is unknown)."""

    def room_digests(self, room_id: str) -> dict[tuple[str, LinkKind], str]:
        """Return the stored digests of ``room_id`` (empty when the room is unknown)."""

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
        """Record ``digest`` as the one link of that seat and kind of a known room, replacing
        (revoking) any earlier one; returns whether it was recorded.

        ``issued_at`` is the ledger entry number that issued the link: a link whose stored
        ``issued_at`` is later is kept (the write of a slower process that issued earlier
        loses), so the store always holds the link the ledger issued last. ``joined_by``
        is kept with a seat link an invite was spent for: the digest of the ``join_id`` the
        joining agent chose (:meth:`pxp.server.RoomService.join`, an honest retry; never an
        agent key)."""

    def revoke(self, room_id: str, *, seat: str | None = None, kind: LinkKind | None = None) -> int:
        """Revoke the room's links (all, or of one seat and/or kind); return how many."""

    def set_expiry(
        self,
        room_id: str,
        expires_at: str | None,
        *,
        seat: str | None = None,
        kind: LinkKind | None = None,
    ) -> int:
        """Set when the room's links (all, or of one seat and/or kind) expire; return how many."""


class MemoryLinkStore:
    """A :class:`LinkStore` in process memory (lost at exit; for tests and embedding)."""

    def __init__(self) -> None:
        self._rooms: dict[str, dict[tuple[str, LinkKind], LinkRow]] = {}
        self._lock = threading.Lock()

    def add_room(
        self,
        room_id: str,
        digests: dict[tuple[str, LinkKind], str],
        *,
        expires_at: str | None = None,
    ) -> None:
        """Record the digests of a new room."""
        _writable(room_id, expires_at, *_links_text(digests))
        with self._lock:
            if room_id in self._rooms:
                raise PxpError("room_exists", f"room {room_id} already has links")
            self._rooms[room_id] = {
                key: LinkRow(key[0], key[1], d, expires_at) for key, d in digests.items()
            }

    def rows(self, room_id: str) -> list[LinkRow]:
        """Every stored link of ``room_id``."""
        with self._lock:
            return sorted(self._rooms.get(room_id, {}).values(), key=lambda r: (r.seat, r.kind))

    def room_digests(self, room_id: str) -> dict[tuple[str, LinkKind], str]:
        """Return the digests of ``room_id``."""
        return {(r.seat, r.kind): r.digest for r in self.rows(room_id)}

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
        """Replace the digest of one link (the earlier link stops working) unless the
        stored one was issued at a later ledger entry."""
        _writable(room_id, seat, kind, digest, expires_at, joined_by)
        with self._lock:
            room = self._rooms.get(room_id)
            if room is None:
                return False
            known = room.get((seat, kind))
            held = None if known is None else known.issued_at
            if issued_at is not None and held is not None and held > issued_at:
                return False
            room[(seat, kind)] = LinkRow(
                seat, kind, digest, expires_at, issued_at=issued_at, joined_by=joined_by
            )
            return True

    def _update(self, room_id: str, seat: str | None, kind: LinkKind | None, **change: Any) -> int:
        with self._lock:
            room = self._rooms.get(room_id, {})
            hits = [key for key, row in room.items() if _selected(row, seat, kind)]
            for key in hits:
                room[key] = replace(room[key], **change)
            return len(hits)

    def revoke(self, room_id: str, *, seat: str | None = None, kind: LinkKind | None = None) -> int:
        """Revoke the selected links of a room."""
        return self._update(room_id, seat, kind, revoked=True)

    def set_expiry(
        self,
        room_id: str,
        expires_at: str | None,
        *,
        seat: str | None = None,
        kind: LinkKind | None = None,
    ) -> int:
        """Set the expiry of the selected links of a room."""
        _writable(expires_at)
        return self._update(room_id, seat, kind, expires_at=expires_at)


class SqliteLinkStore:
    """A :class:`LinkStore` in an SQLite file (table ``pxp_server_links``); survives restarts.

    The file is versioned with the room store's (``pxp._store.SQLITE_MIGRATIONS``):
    opening a file written before links could expire adds the columns (``expires_at``,
    ``revoked``, ``issued_at``) in place; existing links then never expire until told to.
    """

    def __init__(self, path: str | Path) -> None:
        self._path = str(path)
        self._lock = threading.Lock()
        from ._store import open_sqlite

        open_sqlite(self._path).close()  # created or upgraded (ordered migrations)

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self._path, timeout=10.0, isolation_level=None)

    def add_room(
        self,
        room_id: str,
        digests: dict[tuple[str, LinkKind], str],
        *,
        expires_at: str | None = None,
    ) -> None:
        """Record the digests of a new room in one transaction."""
        _writable(room_id, expires_at, *_links_text(digests))
        with self._lock:
            db = self._connect()
            try:
                db.execute("BEGIN IMMEDIATE")
                seen = db.execute(
                    "SELECT 1 FROM pxp_server_links WHERE room_id = ?", (room_id,)
                ).fetchone()
                if seen is not None:
                    db.execute("ROLLBACK")
                    raise PxpError("room_exists", f"room {room_id} already has links")
                db.executemany(
                    "INSERT INTO pxp_server_links (room_id, seat, kind, digest, expires_at)"
                    " VALUES (?,?,?,?,?)",
                    [
                        (room_id, seat, kind, d, expires_at)
                        for (seat, kind), d in sorted(digests.items())
                    ],
                )
                db.execute("COMMIT")
            finally:
                db.close()

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
        """Replace the digest of one link in one transaction (the earlier link stops
        working), unless the stored one was issued at a later ledger entry (another
        process's later issue): the check and the write are one transaction."""
        _writable(room_id, seat, kind, digest, expires_at, joined_by)
        from ._store import set_link_row

        write = (seat, kind, digest, expires_at, issued_at, joined_by, None)
        with self._lock:
            db = self._connect()
            try:
                db.execute("BEGIN IMMEDIATE")
                written = set_link_row(db, room_id, write)
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
            finally:
                db.close()
        return written

    def _update(self, sql: str, args: tuple[Any, ...]) -> int:
        if not _utf8(*args):  # such a room, seat or kind is not stored
            return 0
        with self._lock:
            db = self._connect()
            try:
                return int(db.execute(sql, args).rowcount)
            finally:
                db.close()

    def revoke(self, room_id: str, *, seat: str | None = None, kind: LinkKind | None = None) -> int:
        """Revoke the selected links of a room."""
        return self._update(
            "UPDATE pxp_server_links SET revoked = 1 WHERE room_id = ?"
            " AND (? IS NULL OR seat = ?) AND (? IS NULL OR kind = ?)",
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
        _writable(expires_at)
        return self._update(
            "UPDATE pxp_server_links SET expires_at = ? WHERE room_id = ?"
            " AND (? IS NULL OR seat = ?) AND (? IS NULL OR kind = ?)",
            (expires_at, room_id, seat, seat, kind, kind),
        )

    def rows(self, room_id: str) -> list[LinkRow]:
        """Every stored link of ``room_id``."""
        if not _utf8(room_id):
            return []
        with self._lock:
            db = self._connect()
            try:
                found = db.execute(
                    "SELECT seat, kind, digest, expires_at, revoked, issued_at, joined_by"
                    " FROM pxp_server_links WHERE room_id = ? ORDER BY seat, kind",
                    (room_id,),
                ).fetchall()
            finally:
                db.close()
        return [row for row in (stored_row(*found_row) for found_row in found) if row is not None]

    def room_digests(self, room_id: str) -> dict[tuple[str, LinkKind], str]:
        """Return the digests of ``room_id``."""
        return {(r.seat, r.kind): r.digest for r in self.rows(room_id)}


LINK_REVOKED = "This link was revoked: ask whoever runs the room server for a new one."
"""The sentence of ``link_revoked``."""
LINK_EXPIRED = "This link has expired: ask whoever runs the room server for a new one."
"""The sentence of ``link_expired``."""
INVITE_ONLY = (
    "This is a seat's invite: it only joins the seat, once (join_room); every other tool takes "
    "the your_link that join_room answered."
)
"""The sentence of ``invite_link``: an invite given to a tool other than ``join_room``."""


def check_link(
    store: LinkStore,
    link: object,
    kind: LinkKind | tuple[LinkKind, ...],
    *,
    now: datetime | None = None,
) -> SeatGrant:
    """Return the seat ``link`` opens if it is a valid link of ``kind`` (or of one of the
    kinds given); else refuse.

    Every stored digest of the room is compared in constant time, whichever matches. A
    valid principal link where a seat link is asked for (or the reverse) is refused with the
    same sentence as an unknown one. A matching link that was revoked (``link_revoked``) or
    has expired at ``now`` (an aware datetime; naive: ``time_invalid``; ``None``: expiry is
    not checked) (``link_expired``) is refused with its own
    sentence, and so is an invite given where it does not open anything (``invite_link``):
    only the holder of the secret can learn either.
    """
    at = None if now is None else format_time(now)
    kinds = (kind,) if isinstance(kind, str) else tuple(kind)
    room_id, token, named = _parse(link)
    presented = _digest(token)
    found: LinkRow | None = None
    for row in store.rows(room_id):
        if hmac.compare_digest(presented, row.digest):
            found = row
    if (
        found is None
        or (found.kind not in kinds and found.kind != "invite")
        or (named is not None and named != found.seat)
    ):
        raise PxpError("link_unknown", UNKNOWN_LINK)
    if found.revoked:
        raise PxpError("link_revoked", LINK_REVOKED)
    if found.expires_at is not None and at is not None and at >= found.expires_at:
        raise PxpError("link_expired", LINK_EXPIRED)
    if found.kind not in kinds:
        raise PxpError("invite_link", INVITE_ONLY)
    return SeatGrant(room_id, found.seat, found.kind)
