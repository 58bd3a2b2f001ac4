"""The room service behind the PXP MCP server: rooms from the engine, links, seat views.

:class:`RoomService` is the only place the server touches the room engine. Each call loads
the room from the room store, applies one engine action for one seat, and saves it, so
state lives in the store and nowhere else (the server is stateless between requests).
Within one process the calls are serialised by a lock; across processes the store's own
transactions decide.

A seat's view never carries the other seat's card body, links, or pending question.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import re
import secrets
import threading
import unicodedata
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar, cast

from ._brief import brief_markdown
from ._ledger import verify_ledger
from ._proxy import Proxy
from ._room import MAX_CONTESTS_PER_SEAT, MAX_REJOINS_PER_SEAT, Room, format_time, other_seat
from ._server_links import (
    LINK_EXPIRED,
    LINK_REVOKED,
    UNKNOWN_LINK,
    LinkKind,
    LinkRow,
    LinkStore,
    MemoryLinkStore,
    MintedLinks,
    SeatGrant,
    check_link,
    mint_links,
    mint_token,
    token_digest,
)
from ._server_views import agent_view, compact_envelope, status_word
from ._store import STALE_ROW, LinkWrite, MemoryRoomStore, RoomStore, row_unchanged
from .errors import PxpError

if TYPE_CHECKING:
    from ._postgres import PostgresRoomStore
    from ._store import SqliteRoomStore

__all__ = [
    "DEFAULT_LINK_TTL",
    "JOIN_RETRY_WINDOW",
    "MAX_AGENTS_PER_SEAT",
    "MAX_CONTESTS_PER_SEAT",
    "Joined",
    "RoomService",
    "utc_now",
]

_T = TypeVar("_T")

_SAVE_TRIES = 3
"""How many times :meth:`RoomService._act` loads, acts and saves before it passes a
``store_conflict`` on to the caller (**ours**, review pg2 #1)."""
_log = logging.getLogger("pxp.server")
_MAX_TEXT = 4000
MAX_AGENTS_PER_SEAT = 16
"""How many agents may sit in one seat over a room's life (``agent_limit`` after that):
each new agent appends a ledger entry, and every request re-verifies the whole ledger."""
_CONTESTED = (
    "seat {seat}'s invite was spent when an agent joined the seat with it. Nobody can tell "
    "which agent acts for seat {seat}'s principal, so the room has ended if it was still "
    "running, and its ledger and brief record both joins; to negotiate, open a new room and "
    "send its invite only to the counterpart."
)
_RETRIED = (
    "This answers your join again (same join_id): the seat link and page link of any earlier "
    "answer to it no longer work; use these."
)
DEFAULT_LINK_TTL = timedelta(days=30)
"""How long a link works after it is issued, unless the service is told otherwise."""

JOIN_RETRY_WINDOW = timedelta(minutes=2)
"""How long after its join an agent may present the spent invite again as a retry of that
join, whose answer it lost (**ours**, review i25b #5; :meth:`RoomService.join`)."""

_KIND: dict[str, LinkKind] = {"seat": "seat", "principal": "principal", "invite": "invite"}


def _kind(kind: str) -> LinkKind:
    return _KIND[kind]


def _join_digests(join_id: object, room_id: str, seat: str) -> tuple[str, str] | None:
    """The digests of a join's ``join_id`` (``None``: no retry possible): the one kept,
    bound to the room and seat (**ours**, review pxp-adv2 #4: one table of guesses does
    not serve every room), and the unbound one rows written before kept (still matched)."""
    if join_id is None:
        return None
    if not isinstance(join_id, str) or not 16 <= len(join_id) <= 200:
        raise PxpError("argument_invalid", "join_id must be a string of 16 to 200 characters")

    def digest(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()

    return digest(f"pxp-join:{room_id}:{seat}:{join_id}"), digest("pxp-join:" + join_id)


def _parse_time(at: str) -> datetime:
    """A ledger time (``format_time`` text) as an aware datetime."""
    return datetime.strptime(at, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)


def _joint_store(rooms: RoomStore, links: LinkStore) -> SqliteRoomStore | PostgresRoomStore | None:
    """The room store that writes a room and link rows in one transaction, when the two
    stores are one database (one SQLite file, one PostgreSQL database); ``None`` when they
    are not."""
    from ._postgres import PostgresLinkStore, PostgresRoomStore
    from ._server_links import SqliteLinkStore
    from ._store import SqliteRoomStore

    joint = (
        isinstance(rooms, SqliteRoomStore)
        and isinstance(links, SqliteLinkStore)
        and rooms._same_file(links._path)
    ) or (
        isinstance(rooms, PostgresRoomStore)
        and isinstance(links, PostgresLinkStore)
        and rooms._same_database(links._url)
    )
    if not joint:
        return None
    return cast("SqliteRoomStore | PostgresRoomStore", rooms)


class Joined(NamedTuple):
    """What :meth:`RoomService.join` gives back.

    ``view`` is the seat's view; ``page_token`` the secret of the seat's principal link when
    this join issued it (for the principal only), else ``None``; ``seat_token`` the secret
    of the seat link an invite was spent for (the joining agent's credential from now on),
    else ``None``.
    """

    view: dict[str, Any]
    page_token: str | None
    seat_token: str | None
    notice: str | None = None


def _notice(room: Room, seat: str) -> str | None:
    """What the joining agent's principal must hear about the seat's history (ours): that
    its link joined before, or that an earlier holder released it (with the card it sealed).
    """
    rejoins, releases = room.rejoins(seat), room.releases(seat)
    if rejoins and rejoins[-1]["n"] == len(room.ledger):
        first = room.agents(seat)[-1]
        return (
            f"This seat's link had already joined this room (agent {first}). If your agent did "
            "not join before, another agent holds this seat's link: tell your principal. The "
            "ledger and the brief record every join."
        )
    if releases:
        last = releases[-1]
        by = last.get("by") or {}
        sealed = (
            " Its card was sealed before the release, by the agent or page that held it then."
            if last.get("sealed_by")
            else ""
        )
        return (
            f"This seat was held by agent {last['agent']} and released at ledger entry "
            f"{last['n']} through the principal page issued to "
            f"{by.get('agent') or 'the room creator'}; that page still acts for this seat.{sealed} "
            "If your principal did not release it, tell them: the brief records it."
        )
    return None


def utc_now() -> datetime:
    """Return the current time (aware, UTC): the default clock of the server."""
    return datetime.now(UTC)


def _text(value: object, what: str, *, limit: int = _MAX_TEXT) -> str:
    if not isinstance(value, str) or not value.strip():
        raise PxpError("argument_invalid", f"{what} must be a non-empty string")
    if len(value) > limit:
        raise PxpError("argument_invalid", f"{what} is longer than {limit} characters")
    return value.strip()


def agent_display_name(name: str) -> str:
    """An agent name as the room keeps it: NFKC, format and control characters (zero-width,
    bidi controls) removed, white space collapsed; refused when nothing is left."""
    folded = unicodedata.normalize("NFKC", name)
    kept = "".join(ch for ch in folded if unicodedata.category(ch) not in ("Cf", "Cc", "Cs"))
    kept = " ".join(kept.split())
    if not kept:
        raise PxpError("argument_invalid", "agent_name holds no visible character")
    return kept


def _private(brief: Mapping[str, Any], other: str) -> dict[str, Any]:
    """Return the brief with the text of the other seat's card clauses withheld.

    The engine's brief quotes, for each agreed term, the clauses of both cards it matches.
    A card body is private to its principal (seed §1), and a term can be made to match
    much of a card (a term that is only punctuation matches every clause), so a seat
    sees the other side's clause references and kinds, never their text.
    """
    withheld = f"(private to seat {other})"

    def hide(row: Mapping[str, Any]) -> dict[str, Any]:
        out = dict(row)
        out[other] = [{**ref, "text": withheld} for ref in row.get(other) or []]
        if "parts" in row:
            out["parts"] = [hide(part) for part in row["parts"]]
        return out

    return {**brief, "authority": [hide(row) for row in brief.get("authority") or []]}


class RoomService:
    """Rooms, seats and links for the server; every method acts for one checked seat.

    ``rooms`` is a room store of :mod:`pxp` (in-memory or SQLite), ``links`` a
    :class:`~pxp._server_links.LinkStore`. ``clock()`` returns the ledger timestamp,
    ``random_bytes(n)`` the randomness for room ids and links. ``builtin`` makes
    ``counterpart_proxy: "builtin"`` possible: called with ``(topic, counterpart)`` it returns
    ``(card, proxy)``, the card sealed for seat B and the :class:`~pxp.Proxy` that plays it.
    ``max_item_bytes`` caps one card or envelope draft (compact JSON, UTF-8). Every link
    expires ``link_ttl`` after it is issued (``None``: never); ``pxp links`` extends, ends or
    revokes them.
    """

    def __init__(
        self,
        rooms: RoomStore | None = None,
        links: LinkStore | None = None,
        *,
        clock: Callable[[], datetime] = utc_now,
        random_bytes: Callable[[int], bytes] = secrets.token_bytes,
        builtin: Callable[[str, str], tuple[Mapping[str, Any], Proxy]] | None = None,
        max_turns: int = 10,
        confirm_on_web: bool = False,
        max_item_bytes: int = 32 * 1024,
        link_ttl: timedelta | None = DEFAULT_LINK_TTL,
    ) -> None:
        self._rooms: RoomStore = rooms if rooms is not None else MemoryRoomStore()
        self._links: LinkStore = links if links is not None else MemoryLinkStore()
        self._confirm_on_web = confirm_on_web
        # Built-in counterpart proxies of this process, by room id (see create_room).
        self._proxies: dict[str, Proxy] = {}
        self._clock = clock
        self._random = random_bytes
        self._builtin = builtin
        self._max_turns = max_turns
        self._max_item = max_item_bytes
        if link_ttl is not None and link_ttl <= timedelta(0):
            raise PxpError("config_invalid", "link_ttl must be positive (None: links never expire)")
        self._link_ttl = link_ttl
        self._lock = threading.RLock()
        self._joint = _joint_store(self._rooms, self._links)

    def grant(self, link: object, kind: LinkKind | tuple[LinkKind, ...]) -> SeatGrant:
        """Return the seat ``link`` opens as a link of ``kind`` (or of one of the kinds
        given), or refuse (:func:`~pxp._server_links.check_link`)."""
        return check_link(self._links, link, kind, now=self._clock())

    def _expiry(self, now: datetime) -> str | None:
        return None if self._link_ttl is None else format_time(now + self._link_ttl)

    def _link_write(
        self,
        seat: str,
        kind: LinkKind,
        token: str,
        now: datetime,
        issued_at: int,
        joined_by: str | None = None,
        replaces: LinkRow | None = None,
    ) -> LinkWrite:
        """A late-issued link of ``kind`` to store with the room's save, conditional on
        ``issued_at``, the ledger entry that issued it: another process that issued later
        (and saved its room later) keeps its link, so the link that works is the one the
        ledger issued last.

        With ``replaces`` (a join retry, :meth:`join`), the write keeps that row's expiry
        and is conditional on the row being as it was checked: still that digest, unrevoked,
        with that expiry (else the save is refused ``store_conflict`` and redone; **ours**,
        review pxp-adv2 #1 and #3)."""
        if replaces is not None:
            expiry, expect = replaces.expires_at, replaces.digest
            return (seat, kind, token_digest(token), expiry, issued_at, joined_by, expect)
        return (seat, kind, token_digest(token), self._expiry(now), issued_at, joined_by, None)

    # ------------------------------------------------------------------ storage

    def _load(self, room_id: str) -> Room:
        try:
            return self._rooms.load(room_id)
        except PxpError as exc:
            if exc.code == "room_unknown":
                raise PxpError("link_unknown", UNKNOWN_LINK) from None
            raise

    def _act(self, room_id: str, action: Callable[[Room], _T]) -> tuple[Room, _T]:
        """Load, apply ``action``, save; a refused action saves nothing (see
        :meth:`_act_linked`, which this is without link writes)."""
        room, out, _ = self._act_linked(room_id, action, None)
        return room, out

    def _act_linked(
        self,
        room_id: str,
        action: Callable[[Room], _T],
        links: Callable[[Room, _T], list[LinkWrite]] | None,
    ) -> tuple[Room, _T, list[bool]]:
        """Load, apply ``action``, save the room together with the link rows ``links``
        derives from the outcome; return the room, the outcome and which rows were written
        (a row another process issued later is kept). A refused action saves nothing.

        **Ours** (review pg2 #1): a save refused ``store_conflict`` because another
        replica saved the room in between is redone on a fresh load, at most
        ``_SAVE_TRIES`` times in all. ``action`` only changes the room object it is given,
        so redoing it is what the caller calling again would do; the action may now be
        refused by the room as it stands (``not_your_turn``), which is the answer.

        **Ours** (review i25b #4): the room and its links are saved all or nothing
        (:meth:`_save`).
        """
        with self._lock:
            for attempt in range(1, _SAVE_TRIES + 1):
                room = self._load(room_id)
                out = action(room)
                writes = links(room, out) if links is not None else []
                try:
                    written = self._save(room, writes)
                except PxpError as exc:
                    if exc.code == "store_conflict" and attempt < _SAVE_TRIES:
                        continue
                    raise
                return room, out, written
            raise AssertionError("unreachable")  # pragma: no cover

    def _save(self, room: Room, writes: list[LinkWrite]) -> list[bool]:
        """Save ``room`` and write the link rows ``writes``, all or nothing.

        Where the room and link stores are one database (one SQLite file, one PostgreSQL
        database: what :func:`~pxp.server.sqlite_service` and
        :func:`~pxp.server.service_for_url` build), both go in one transaction. Otherwise
        the links are written first and, if anything after fails (the room's save
        included), put back as they were: a link nobody has seen is revoked, a replaced
        one restored."""
        if not writes:
            self._rooms.save(room)
            return []
        if self._joint is not None:
            return self._joint._write(room, new=False, links=writes)
        before = {(r.seat, r.kind): r for r in self._links.rows(room.id)}
        for seat, kind, _, expires_at, _, _, expect in writes:
            # the compare-and-swap of a retry's rows (see _link_write); separate stores
            # have no shared transaction, so it is checked here, just before writing
            old = before.get((seat, _kind(kind)))
            stored = None if old is None else (old.digest, old.revoked, old.expires_at)
            if not row_unchanged(stored, expect, expires_at):
                raise PxpError("store_conflict", STALE_ROW)
        done: list[tuple[str, LinkKind, str]] = []
        try:
            written = []
            for seat, kind, digest, expires_at, issued_at, joined_by, expect in writes:
                kind = _kind(kind)
                if expect is not None and digest == expect:
                    written.append(True)  # a guard: checked above, nothing to write
                    continue
                ok = self._links.set_link(
                    room.id,
                    seat,
                    kind,
                    digest,
                    expires_at=expires_at,
                    issued_at=issued_at,
                    joined_by=joined_by,
                )
                written.append(ok)
                if ok:
                    done.append((seat, kind, digest))
            self._rooms.save(room)
        except BaseException:
            self._put_back(room.id, before, done)
            raise
        return written

    def _put_back(
        self,
        room_id: str,
        before: dict[tuple[str, LinkKind], LinkRow],
        done: list[tuple[str, LinkKind, str]],
    ) -> None:
        """The compensating step of :meth:`_save`: each link row this call wrote is put
        back as it was, with its ``issued_at`` and ``joined_by``, while it is still the row
        this call wrote (a later issue by another process is left alone). A row that did
        not exist, or was revoked, is revoked: its secret was never shown, and a revoked
        row never becomes live in between. A row revoked since this call wrote it stays
        revoked (**ours**, review pxp-adv2 #1: the put-back does not undo a revoke)."""
        for seat, kind, digest in done:
            now = {(r.seat, r.kind): r for r in self._links.rows(room_id)}.get((seat, kind))
            if now is None or now.digest != digest:
                continue  # another process wrote it since: its row, not ours
            if now.revoked:
                continue  # revoked since (an operator, a release): it stays revoked
            old = before.get((seat, kind))
            restored = (
                old is not None
                and not old.revoked
                and self._links.set_link(
                    room_id,
                    seat,
                    kind,
                    old.digest,
                    expires_at=old.expires_at,
                    issued_at=old.issued_at,
                    joined_by=old.joined_by,
                )
            )
            if not restored:
                self._links.revoke(room_id, seat=seat, kind=kind)

    def _create(self, room: Room, made: MintedLinks, expires_at: str | None) -> None:
        """Store a new room and its links (``made``), all or nothing.

        **Ours** (review pxp-join #2): where the room and link stores are one database, the
        room, its ledger and its link rows go in one transaction. Otherwise the links are
        recorded first and the room after; if the room's creation fails, the links are
        revoked (their secrets were never shown). Links of a room that does not exist open
        nothing (``link_unknown``), whereas a room stored without links could never be
        opened, nor imported again under its id."""
        if self._joint is not None:
            self._joint._write(room, new=True, add_links=made.digests(), expires_at=expires_at)
            return
        self._links.add_room(room.id, made.digests(), expires_at=expires_at)
        try:
            self._rooms.create(room)
        except BaseException:
            self._links.revoke(room.id)
            raise

    # ------------------------------------------------------------------ actions

    def create_room(
        self, *, topic: str, your_principal: str, counterpart: str, counterpart_proxy: str
    ) -> MintedLinks:
        """Open a room with seat A for ``your_principal`` and B for ``counterpart``.

        With ``counterpart_proxy="builtin"`` the server's built-in counterpart takes seat B
        and seals its card at once. Returns the fresh links (the only time they exist in
        clear).
        """
        topic = _text(topic, "topic", limit=500)
        names = {
            "A": _text(your_principal, "your_principal", limit=200),
            "B": _text(counterpart, "counterpart", limit=200),
        }
        if counterpart_proxy not in ("external", "builtin"):
            raise PxpError("argument_invalid", "counterpart_proxy must be 'external' or 'builtin'")
        builtin = None
        if counterpart_proxy == "builtin":
            if self._builtin is None:
                raise PxpError(
                    "builtin_unavailable",
                    "this server has no built-in counterpart proxy; use counterpart_proxy "
                    "'external' and send invite_link_for_counterpart to the other side",
                )
            builtin = self._builtin(topic, names["B"])
        minted = mint_links(self._random)
        # Seat B gets an invite only: whatever create_room returns reaches seat A's side, and
        # B's seat link or principal page would let A's side read B's card, send as B, or
        # seal B's card and answer B's escalations as B's principal. Both are minted when an
        # agent joins with the invite, for that agent only (see join).
        tokens = dict(minted.tokens)
        del tokens[("B", "principal")]
        if builtin is None:
            tokens[("B", "invite")] = tokens.pop(("B", "seat"))
        made = MintedLinks(minted.room_id, tokens)
        now = self._clock()
        room = Room.open(made.room_id, topic=topic, now=now, max_turns=self._max_turns, names=names)
        # seat A's principal link goes to whoever created the room (its first agent inherits it)
        room.issue_principal_link("A", agent=None, now=now)
        if builtin is not None:
            card, proxy = builtin
            agent = str(getattr(proxy, "name", "") or f"built-in {type(proxy).__name__}")
            room.join("B", agent=agent, now=now, mode="builtin")
            room.seal("B", card, now=now, via="mcp")
        with self._lock:
            self._create(room, made, self._expiry(now))
            if builtin is not None:
                self._proxies[made.room_id] = builtin[1]
        return made

    def import_room(self, data: Any) -> MintedLinks:
        """Serve a room exported by the reference server (or by :meth:`Room.export`).

        The export is verified and replayed (:meth:`Room.from_export`); its room id is kept.
        The export's own seat tokens are not carried over (an export holds them in clear):
        the room gets four fresh links, returned once, for the operator to hand out. A room
        id already served here is refused (``room_exists``).
        """
        room = Room.from_export(data)
        if not re.fullmatch(r"[A-Za-z0-9]{1,64}", room.id):
            raise PxpError("import_invalid", "the room id must be 1-64 letters and digits")
        for seat in ("A", "B"):
            room._seats[seat].token = None  # the export's clear tokens open nothing here
        tokens: dict[tuple[str, LinkKind], str] = {
            (seat, kind): mint_token(self._random)
            for seat in ("A", "B")
            for kind in ("seat", "principal")
        }
        made = MintedLinks(room.id, tokens)
        with self._lock:
            if room.id in self._rooms.room_ids() or self._links.rows(room.id):
                raise PxpError("room_exists", f"room {room.id} is already served here")
            self._create(room, made, self._expiry(self._clock()))
        return made

    def join(self, seat: SeatGrant, agent_name: str, *, join_id: str | None = None) -> Joined:
        """Record which agent sits in the seat (ledger ``agent_joined``); see :class:`Joined`.

        **Seat B's invite** (``seat.kind == "invite"``) joins the seat once: the first join
        spends it for a fresh seat link (``Joined.seat_token``) that only this agent gets,
        and issues the seat's principal link to it. Presented again, by any agent under any
        name, the invite contests the seat (:meth:`Room.contest`: the room ends if it is
        still running, the ledger and the brief record it) and the call is refused
        ``seat_contested``: the invite went through the other side, so nobody can tell which
        agent is the seat principal's, and neither may go on silently.

        **Ours (review i25b #5): an honest retry.** ``join_id`` is a secret the joining agent
        chose (16 to 200 characters; only its digest is kept, with the seat link the join
        mints). The invite presented again with the same ``join_id`` and agent name, within
        :data:`JOIN_RETRY_WINDOW` of the join, while that agent holds the seat and neither
        the seat link nor the page issued to it was revoked or expired, is the retry of a
        join whose answer was lost: it is answered again with a fresh seat link and page
        link in place of the lost ones (which stop working; the notice says so), and the
        ledger gains nothing. The invite passed through the other side, but the
        ``join_id`` never did, so anyone else still contests. **Ours (review pxp-adv2):**
        no retry once a contest of the seat followed the join; the fresh links keep the
        expiry of the rows they replace, and replace them only if they are unchanged since
        the check (else the join is redone on the links as they now stand, so a revoke or
        a release in between stands); the ``join_id`` digest is bound to the room and seat.
        **Ours (review pxp-join #1):** every presentation of an invite saves only if the
        invite row is still as its check saw it (a guard in the save's transaction), so an
        invite revoked, expired or issued again in between is refused as it now stands.

        **A seat link** admits one agent: a later join under another name is refused
        (``seat_taken``), the same name again changes nothing. Seat A's principal link,
        handed out by ``create_room``, passes to the first agent that joins A; a seat link
        joining a seat with no principal link yet (an imported room) issues one. Only the
        operator re-issues a principal link (:meth:`reissue_principal_link`). The agent
        name is kept as :func:`agent_display_name` gives it. The room and the links this
        join issues are saved all or nothing (:meth:`_save`).
        """
        agent = agent_display_name(_text(agent_name, "agent_name", limit=200))
        now = self._clock()
        token = mint_token(self._random)
        seat_token = mint_token(self._random) if seat.kind == "invite" else None
        joiners = _join_digests(join_id, seat.room_id, seat.seat)
        joiner = None if joiners is None else joiners[0]
        # the invite row the grant matched: each attempt checks it is still that, unrevoked
        invite = self._seat_rows(seat.room_id, seat.seat).get("invite") if seat_token else None
        kept: dict[str, LinkRow] = {}  # the rows a retry replaces (this attempt's)
        checked: list[LinkRow] = []  # the invite row this attempt checked

        def act(room: Room) -> tuple[str, int | None, int | None]:
            # ours (review pxp-join-2 #1): each attempt reads the clock again, so a redo
            # after a conflict sees an expiry set meanwhile as it now stands
            nonlocal now
            now = self._clock()
            kept.clear()
            checked.clear()
            current = room.agent(seat.seat)
            if seat.kind == "invite":
                rows = self._seat_rows(room.id, seat.seat)
                self._invite_still_good(invite, rows.get("invite"), now)
                checked.append(rows["invite"])
                if current is not None:
                    retried = self._retried(room, seat.seat, agent, joiners, now, rows)
                    if retried is not None:
                        kept.update(retried[2])
                        return "retried", retried[0], retried[1]
                    if len(room.contests(seat.seat)) < MAX_CONTESTS_PER_SEAT:
                        room.contest(seat.seat, agent=agent, now=now)
                    return "contested", None, None
            if current != agent and len(room.agents(seat.seat)) >= MAX_AGENTS_PER_SEAT:
                raise PxpError(
                    "agent_limit",
                    f"seat {seat.seat} has already had {MAX_AGENTS_PER_SEAT} agents; keep the "
                    "agent name you joined with",
                )
            if current is not None:
                # a seat link is a bearer link: its holder joining again and another agent
                # given the same link (by anyone it passed through) look alike, so every
                # such join is recorded and shown in the brief; another name is refused
                if (
                    room.status not in ("agreed", "ended")
                    and len(room.rejoins(seat.seat)) < MAX_REJOINS_PER_SEAT
                ):
                    room.rejoin(seat.seat, agent=agent, now=now)
                return ("taken" if current != agent else "rejoined"), None, None
            link = room.principal_link(seat.seat)
            room.join(seat.seat, agent=agent, now=now)
            joined_at = len(room.ledger)
            if room.status in ("agreed", "ended") or link is not None:
                return "joined", None, joined_at
            return "joined", room.issue_principal_link(seat.seat, agent=agent, now=now), joined_at

        def links(room: Room, out: tuple[str, int | None, int | None]) -> list[LinkWrite]:
            _, issued_at, joined_at = out
            writes = []
            if seat_token is not None and joined_at is not None:
                # the invite is spent: the agent that joined gets the seat's own link
                writes.append(
                    self._link_write(
                        seat.seat, "seat", seat_token, now, joined_at, joiner, kept.get("seat")
                    )
                )
            if issued_at is not None:
                writes.append(
                    self._link_write(
                        seat.seat, "principal", token, now, issued_at, None, kept.get("principal")
                    )
                )
            for row in checked:
                # ours (review pxp-join #1): the invite was checked before the save's
                # transaction; the save is conditional on it being as checked (a guard,
                # last, so the rows above come first in what the save returns)
                writes.append(
                    (seat.seat, "invite", row.digest, row.expires_at, None, None, row.digest)
                )
            return writes

        with self._lock:
            room, out, written = self._act_linked(seat.room_id, act, links)
            outcome, issued_at, joined_at = out
            if outcome == "contested":
                raise PxpError("seat_contested", _CONTESTED.format(seat=seat.seat))
            if outcome == "taken":
                raise PxpError(
                    "seat_taken",
                    f"seat {seat.seat} is held by another agent (this join is recorded in the "
                    "ledger and the brief); its principal can release it on their page",
                )
        stored = iter(written)
        seat_link = (
            seat_token
            if seat_token is not None and joined_at is not None and next(stored)
            else None
        )
        page = token if issued_at is not None and next(stored) else None
        notice = _RETRIED if outcome == "retried" else _notice(room, seat.seat)
        return Joined(self._view(room, seat.seat), page, seat_link, notice)

    def _seat_rows(self, room_id: str, seat: str) -> dict[str, LinkRow]:
        """The stored link rows of one seat, by kind."""
        return {r.kind: r for r in self._links.rows(room_id) if r.seat == seat}

    @staticmethod
    def _invite_still_good(granted: LinkRow | None, row: LinkRow | None, now: datetime) -> None:
        """Refuse as :func:`check_link` would when the invite row a join's grant matched
        has been revoked, has expired or was issued again since (a release, on this
        process or another): checked on every attempt of the join, so a join redone after
        a conflict answers as the invite now stands (**ours**, review pxp-adv2 #1)."""
        if granted is None or row is None or row.digest != granted.digest:
            raise PxpError("link_unknown", UNKNOWN_LINK)
        if row.revoked:
            raise PxpError("link_revoked", LINK_REVOKED)
        if row.expires_at is not None and format_time(now) >= row.expires_at:
            raise PxpError("link_expired", LINK_EXPIRED)

    def _retried(
        self,
        room: Room,
        seat: str,
        agent: str,
        joiners: tuple[str, str] | None,
        now: datetime,
        rows: dict[str, LinkRow],
    ) -> tuple[int | None, int, dict[str, LinkRow]] | None:
        """``(principal link entry or None, join entry, the rows the retry replaces)`` when
        an invite presented again is the retry of the join that spent it (see
        :meth:`join`), else ``None``. The rows were read outside the save's transaction:
        the retry's writes are conditional on them (:meth:`_link_write`)."""
        if joiners is None or room.agent(seat) != agent:
            return None
        at = format_time(now)

        def dead(row: LinkRow) -> bool:  # revoked (by the operator, a release) or expired
            return row.revoked or (row.expires_at is not None and at >= row.expires_at)

        row = rows.get("seat")
        if row is None or dead(row) or row.issued_at is None or row.joined_by is None:
            return None
        stored = row.joined_by
        if not any(hmac.compare_digest(stored, digest) for digest in joiners):
            return None
        if any(c["n"] > row.issued_at for c in room.contests(seat)):
            # ours (review pxp-adv2 #2): a contest after the join means the invite is known
            # to two parties; past the contest cap a guess would leave no trace
            return None
        joined = room.ledger[row.issued_at - 1] if 0 < row.issued_at <= len(room.ledger) else None
        if (
            joined is None
            or joined.type != "agent_joined"
            or joined.data.get("seat") != seat
            or joined.data.get("agent") != agent
            or not timedelta(0) <= now - _parse_time(joined.at) <= JOIN_RETRY_WINDOW
        ):
            return None
        link = room.principal_link(seat)
        issued = link["issued_at"] if link is not None and link["agent"] == agent else None
        page = rows.get("principal")
        if issued is not None and (page is None or page.issued_at != issued or dead(page)):
            return None  # the page issued at that join was revoked or replaced since
        replaced = (
            {"seat": row} if page is None or issued is None else {"seat": row, "principal": page}
        )
        return issued, row.issued_at, replaced

    def reissue_principal_link(self, room_id: str, seat: str) -> str:
        """Issue ``seat``'s principal link afresh (the operator's command); return its secret.

        The link issued before stops working at once; the ledger records
        ``principal_link {seat, agent: null}`` (issued by the operator, not to an agent).
        """
        if seat not in ("A", "B"):
            raise PxpError("argument_invalid", "the seat must be 'A' or 'B'")
        now = self._clock()
        token = mint_token(self._random)

        def act(room: Room) -> int:
            return room.issue_principal_link(seat, agent=None, now=now)

        def links(room: Room, issued_at: int) -> list[LinkWrite]:
            return [self._link_write(seat, "principal", token, now, issued_at)]

        _, _, written = self._act_linked(room_id, act, links)
        if not written[0]:
            raise PxpError(
                "store_conflict", "another process issued this seat's principal link since"
            )
        return token

    def release(self, seat: SeatGrant) -> str:
        """The seat's principal frees its seat from its agent (the page's release form);
        return the secret of the seat's fresh invite, for the principal's next agent.

        Ledger ``seat_released {seat, agent}``. The released agent's seat link is revoked
        at once, and the fresh invite replaces the seat's earlier one (the one the creator
        forwarded stops working), so only whoever holds the seat's page hands the freed seat
        on: its principal, or whoever spent the invite first; the brief records which page
        released and how the card had been sealed. Only while the room runs, and only with a
        principal link (``seat.kind``).
        """
        if seat.kind != "principal":
            raise PxpError("link_unknown", UNKNOWN_LINK)
        now = self._clock()
        token = mint_token(self._random)

        def act(room: Room) -> int:
            room.release(seat.seat, now=now)
            return len(room.ledger)

        with self._lock:
            # refuse before anything changes; then close the seat's links before the seat is
            # free, so no process can join the freed seat with the invite the creator
            # forwarded (or act with the released agent's link) in between
            held = self._load(seat.room_id)
            held._allowed("release")
            free = held.agent(seat.seat) is None
            if free and not held.releases(seat.seat):
                raise PxpError("seat_invalid", f"seat {seat.seat} has no agent to release")
            for kind in ("invite", "seat"):
                self._links.revoke(seat.room_id, seat=seat.seat, kind=kind)
            if free:
                # released before, and the invite shown then was lost: issue it again (the
                # one shown before stops working); the release is in the ledger already
                written = self._links.set_link(
                    seat.room_id,
                    seat.seat,
                    "invite",
                    token_digest(token),
                    expires_at=self._expiry(now),
                    issued_at=len(held.ledger),
                )
            else:
                _, _, stored = self._act_linked(
                    seat.room_id,
                    act,
                    lambda room, at: [self._link_write(seat.seat, "invite", token, now, at)],
                )
                written = stored[0]
        if not written:
            raise PxpError("store_conflict", "another process released this seat since")
        return token

    def seal(self, seat: SeatGrant, card: Any, via: str) -> dict[str, Any]:
        """Seal the seat's intent card (``via`` ``"mcp"`` or ``"web"``); return the view.

        With ``confirm_on_web`` set, a card sent over MCP is stored as a draft that the
        principal confirms on the web page; a card posted on the page seals at once.
        """
        if not isinstance(card, Mapping):
            raise PxpError("card_invalid", "the card must be a JSON object")
        self._check_size(card, "the card")
        body = dict(card)
        if body.get("amendments"):
            # Amendments are sealed only from a principal's answer to an escalation; a card
            # arriving with its own would let a proxy invent what its principal said.
            raise PxpError(
                "card_invalid",
                "a card to seal may not carry amendments; they come only from a principal's "
                "answer to an escalation",
            )
        body.setdefault("pxp", "0")
        for key in ("may_agree_to", "must_never", "escalate_when", "known_facts"):
            body.setdefault(key, [])
        now = self._clock()

        def act(room: Room) -> object:
            if via == "mcp" and self._confirm_on_web:
                return room.draft_card(seat.seat, body)
            return room.seal(seat.seat, body, now=now, via=via)

        self._act(seat.room_id, act)
        self._run_builtin(seat.room_id)
        return self._view(self._load(seat.room_id), seat.seat)

    def view(self, seat: SeatGrant) -> dict[str, Any]:
        """Return the room as ``seat``'s proxy sees it, in the reference's shape
        (:func:`pxp._server_views.agent_view`)."""
        with self._lock:
            return agent_view(self._load(seat.room_id), seat.seat)

    def page_view(self, seat: SeatGrant) -> dict[str, Any]:
        """Return the room as ``seat``'s principal page shows it (:meth:`Room.view`, the
        seat's draft and agent, the next step in plain words, the link that acts)."""
        with self._lock:
            return self._page_view(self._load(seat.room_id), seat.seat)

    def _view(self, room: Room, seat: str) -> dict[str, Any]:
        return agent_view(room, seat)

    def send(self, seat: SeatGrant, draft: Mapping[str, Any]) -> dict[str, Any]:
        """Send one envelope draft for the seat; return the stored envelope, flags and view."""
        now = self._clock()
        self._check_size(draft, "the envelope")
        _, result = self._act(seat.room_id, lambda r: r.send(seat.seat, draft, now=now))
        self._run_builtin(seat.room_id)
        room = self._load(seat.room_id)
        return {
            "accepted_envelope": compact_envelope(room, result.envelope, seat.seat),
            "room": self._view(room, seat.seat),
            "envelope_hash": result.envelope_hash,
        }

    def answer(
        self, seat: SeatGrant, answer: str, via: str, confirms: tuple[str, ...] = ()
    ) -> dict[str, Any]:
        """Seal the principal's answer to the seat's pending escalation; return the view.

        ``confirms`` names unverified claims the principal confirms (web page only).
        """
        text = _text(answer, "answer")
        confirms = tuple(confirms)
        now = self._clock()
        self._act(
            seat.room_id,
            lambda r: r.answer(seat.seat, text, now=now, via=via, confirms=confirms),
        )
        self._run_builtin(seat.room_id)
        return self._view(self._load(seat.room_id), seat.seat)

    def brief_data(self, seat: SeatGrant) -> dict[str, Any]:
        """Return ``{status, brief_url, brief}`` as the reference answers ``get_brief``, plus
        the Markdown, the ledger and its head; before the end ``brief`` is ``null`` with the
        reference's note."""
        with self._lock:
            room = self._load(seat.room_id)
        status = status_word(room)
        if room.status not in ("agreed", "ended"):
            return {
                "status": status,
                "brief": None,
                "note": "No brief yet. The room has not ended.",
            }
        brief = _private(room.brief(), other_seat(seat.seat))
        ledger = room.ledger.to_json()
        return {
            "status": status,
            "brief_url": None,
            "brief": brief,
            "room_id": room.id,
            "markdown": brief_markdown(brief),
            "ledger": ledger,
            "ledger_head": verify_ledger(ledger),
        }

    def brief_if_ended(self, seat: SeatGrant) -> dict[str, Any] | None:
        """Return :meth:`brief_data` once the room has ended, else ``None``."""
        with self._lock:
            room = self._load(seat.room_id)
        if room.status not in ("agreed", "ended"):
            return None
        return self.brief_data(seat)

    def export(self, room_id: str) -> dict[str, Any]:
        """Return the stored room export (both cards: for the operator, never a seat)."""
        with self._lock:
            return self._load(room_id).export()

    # ------------------------------------------------------------------ helpers

    def _check_size(self, value: object, what: str) -> None:
        """Refuse a card or envelope larger than ``max_item_bytes`` as compact JSON.

        Every request re-reads and re-verifies the whole room, so one oversized item would
        slow every later call in the room, and every waiting ``wait_for_turn``.
        """
        try:
            size = len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())
        except (TypeError, ValueError, RecursionError):
            raise PxpError("argument_invalid", f"{what} is not plain JSON") from None
        if size > self._max_item:
            raise PxpError(
                "argument_invalid", f"{what} is larger than {self._max_item} bytes as JSON"
            )

    def _page_view(self, room: Room, seat: str) -> dict[str, Any]:
        view = room.view(seat)
        data = view.to_json()
        mine = room.export()["seats"][seat]
        pending = room.pending
        data["your_turn"] = view.my_turn
        data["your_card_sealed"] = view.card is not None
        data["your_draft"] = mine.get("draft")
        data["agent"] = room.agent(seat)
        data["released"] = bool(room.releases(seat))
        data["principal_link"] = room.principal_link(seat)
        data["status_word"] = status_word(room)
        data["claims"] = [
            {
                "id": c.id,
                "seat": c.seat,
                "text": c.text,
                "origin": c.origin,
                "ref": c.ref,
                "verified": c.verified,
                "speaker": c.speaker,
                "via": c.via,
                "confirmed_by": c.confirmed_by,
                "backed_by": c.backed_by,
                "reviews": [
                    {"seat": s, "verdict": v[0], "seq": v[1], "reason": v[2]}
                    for s, v in sorted(room.reviews_of(c.id).items())
                ],
            }
            for c in room.claims_seen_by(seat).values()
        ]
        # every escalation of the room: the other side's question too (both proxies saw it
        # in the transcript), but an answer only for this seat (it is sealed into the card)
        data["escalations"] = [
            {
                "seat": e.seat,
                "seq": e.seq,
                "question": e.question,
                "reason": e.reason,
                "answered": e.answer is not None,
                "answer": e.answer if e.seat == seat else None,
                "via": e.via,
                "confirms": list(e.confirms),
            }
            for e in room.escalations
        ]
        try:
            verify_ledger(room.ledger.to_json())
            verifies = True
        except PxpError:
            verifies = False
        data["ledger"] = {"head": room.head, "entries": len(room.ledger), "verifies": verifies}
        if room.status in ("agreed", "ended"):
            data["waiting_on"] = None
            data["next"] = "The room has ended: call get_brief."
        elif view.my_turn:
            data["waiting_on"] = None
            data["next"] = "Your turn: review every claim in 'unreviewed', then send_envelope."
        elif pending is not None and pending.seat == seat:
            data["waiting_on"] = "your principal"
            data["next"] = (
                "Paused on your escalation: your principal answers on their web page, or you "
                "relay their answer with answer_escalation."
            )
        elif pending is not None:
            data["waiting_on"] = "the other principal"
            data["next"] = "Paused on the other side's escalation: wait_for_turn."
        elif room.status == "open":
            data["waiting_on"] = "cards" if view.card is not None else "your card"
            data["next"] = (
                "Waiting for the other side to seal its card: wait_for_turn."
                if view.card is not None
                else "Seal your principal's intent card with seal_intent_card."
            )
        else:
            data["waiting_on"] = "the other proxy"
            data["next"] = "The other proxy's turn: wait_for_turn."
        return data

    def _run_builtin(self, room_id: str) -> None:
        """Let a built-in counterpart (seat B) move while it is its turn.

        Its drafts go through :meth:`Room.send`, the same enforcement as an external proxy's.
        A draft the room refuses, or a proxy with nothing left to say, leaves the turn with
        seat B (the view says whose move it is). Built-in proxies live in this process: after
        a restart a built-in seat waits until the operator seats it again.
        """
        proxy = self._proxies.get(room_id)
        if proxy is None:
            return
        for _ in range(self._max_turns + 1):
            with self._lock:
                room = self._load(room_id)
                view = room.view("B")
                if not view.my_turn:
                    return
                try:
                    room.send("B", proxy.next_envelope(view), now=self._clock())
                except PxpError:
                    return
                except Exception as exc:
                    # A plugged-in proxy that crashes must not turn the caller's own action,
                    # already saved, into a failed tool call. Only the type is logged.
                    _log.warning("built-in proxy failed: %s", type(exc).__name__)
                    return
                try:
                    self._rooms.save(room)
                except PxpError as exc:
                    if exc.code == "store_conflict":
                        continue  # another replica saved the room meanwhile: look again
                    raise
