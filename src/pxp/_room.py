"""The room: a sans-IO state machine for two seats, with enforcement and a ledger.

Every public method is one action. Whether an action is allowed in the room's current
state is decided by one table, :data:`TRANSITIONS` (``(state, action)`` to the outcomes
that action may have and the state each leads to); every pair not in the table is refused
with :class:`PxpError` ``invalid_transition``. Every other check (whose turn, which seat,
what the envelope says) happens before anything changes, so a refused action never
leaves a half-applied state.
"""

from __future__ import annotations

import copy
import hmac
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, cast

from ._canonical import sha256_hex
from ._card import Amendment, IntentCard, SealedCard, _replace_amendments, seal_card
from ._claims import CLAIM_RULES, ClaimCheck, claim_tokens
from ._envelope import (
    SEATS,
    claim_id,
    envelope_hash,
    parse_claim_id,
    proposal_hash,
    validate_draft,
    validate_envelope,
)
from ._flags import flag
from ._jsstr import js_prefix
from ._ledger import Ledger, LedgerEntry, verify_ledger
from ._text import compact, contains_words, hidden_characters, normalize
from ._wire import Agreement, Brief
from .errors import PxpError

__all__ = [
    "ACTIONS",
    "ENTRY_MEMBERS",
    "STATES",
    "TRANSITIONS",
    "ClaimRecord",
    "Escalation",
    "Room",
    "RoomView",
    "SendResult",
    "format_time",
    "other_seat",
]

STATES = ("open", "active", "paused", "agreed", "ended")
"""Room states: seating and sealing, negotiating, waiting on a principal, done (two ways)."""

ACTIONS = (
    "join",
    "draft",
    "seal",
    "send",
    "answer",
    "brief",
    "contest",
    "release",
    "rejoin",
    "link",
)
"""Actions on a room (``Room.join`` ... ``Room.brief``; ``link`` is
``Room.issue_principal_link``)."""

ENTRY_ACTIONS: dict[str, str] = {
    "agent_joined": "join",
    "principal_link": "link",
    "card_sealed": "seal",
    "envelope": "send",
    "principal_answer": "answer",
    "seat_contested": "contest",
    "seat_released": "release",
    "seat_rejoined": "rejoin",
}
"""The action of :data:`TRANSITIONS` each ledger entry type performs (:meth:`Room.apply`).

``room_opened`` opens the room (the first entry, and only there); ``escalation``,
``agreement`` and ``turn_limit`` complete the ``send`` (or, for ``turn_limit``, the
``answer``) whose outcome the entry before them left owed."""

FOLLOW_UPS: dict[str, str] = {
    "escalation": "escalate",
    "agreement": "agree",
    "turn_limit": "turn_limit",
}
"""Ledger entry type to the outcome it completes: the entry written right after an envelope
(or an answer) whose outcome is not ``continue`` (``resumed``)."""

TRANSITIONS: dict[tuple[str, str], dict[str, str]] = {
    ("open", "join"): {"joined": "open"},
    ("active", "join"): {"joined": "active"},
    ("paused", "join"): {"joined": "paused"},
    ("open", "draft"): {"drafted": "open"},
    ("open", "seal"): {"waiting": "open", "both_sealed": "active"},
    ("active", "send"): {
        "continue": "active",
        "escalate": "paused",
        "agree": "agreed",
        "turn_limit": "ended",
    },
    ("paused", "answer"): {"resumed": "active", "turn_limit": "ended"},
    ("agreed", "brief"): {"brief": "agreed"},
    ("ended", "brief"): {"brief": "ended"},
    # a seat's invite presented again after its agent joined (ours): nothing can be agreed
    # for that seat any more; a finished room keeps its outcome and records the contest
    ("open", "contest"): {"contested": "ended"},
    ("active", "contest"): {"contested": "ended"},
    ("paused", "contest"): {"contested": "ended"},
    ("agreed", "contest"): {"contested": "agreed"},
    ("ended", "contest"): {"contested": "ended"},
    # the seat's principal frees the seat from its agent (ours), for another agent to join
    ("open", "release"): {"released": "open"},
    ("active", "release"): {"released": "active"},
    ("paused", "release"): {"released": "paused"},
    # a seat link joins a seat its agent already holds (ours): recorded, nothing else changes
    ("open", "rejoin"): {"rejoined": "open"},
    ("active", "rejoin"): {"rejoined": "active"},
    ("paused", "rejoin"): {"rejoined": "paused"},
    # a seat's principal link (re)issued (ours): recorded, nothing else changes
    ("open", "link"): {"linked": "open"},
    ("active", "link"): {"linked": "active"},
    ("paused", "link"): {"linked": "paused"},
}
"""``(state, action) -> {outcome: next state}``; any pair not listed is an invalid action."""

ENTRY_MEMBERS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "room_opened": (frozenset({"topic", "protocol"}), frozenset({"max_turns"})),
    # the reference may name the agent ``name`` and leave the mode out (spec section 8)
    "agent_joined": (frozenset({"seat"}), frozenset({"agent", "name", "mode"})),
    "principal_link": (frozenset({"seat", "agent"}), frozenset()),
    "card_sealed": (frozenset({"seat", "principal", "card_hash", "via"}), frozenset()),
    "envelope": (frozenset({"seq", "seat", "status", "envelope_hash"}), frozenset()),
    "escalation": (frozenset({"seat", "seq", "question_hash"}), frozenset()),
    "principal_answer": (
        frozenset({"seat", "speaker", "via", "answer_hash", "card_hash"}),
        frozenset({"confirms"}),
    ),
    "agreement": (frozenset({"proposal_hash", "proposed_by", "accepted_by"}), frozenset()),
    "turn_limit": (frozenset({"turns", "max_turns"}), frozenset()),
    "seat_contested": (frozenset({"seat", "agent"}), frozenset()),
    "seat_released": (frozenset({"seat", "agent"}), frozenset()),
    "seat_rejoined": (frozenset({"seat", "agent"}), frozenset()),
}
"""Ledger entry type to ``(required, optional)`` members of its data, as live play writes
them (and as the reference may: ``agent_joined`` naming its agent ``name``, without a
mode). :meth:`Room.apply` refuses an entry holding any other member (spec section 6)."""

_FIXED: dict[tuple[str, str], str] = {
    ("room_opened", "protocol"): "PXP/0",
    ("principal_answer", "speaker"): "principal",
}
"""Members whose value live play always writes the same."""

_LIVE_TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z")

MAX_CONTESTS_PER_SEAT = 4
"""A seat's invite presented again is recorded (``Room.contest``) this many times at most:
the room has ended by then, and each entry lengthens the ledger every load re-verifies."""

MAX_REJOINS_PER_SEAT = 8
"""A seat link joining its held seat again is recorded (``Room.rejoin``) this many times at
most; later joins under the holder's name change nothing."""

VIAS = ("web", "mcp")
_MODES = ("builtin", "external")
_ROOM_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def other_seat(seat: str) -> str:
    """Return the seat facing ``seat`` (``A`` <-> ``B``)."""
    return "B" if seat == "A" else "A"


def format_time(now: datetime) -> str:
    """Format an aware datetime as the reference does (``toISOString``: ms, ``Z``)."""
    if not isinstance(now, datetime) or now.tzinfo is None or now.utcoffset() is None:
        raise PxpError("time_invalid", "now must be a timezone-aware datetime")
    utc = now.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def _norm(text: str) -> str:
    return normalize(text)


def _contains(outer: str, inner: str) -> bool:
    """Whether normalised ``inner`` occurs in normalised ``outer`` as whole words."""
    return contains_words(outer, inner)


def _crossed(card: IntentCard, terms: list[str]) -> list[int]:
    """Indexes of ``card``'s must_never clauses that some term holds, alone or bundled
    with other words ("440 EUR, ship abroad" holds "ship abroad"), each index once.

    Both sides go through the shared normaliser, and a term also holds a clause when the
    two agree with every space removed ("shipabroad", "s h i p abroad"): erring towards
    the principal, a false hit only costs a question.
    """
    hits: list[int] = []
    for i, never in enumerate(card.must_never):
        squeezed = compact(never)
        if i not in hits and any(
            _contains(term, never) or (squeezed and squeezed in compact(term)) for term in terms
        ):
            hits.append(i)
    return hits


@dataclass
class _Seat:
    name: str | None = None
    token: str | None = None
    card: IntentCard | None = None
    card_hash: str | None = None
    first_card_hash: str | None = None
    sealed_via: str | None = None
    draft: IntentCard | None = None
    agent: str | None = None
    agents: list[str] = field(default_factory=list)
    mode: str | None = None
    # the principal link now valid: ledger entry number of its issue and the agent given it
    link_n: int | None = None
    link_agent: str | None = None
    # who sealed the card: {"via", "agent", "link"} (see Room.sealed_by)
    sealed_by: dict[str, Any] | None = None
    # every contest, release and rejoin of the seat (see Room.contest, release, rejoin)
    contests: list[dict[str, Any]] = field(default_factory=list)
    releases: list[dict[str, Any]] = field(default_factory=list)
    rejoins: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class ClaimRecord:
    """A claim as the room holds it: where it came from and whether it is verified."""

    id: str
    seat: str
    seq: int
    text: str
    origin: str
    ref: str | None
    backed_by: str | None = None
    speaker: str = "proxy"
    confirmed_by: str | None = None
    # a principal-speaker claim: the way its answer came (``web``: the principal's page;
    # ``mcp``: relayed by the seat's proxy, the principal's word only as far as the proxy
    # is trusted)
    via: str | None = None

    @property
    def verified(self) -> bool:
        """Stated or sourced, or an assumed claim later backed by a source or confirmed by
        a principal (its origin stays ``assumed``)."""
        return (
            self.origin != "assumed" or self.backed_by is not None or self.confirmed_by is not None
        )


@dataclass(frozen=True)
class Escalation:
    """An escalation and, once given, its principal's answer."""

    seat: str
    seq: int
    question: str
    reason: str | None
    answer: str | None = None
    via: str | None = None
    answered_at: str | None = None
    ledger_n: int | None = None
    confirms: tuple[str, ...] = ()
    acted_by: dict[str, Any] | None = None


@dataclass(frozen=True)
class SendResult:
    """What ``Room.send`` stored: the envelope (as hashed), its flags, the new state."""

    envelope: dict[str, Any]
    flags: tuple[str, ...]
    status: str
    envelope_hash: str


@dataclass(frozen=True)
class RoomView:
    """What one seat's proxy may see: its own card, the other side's name and hash only."""

    room: str
    topic: str
    seat: str
    status: str
    turn: str | None
    turns: int
    max_turns: int
    card: dict[str, Any] | None
    card_hash: str | None
    other: dict[str, Any]
    envelopes: tuple[dict[str, Any], ...]
    unreviewed: tuple[str, ...]
    other_proposal: dict[str, Any] | None
    pending: dict[str, Any] | None
    ledger_head: str

    @property
    def my_turn(self) -> bool:
        """Whether this seat may send now."""
        return self.status == "active" and self.turn == self.seat

    def to_json(self) -> dict[str, Any]:
        """Return the view as JSON."""
        return {
            "room": self.room,
            "topic": self.topic,
            "seat": self.seat,
            "status": self.status,
            "turn": self.turn,
            "turns": self.turns,
            "max_turns": self.max_turns,
            "card": copy.deepcopy(self.card),
            "card_hash": self.card_hash,
            "other": dict(self.other),
            "envelopes": copy.deepcopy(list(self.envelopes)),
            "unreviewed": list(self.unreviewed),
            "other_proposal": copy.deepcopy(self.other_proposal),
            "pending": copy.deepcopy(self.pending),
            "ledger_head": self.ledger_head,
        }


def _no_amendments(card: IntentCard) -> None:
    # Amendments are a principal's answers, and a room writes them only from an answered
    # escalation (with its ledger entry); a card that arrives carrying some would let its
    # drafter put words in the principal's mouth that the brief then cites as authority.
    if card.amendments:
        raise PxpError(
            "card_invalid",
            "a card to seal may not carry amendments; they come only from answered escalations",
            reason="amendments_at_seal",
        )


def _seat_arg(seat: Any) -> str:
    if seat not in SEATS:
        raise PxpError("room_invalid", f"seat {seat!r} does not exist; a v0 room has A and B")
    return str(seat)


def _entry(type_: str, at: str, data: dict[str, Any] | None) -> dict[str, Any]:
    return {"type": type_, "at": at, "data": data}


def _refuse(message: str, reason: str) -> PxpError:
    """An entry that does not fit its body or the room: only an imported one can."""
    return PxpError("import_invalid", message, reason=reason)


def _live_time(at: str) -> bool:
    """Whether ``at`` is a time :func:`format_time` could have written (RFC 3339, UTC,
    milliseconds, ``Z``, a real calendar day)."""
    if _LIVE_TIME.fullmatch(at) is None:  # ASCII digits only
        return False
    try:
        parsed = datetime.strptime(at, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    except ValueError:
        return False
    return format_time(parsed) == at  # what live play writes for that instant, exactly


def _check_form(type_: str, at: str, data: Mapping[str, Any]) -> None:
    """Refuse (``import_invalid``) an entry whose members live play could not have written:
    its time, a member it never writes or lacks, a fixed value (spec section 6)."""
    if not _live_time(at):
        raise _refuse(
            f"the {type_} entry's time {at[:40]!r} is not one live play writes "
            "(RFC 3339 UTC with milliseconds, as 2026-01-01T00:00:00.000Z)",
            "entry_time",
        )
    required, optional = ENTRY_MEMBERS[type_]
    extra = sorted(set(data) - required - optional)
    if extra or ("agent" in data and "name" in data):
        named = ", ".join(extra)[:80] if extra else "both agent and name"
        raise _refuse(
            f"the {type_} entry holds members live play never writes: {named}", "entry_members"
        )
    missing = sorted(required - set(data))
    if type_ == "agent_joined" and "agent" not in data and "name" not in data:
        missing.append("agent")
    if missing:
        raise _refuse(f"the {type_} entry has no {', '.join(missing)} member", "missing_member")
    for (kind, key), value in _FIXED.items():
        if kind == type_ and data[key] != value:
            raise _refuse(f"the {type_} entry's {key} is not {value!r}", "entry_value")
    if type_ == "principal_answer" and "confirms" in data and not data["confirms"]:
        raise _refuse("the principal_answer entry's confirms is empty", "entry_value")


def _check_agent(agent: Any) -> str:
    if not isinstance(agent, str) or not agent.strip() or len(agent) > 200:
        raise PxpError("agent_invalid", "the agent name must be a non-empty string")
    return agent


def _check_seat(seat: Any) -> str:
    if seat not in SEATS:
        raise PxpError("seat_invalid", f"seat {seat!r} does not exist; a v0 room has A and B")
    return str(seat)


class Room:
    """A two-seat PXP room. Create one with :meth:`open` or :meth:`from_export`."""

    def __init__(
        self,
        room_id: str,
        *,
        max_turns: int = 10,
        names: Mapping[str, str] | None = None,
        tokens: Mapping[str, str] | None = None,
        modes: Mapping[str, str] | None = None,
    ) -> None:
        """A room with no ledger yet: its first entry, ``room_opened``, opens it
        (:meth:`apply`). Use :meth:`open` for a new room, :meth:`from_export` to import one.

        ``names`` are the principals' display names known before their cards are sealed;
        ``tokens`` are seat-link secrets chosen by the caller (see :meth:`seat_for_token`);
        ``modes`` how each seat's agent will join (``builtin`` or ``external``) before any
        join says so. Bad values raise :class:`PxpUsageError` ``room_invalid``.
        """
        if not isinstance(room_id, str) or _ROOM_ID.match(room_id) is None:
            raise PxpError("room_invalid", "the room id must be 1-64 letters, digits, - or _")
        if type(max_turns) is not int or not 2 <= max_turns <= 1000:
            raise PxpError("room_invalid", "max_turns must be an integer from 2 to 1000")
        self.id = room_id
        self.topic = ""
        self.created_at = ""
        self.max_turns = max_turns
        self.status = "open"
        self.turn: str | None = None
        self.turns = 0
        self.ledger = Ledger()
        self._seats: dict[str, _Seat] = {s: _Seat() for s in SEATS}
        self._envelopes: list[dict[str, Any]] = []
        self._claims: dict[str, ClaimRecord] = {}
        # latest verdict per (reviewer seat, claim id): (verdict, seq, reason)
        self._reviews: dict[tuple[str, str], tuple[str, int, str | None]] = {}
        # seq of the latest challenge/conflict per (reviewer seat, claim id)
        self._disputes: dict[tuple[str, str], int] = {}
        self._escalations: list[Escalation] = []
        self._proposals: dict[str, dict[str, Any]] = {}
        self._agreement: dict[str, Any] | None = None
        self._flag_log: list[dict[str, Any]] = []
        # (action, outcome) an applied entry left for its follow-up entry to complete
        self._owed: tuple[str, str] | None = None
        # flags this library would have recorded that an applied envelope lacks
        self._import_notes: list[dict[str, Any]] = []
        # a room a store kept (loaded again), not an export being imported: the checks
        # added after it may have been stored (review i25b) note it instead of refusing
        self._stored = False
        for seat, name in (names or {}).items():
            if not isinstance(name, str) or not name.strip():
                raise PxpError("room_invalid", f"the name for seat {seat!r} is not a string")
            self._seats[_seat_arg(seat)].name = name
        for seat, token in (tokens or {}).items():
            if not isinstance(token, str) or len(token) < 16:
                raise PxpError("room_invalid", f"the token of seat {seat!r} is too short")
            self._seats[_seat_arg(seat)].token = token
        if self._seats["A"].token is not None and self._seats["A"].token == self._seats["B"].token:
            raise PxpError("room_invalid", "the two seats must have different tokens")
        for seat, mode in (modes or {}).items():
            if mode not in _MODES:
                raise PxpError("room_invalid", f"the mode of seat {seat!r} is not a join mode")
            self._seats[_seat_arg(seat)].mode = mode

    # ----------------------------------------------------------------- construction

    @classmethod
    def open(
        cls,
        room_id: str,
        *,
        topic: str,
        now: datetime,
        max_turns: int = 10,
        names: Mapping[str, str] | None = None,
        tokens: Mapping[str, str] | None = None,
    ) -> Room:
        """Open a room: ledger entry ``room_opened {topic, protocol: "PXP/0", max_turns}``
        (the turn limit is in the hash chain, spec section 6).

        ``now`` is a timezone-aware :class:`~datetime.datetime`; a naive one is
        :class:`PxpUsageError` ``time_invalid`` (so in every method taking ``now``).
        ``names``, ``tokens``: see :class:`Room`.
        """
        room = cls(room_id, max_turns=max_turns, names=names, tokens=tokens)
        if not isinstance(topic, str) or not topic.strip():
            raise PxpError("room_invalid", "the room topic must be a non-empty string")
        at = format_time(now)
        opened = {"topic": topic, "protocol": "PXP/0", "max_turns": room.max_turns}
        room.apply(_entry("room_opened", at, opened))
        return room

    # ----------------------------------------------------------------- table

    def _allowed(self, action: str) -> dict[str, str]:
        outcomes = TRANSITIONS.get((self.status, action))
        if outcomes is None:
            raise PxpError(
                "invalid_transition",
                f"{action} is not allowed while the room is {self.status}",
                reason=f"{self.status}_{action}",
            )
        return outcomes

    def _move(self, action: str, outcome: str) -> None:
        self.status = TRANSITIONS[(self.status, action)][outcome]

    # ----------------------------------------------------------------- seats

    def seat_for_token(self, token: Any) -> str | None:
        """Return the seat whose link token is ``token`` (constant-time compare), or ``None``."""
        found = None
        if not isinstance(token, str):
            return None
        for seat in SEATS:
            own = self._seats[seat].token
            if own is not None and hmac.compare_digest(own.encode(), token.encode()):
                found = seat
        return found

    def seat_name(self, seat: str) -> str | None:
        """The principal's display name of ``seat`` (public), if known."""
        return self._seats[_check_seat(seat)].name

    def card_hash(self, seat: str) -> str | None:
        """The current card hash of ``seat`` (public), or ``None`` before sealing."""
        return self._seats[_check_seat(seat)].card_hash

    def card(self, seat: str) -> IntentCard | None:
        """The sealed card of ``seat`` (private to that seat's principal and proxy)."""
        return self._seats[_check_seat(seat)].card

    def agent(self, seat: str) -> str | None:
        """The agent currently sitting in ``seat``."""
        return self._seats[_check_seat(seat)].agent

    def draft(self, seat: str) -> IntentCard | None:
        """The card an agent drafted for ``seat`` and its principal has not confirmed yet."""
        return self._seats[_check_seat(seat)].draft

    def mode(self, seat: str) -> str | None:
        """How ``seat``'s agent joined: ``"external"``, ``"builtin"``, or ``None`` (no join)."""
        return self._seats[_check_seat(seat)].mode

    def join(self, seat: str, *, agent: str, now: datetime, mode: str = "external") -> bool:
        """Seat ``agent`` (a proxy's name) in ``seat``: ledger ``agent_joined``.

        Joining again with the same agent changes nothing and returns ``False``; another
        agent takes the seat over (the ledger keeps who sat there). ``now`` is an aware
        datetime (naive: ``time_invalid``).
        """
        self._allowed("join")
        seat = _check_seat(seat)
        _check_agent(agent)
        if mode not in _MODES:
            raise PxpError("mode_invalid", "mode must be 'builtin' or 'external'")
        at = format_time(now)
        record = self._seats[seat]
        if record.agent == agent and record.mode == mode:
            return False
        self.apply(_entry("agent_joined", at, {"seat": seat, "agent": agent, "mode": mode}))
        return True

    def issue_principal_link(self, seat: str, *, agent: str | None, now: datetime) -> int:
        """Record that ``seat``'s principal link was (re)issued to ``agent``; return the entry n.

        Ledger ``principal_link {seat, agent}`` (``agent`` is ``null`` for the link handed to
        whoever created the room). A link issued earlier to the seat is no longer the one the
        room attributes web actions to: the caller revokes it. Any state but a finished room
        (action ``link`` of :data:`TRANSITIONS`). ``now`` is an aware datetime.
        """
        self._allowed("link")
        seat = _check_seat(seat)
        if agent is not None:
            _check_agent(agent)
        at = format_time(now)
        return self.apply(_entry("principal_link", at, {"seat": seat, "agent": agent})).n

    def _do_issue(self, seat: str, agent: str | None, n: int) -> None:
        record = self._seats[seat]
        record.link_n = n
        record.link_agent = agent

    def principal_link(self, seat: str) -> dict[str, Any] | None:
        """The principal link the room now attributes web actions of ``seat`` to:
        ``{"issued_at": ledger n, "agent": name or None}``, or ``None`` if none was issued."""
        record = self._seats[_check_seat(seat)]
        if record.link_n is None:
            return None
        return {"issued_at": record.link_n, "agent": record.link_agent}

    def _acted_by(self, seat: str, via: str | None) -> dict[str, Any]:
        """Which agent and link did an action of ``seat`` arriving ``via`` web or mcp."""
        record = self._seats[seat]
        if via == "web":
            return {
                "via": "web",
                "link": "principal",
                "link_issued_at": record.link_n,
                "agent": record.link_agent,
            }
        return {"via": via, "link": "seat", "link_issued_at": None, "agent": record.agent}

    def contest(self, seat: str, *, agent: str, now: datetime) -> None:
        """Record that ``agent`` presented ``seat``'s invite after the seat's agent had
        joined with it: ledger ``seat_contested {seat, agent}`` (ours).

        The invite is a bearer link that passed through the other side, so nobody can tell
        which of the two agents acts for the seat's principal. A room still running ends
        there (``ended``: no agreement can follow); a finished room keeps its outcome and
        records the contest all the same. The brief lists every contest under
        ``parties[seat].contests``. At most :data:`MAX_CONTESTS_PER_SEAT` per seat.
        ``now`` is an aware datetime.
        """
        self._allowed("contest")
        seat = _check_seat(seat)
        self._held(seat, "contested")
        _check_agent(agent)
        at = format_time(now)
        self.apply(_entry("seat_contested", at, {"seat": seat, "agent": agent}))

    def release(self, seat: str, *, now: datetime) -> str:
        """The seat's principal frees ``seat`` from its agent: ledger ``seat_released {seat,
        agent}`` (ours); returns the agent released.

        The next agent that joins takes the seat as a first join would (the ledger and the
        brief keep every agent that sat there). Only while the room runs. ``now`` is an
        aware datetime.
        """
        self._allowed("release")
        seat = _check_seat(seat)
        agent = self._held(seat, "released")
        at = format_time(now)
        self.apply(_entry("seat_released", at, {"seat": seat, "agent": agent}))
        return agent

    def rejoin(self, seat: str, *, agent: str, now: datetime) -> None:
        """Record that the seat's link joined again while an agent holds the seat (ours):
        ledger ``seat_rejoined {seat, agent}``, ``agent`` the name given this time.

        A seat link is a bearer link: the agent that holds it joining again and another
        agent given the same link look alike to the room. Nothing else changes; the brief
        lists every rejoin, so a seat link shared by two agents is never silent. At most
        :data:`MAX_REJOINS_PER_SEAT` per seat. ``now`` is an aware datetime.
        """
        self._allowed("rejoin")
        seat = _check_seat(seat)
        self._held(seat, "joined again")
        _check_agent(agent)
        at = format_time(now)
        self.apply(_entry("seat_rejoined", at, {"seat": seat, "agent": agent}))

    def _held(self, seat: str, what: str) -> str:
        """The agent holding ``seat``; refuse (``seat_invalid``) a seat nobody holds."""
        agent = self._seats[seat].agent
        if agent is None:
            raise PxpError("seat_invalid", f"seat {seat} has no agent that could be {what}")
        return agent

    def releases(self, seat: str) -> list[dict[str, Any]]:
        """Every release of ``seat``: ``{agent, at, n, by, sealed_by}`` (``by`` the principal
        link that then acted for the seat, ``sealed_by`` how its card had been sealed)."""
        return copy.deepcopy(self._seats[_check_seat(seat)].releases)

    def rejoins(self, seat: str) -> list[dict[str, Any]]:
        """Every rejoin of ``seat``: ``{agent, holder, at, n}``."""
        return [dict(r) for r in self._seats[_check_seat(seat)].rejoins]

    def contests(self, seat: str) -> list[dict[str, Any]]:
        """Every contest of ``seat``: ``{agent, holder, state, at, n}`` (``holder`` the agent
        then in the seat, ``state`` the room's state before, ``n`` the ledger entry)."""
        return [dict(c) for c in self._seats[_check_seat(seat)].contests]

    def draft_card(self, seat: str, card: IntentCard | Mapping[str, Any]) -> IntentCard:
        """Store a card an agent drafted for ``seat``; it binds nothing until sealed."""
        self._allowed("draft")
        seat = _check_seat(seat)
        if self._seats[seat].card is not None:
            raise PxpError("card_sealed", f"seat {seat} has already sealed its card")
        parsed = card if isinstance(card, IntentCard) else seal_card(card).card
        _no_amendments(parsed)
        self._seats[seat].draft = parsed
        self._move("draft", "drafted")
        return parsed

    def seal(
        self,
        seat: str,
        card: IntentCard | Mapping[str, Any] | None = None,
        *,
        now: datetime,
        via: str = "web",
    ) -> SealedCard:
        """Seal the card the principal confirmed (``None``: the stored draft).

        Ledger ``card_sealed {seat, principal, card_hash, via}``; when both seats are
        sealed the room becomes active and seat A has the first turn. ``now`` is an aware
        datetime.
        """
        self._allowed("seal")
        seat = _check_seat(seat)
        if via not in VIAS:
            raise PxpError("via_invalid", "via must be 'web' or 'mcp'")
        at = format_time(now)
        record = self._seats[seat]
        if record.card is not None:
            raise PxpError("card_sealed", f"seat {seat} has already sealed its card")
        if card is None:
            if record.draft is None:
                raise PxpError("card_missing", f"seat {seat} has no drafted card to confirm")
            card = record.draft
        sealed = seal_card(card)
        data = {
            "seat": seat,
            "principal": sealed.card.principal.name,
            "card_hash": sealed.hash,
            "via": via,
        }
        self.apply(_entry("card_sealed", at, data), sealed.card)
        return sealed

    # ----------------------------------------------------------------- send

    def send(self, seat: str, draft: Mapping[str, Any], *, now: datetime) -> SendResult:
        """Send one envelope from ``seat``'s proxy: enforce, store, hash, log.

        ``draft`` holds the ``send_envelope`` fields (see :func:`validate_draft`). The room
        fills ``pxp``, ``room``, ``seq``, ``from``, ``intent_hash`` and claim ids, applies
        every enforcement rule (recording each rewrite in ``protocol_flags``) and returns
        the stored envelope. Ledger ``envelope``, then ``escalation``, ``agreement`` or
        ``turn_limit`` as the outcome requires. ``now`` is an aware datetime.
        """
        self._allowed("send")
        seat = _check_seat(seat)
        if seat != self.turn:
            raise PxpError("not_your_turn", f"it is seat {self.turn}'s turn, not seat {seat}'s")
        at = format_time(now)
        envelope, flags = self._enforce(seat, validate_draft(draft))
        digest = envelope_hash(envelope)
        data = {
            "seq": envelope["seq"],
            "seat": seat,
            "status": envelope["status"],
            "envelope_hash": digest,
        }
        self.apply(_entry("envelope", at, data), _Built(envelope))
        follow_up = self.owed
        if follow_up is not None:
            self.apply(_entry(follow_up, at, self.owed_data()))
        return SendResult(copy.deepcopy(envelope), tuple(flags), self.status, digest)

    def _cited_assumption(
        self, ref: str, seat: str, seq: int, local: Mapping[str, bool]
    ) -> str | None:
        """The first claim id of ``seat`` in ``ref`` that is an unbacked assumption.

        ``local`` holds the earlier claims of the envelope being built (id to verified); a
        claim of that envelope not yet built (the citing claim itself or a later one)
        backs nothing either.
        """
        for token in claim_tokens(ref):
            parsed = parse_claim_id(token)
            if parsed is None or parsed[0] != seat:
                continue
            if parsed[1] == seq:
                if not local.get(token, False):
                    return token
                continue
            cited = self._claims.get(token)
            if cited is not None and not cited.verified:
                return token
        return None

    def _enforce(self, seat: str, draft: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
        """Build the stored envelope from a validated draft; nothing is changed here.

        Claims (the claim rules, then backing), reviews, the proposal and the agreement, in
        that order (spec §5); each rewrite appends its flag to the list returned."""
        record = self._seats[seat]
        assert record.card is not None
        assert record.card_hash is not None
        seq = len(self._envelopes) + 1
        flags: list[str] = []
        claims = self._enforce_claims(seat, seq, draft["claims"], flags)
        reviews = self._enforce_reviews(seat, draft["reviews"], flags)
        proposal = self._enforce_proposal(seat, seq, draft.get("proposal"), flags)
        status = draft["status"]
        accepts: dict[str, Any] | None = None
        if status == "agree":
            status, accepts = self._check_agree(seat, draft, reviews, proposal, flags)
        envelope: dict[str, Any] = {
            "pxp": "0",
            "room": self.id,
            "seq": seq,
            "from": {"seat": seat, "principal": record.name or "", "speaker": "proxy"},
            "intent_hash": record.card_hash,
            "message": draft["message"],
            "claims": claims,
            "reviews": reviews,
        }
        if proposal is not None:
            envelope["proposal"] = proposal
            envelope["proposal_hash"] = proposal_hash(proposal["terms"])
        envelope["status"] = status
        if "escalation" in draft:
            envelope["escalation"] = dict(draft["escalation"])
        if accepts is not None:
            envelope["accepts"] = accepts
        if flags:
            envelope["protocol_flags"] = list(flags)
        return envelope, flags

    def _enforce_claims(
        self, seat: str, seq: int, drafted: list[dict[str, Any]], flags: list[str]
    ) -> list[dict[str, Any]]:
        """The claims as stored: each walks :data:`CLAIM_RULES`, then its backing."""
        other = other_seat(seat)
        card = self._seats[seat].card
        assert card is not None
        assumptions: dict[str, str] = {}
        for rec in self._claims.values():
            if not rec.verified:
                assumptions.setdefault(_norm(rec.text), rec.id)
        claims: list[dict[str, Any]] = []
        local: dict[str, bool] = {}
        for index, raw in enumerate(drafted, start=1):
            cid = claim_id(seat, seq, index)
            check = ClaimCheck(
                cid,
                raw["text"],
                raw["origin"],
                raw.get("ref"),
                card,
                other,
                self._seats[other].name,
                lambda r: self._cited_assumption(r, seat, seq, local),
                assumptions,
            )
            origin = raw["origin"]
            for name, holds in CLAIM_RULES:
                values = holds(check)
                if values is not None:
                    flags.append(flag(name, **values))
                    origin = "assumed"
                    break
            stored: dict[str, Any] = {"id": cid, "text": raw["text"], "origin": origin}
            if check.ref is not None:
                stored["ref"] = check.ref
            if raw.get("backs") is not None:
                stored["backs"] = self._check_backs(seat, index, raw["backs"])
                if origin != "sourced":
                    flags.append(flag("backs_without_source", claim=cid))
            claims.append(stored)
            local[cid] = origin != "assumed"
            if origin == "assumed":
                assumptions.setdefault(_norm(raw["text"]), cid)
        return claims

    def _check_backs(self, seat: str, index: int, backs: str) -> str:
        target = self._claims.get(backs)
        if target is None or target.seat != seat:
            raise PxpError(
                "envelope_rejected",
                f"claim {index} backs {backs!r}, not an earlier claim of seat {seat}",
                reason="backs_unknown",
            )
        if target.origin != "assumed":
            raise PxpError(
                "envelope_rejected",
                f"claim {index} backs {backs}, which is not an assumed claim",
                reason="backs_not_assumed",
            )
        return backs

    def _enforce_reviews(
        self, seat: str, drafted: list[dict[str, Any]], flags: list[str]
    ) -> list[dict[str, Any]]:
        """The reviews as stored: each names a claim of the other side; every claim of the
        other side left unreviewed is recorded as challenged."""
        reviews: list[dict[str, Any]] = []
        reviewed: set[str] = set()
        for review in drafted:
            target = self._claims.get(review["claim_id"])
            if target is None:
                raise PxpError(
                    "envelope_rejected",
                    f"the review names claim {review['claim_id']}, which does not exist",
                    reason="review_unknown_claim",
                )
            if target.seat != other_seat(seat):
                raise PxpError(
                    "envelope_rejected",
                    f"the review names claim {review['claim_id']}, a claim of this seat",
                    reason="review_own_claim",
                )
            reviews.append(dict(review))
            reviewed.add(review["claim_id"])
        for cid in self.unreviewed(seat):
            if cid not in reviewed:
                flags.append(flag("unreviewed_claim", claim=cid))
                reviews.append({"claim_id": cid, "verdict": "challenge", "reason": "not reviewed"})
        return reviews

    def _enforce_proposal(
        self, seat: str, seq: int, proposal: dict[str, Any] | None, flags: list[str]
    ) -> dict[str, Any] | None:
        """The proposal as stored, or ``None`` when a term hides characters or crosses one
        of the seat's own must_nevers."""
        if proposal is None:
            return None
        resolved: list[str] = []
        for dep in proposal.get("depends_on", []):
            if dep.startswith("new"):
                dep = claim_id(seat, seq, int(dep[3:]))
            elif dep not in self._claims:
                raise PxpError(
                    "envelope_rejected",
                    f"the proposal depends on claim {dep}, which does not exist",
                    reason="depends_on_unknown",
                )
            if dep not in resolved:
                resolved.append(dep)
        card = self._seats[seat].card
        assert card is not None
        hidden = [t for t in proposal["terms"] if hidden_characters(t)]
        if hidden:
            # a term holding characters a page shows as nothing reads differently from what
            # binds; the proposal is not recorded
            flags.append(flag("term_hidden_characters", text=js_prefix(hidden[0], 60)))
            return None
        crossing = _crossed(card, proposal["terms"])
        if crossing:
            # a proposal binds its proxy: offering a must_never needs the principal
            for hit in crossing:
                flags.append(flag("propose_must_never", clause=f"must_never[{hit}]"))
            return None
        return {"terms": list(proposal["terms"]), "depends_on": resolved}

    def _check_agree(
        self,
        seat: str,
        draft: dict[str, Any],
        reviews: list[dict[str, Any]],
        proposal: dict[str, Any] | None,
        flags: list[str],
    ) -> tuple[str, dict[str, Any] | None]:
        before = len(flags)
        other = other_seat(seat)
        theirs = self._proposals.get(other)
        if proposal is not None:
            flags.append(flag("agree_with_counter_proposal"))
        if any(r["verdict"] == "conflict" for r in reviews):
            flags.append(flag("agree_with_conflict"))
        if theirs is None:
            flags.append(flag("agree_without_proposal"))
        else:
            named = draft.get("accepts", {}).get("proposal_hash")
            if named is not None and named != theirs["proposal_hash"]:
                flags.append(flag("agree_wrong_hash"))
            disputing = {
                r["claim_id"] for r in reviews if r["verdict"] in ("challenge", "conflict")
            }
            blocking = [
                dep
                for dep in theirs.get("depends_on", [])
                if dep in disputing or self.disputed(seat, dep)
            ]
            if blocking:
                flags.append(flag("agree_disputed_dependency", claims=", ".join(blocking)))
            card = self._seats[seat].card
            assert card is not None
            for hit in _crossed(card, theirs["terms"]):
                flags.append(flag("agree_must_never", clause=f"must_never[{hit}]"))
        if len(flags) > before or theirs is None:
            return "continue", None
        return "agree", {"seq": theirs["seq"], "proposal_hash": theirs["proposal_hash"]}

    def _check_agreeing(self, env: Mapping[str, Any]) -> None:
        """An applied ``agree`` must be one enforcement lets through (ours and the
        reference's alike): it accepts the other side's latest proposal by its hash, carries
        no conflict review, and that proposal depends on no claim this seat disputed without
        a principal's answer since."""
        seat = env["from"]["seat"]
        theirs = self._proposals.get(other_seat(seat))
        accepts = env["accepts"]
        if (
            theirs is None
            or accepts.get("proposal_hash") != theirs["proposal_hash"]
            or accepts.get("seq", theirs["seq"]) != theirs["seq"]
        ):
            raise _refuse(
                "the envelope accepts a proposal that is not the other side's latest", "agreement"
            )
        if any(r.get("verdict") == "conflict" for r in env["reviews"]):
            raise _refuse("the envelope agrees while raising a conflict", "agreement")
        disputing = {r.get("claim_id") for r in env["reviews"] if r.get("verdict") != "accept"}
        for dep in theirs["depends_on"]:
            if dep in disputing or self.disputed(seat, dep):
                raise _refuse(
                    f"the accepted proposal depends on {dep}, which this seat disputed",
                    "agreement_disputed",
                )

    def _note_stricter(self, env: Mapping[str, Any]) -> tuple[frozenset[str], bool]:
        """Run this library's enforcement on the draft behind an applied envelope and note
        every flag it would have recorded that the envelope lacks (a looser server's room:
        a laundered stated claim, a term with a hidden character). The notes go to the
        brief as ``Import: would be flagged here: ...``. An envelope this room's own
        enforcement built carries every flag, so a live room has no notes.

        Flags are compared as texts, so the effects are compared too (review i25 #3, #4): a
        claim enforcement stores ``assumed`` is returned, for the room to hold it
        ``assumed`` whatever the envelope says, and a status or claim origin that differs
        from enforcement's is noted even when the envelope kept the flag's sentence.

        One gate, one answer (review i25b #1): an ``agree`` that enforcement would not
        record as ``agree`` (a must_never of the accepting card, a counter-proposal, a
        dependency left unreviewed: agreement withheld live) is refused
        ``agreement_withheld``, and a proposal enforcement would not record is not held
        (the second member returned is ``False``), so nothing can be agreed to it."""
        seat, seq = env["from"]["seat"], env["seq"]
        stored_flags = set(env.get("protocol_flags") or ())
        notes: list[str] = []
        try:
            ours, flags = self._enforce(seat, validate_draft(_draft_of(env)))
        except PxpError as exc:
            notes.append(f"Import: would be refused here: {exc}")
            ours, flags = None, []
        if env["status"] == "agree" and (ours is None or ours["status"] != "agree"):
            why = notes[0] if ours is None else (flags[-1] if flags else "")
            withheld = f"envelope {seq} agrees where live play withholds the agreement: {why}"
            if not self._stored:
                raise _refuse(withheld, "agreement_withheld")
            self._note_stored(seat, withheld)
        notes += [f"Import: would be flagged here: {t}" for t in flags if t not in stored_flags]
        downgraded: set[str] = set()
        hold_proposal = True
        if ours is not None:
            for mine, theirs in zip(ours["claims"], env["claims"], strict=False):
                if mine["origin"] == "assumed" and theirs.get("origin") != "assumed":
                    downgraded.add(theirs["id"])
                    notes.append(
                        f"Import: claim {theirs['id']} would be stored assumed here, and is held "
                        "assumed."
                    )
            if "proposal" in env and "proposal" not in ours and not self._stored:
                hold_proposal = False
                notes.append(
                    f"Import: the proposal of envelope {seq} would not be recorded here, and is "
                    "not held."
                )
            flagged = any(n.startswith("Import: would be flagged here") for n in notes)
            if ours["status"] != env["status"] and not flagged:  # else a flag note says why
                notes.append(
                    f"Import: this envelope would be recorded as {ours['status']} here, not "
                    f"{env['status']}."
                )
        self._import_notes += [{"seq": seq, "seat": seat, "flag": n} for n in notes]
        return frozenset(downgraded), hold_proposal

    def _record_claim(
        self, claim: Mapping[str, Any], seat: str, seq: int, downgraded: frozenset[str]
    ) -> None:
        """Record a stored claim; a sourced claim backing an assumed one verifies it."""
        origin = "assumed" if claim["id"] in downgraded else claim["origin"]
        self._claims[claim["id"]] = ClaimRecord(
            claim["id"], seat, seq, claim["text"], origin, claim.get("ref")
        )
        backs = claim.get("backs")
        if backs is None or origin != "sourced":
            return
        target = self._claims.get(backs)
        if target is not None and target.seat == seat and target.backed_by is None:
            self._claims[backs] = ClaimRecord(
                target.id,
                target.seat,
                target.seq,
                target.text,
                target.origin,
                target.ref,
                claim["id"],
                target.speaker,
                target.confirmed_by,
            )

    def _apply_envelope(
        self,
        envelope: dict[str, Any],
        *,
        ledger_n: int,
        downgraded: frozenset[str] = frozenset(),
        hold_proposal: bool = True,
    ) -> str:
        """Record a stored envelope's effects; return the send outcome. No ledger writes."""
        seat = envelope["from"]["seat"]
        other = other_seat(seat)
        seq = envelope["seq"]
        self._envelopes.append(envelope)
        for claim in envelope["claims"]:
            self._record_claim(claim, seat, seq, downgraded)
        for review in envelope["reviews"]:
            key = (seat, review["claim_id"])
            self._reviews[key] = (review["verdict"], seq, review.get("reason") or None)
            if review["verdict"] in ("challenge", "conflict"):
                self._disputes[key] = seq
        for text in envelope.get("protocol_flags", []):
            self._flag_log.append({"seq": seq, "seat": seat, "flag": text})
        proposal = envelope.get("proposal")
        if proposal is not None and hold_proposal:
            self._proposals[seat] = {
                "seq": seq,
                "terms": list(proposal["terms"]),
                "depends_on": list(proposal.get("depends_on", [])),
                "proposal_hash": proposal_hash(proposal["terms"]),
            }
        self.turns += 1
        status = envelope["status"]
        if status == "escalate":
            self._escalations.append(
                Escalation(
                    seat,
                    seq,
                    envelope["escalation"]["question"],
                    envelope["escalation"].get("reason"),
                )
            )
            return "escalate"
        if status == "agree":
            theirs = self._proposals.get(other)
            accepted = envelope["accepts"]
            self._agreement = {
                "proposal_hash": accepted["proposal_hash"],
                "proposed_by": other,
                "accepted_by": seat,
                "proposal_seq": accepted.get("seq", theirs["seq"] if theirs else None),
                "accept_seq": seq,
                "terms": list(theirs["terms"]) if theirs else [],
                "depends_on": list(theirs["depends_on"]) if theirs else [],
            }
            self.turn = None
            return "agree"
        self.turn = other
        if self.turns >= self.max_turns:
            self.turn = None
            return "turn_limit"
        return "continue"

    # ----------------------------------------------------------------- answer

    def answer(
        self,
        seat: str,
        answer: str,
        *,
        now: datetime,
        via: str = "web",
        confirms: tuple[str, ...] | list[str] = (),
    ) -> str:
        """Record the principal's answer to ``seat``'s pending escalation; return the new hash.

        The answer is sealed into the card as an amendment (``{question, answer, at}``),
        the card is re-hashed, and ledger ``principal_answer {seat, speaker, via,
        answer_hash, card_hash}`` is written (plus ``confirms`` when not empty). Later
        envelopes carry the new intent hash. The answer is also recorded as a ``stated``
        claim whose speaker is the principal (id ``<seat><seq>.0``, ref
        ``amendments[i]``). ``confirms`` names unverified claims the principal confirms:
        each is marked verified, its origin unchanged. ``now`` is an aware datetime.
        """
        self._allowed("answer")
        seat = _check_seat(seat)
        if via not in VIAS:
            raise PxpError("via_invalid", "via must be 'web' or 'mcp'")
        pending = self._escalations[-1]
        if pending.seat != seat:
            raise PxpError(
                "not_your_escalation",
                f"the pending escalation is seat {pending.seat}'s, not seat {seat}'s",
            )
        if not isinstance(answer, str) or not answer.strip():
            raise PxpError("answer_invalid", "the principal's answer must be a non-empty string")
        confirmed = self._check_confirms(confirms)
        at = format_time(now)
        card = self._seats[seat].card
        assert card is not None
        amended = card.amend(pending.question, answer, at)
        data: dict[str, Any] = {
            "seat": seat,
            "speaker": "principal",
            "via": via,
            "answer_hash": sha256_hex(answer),
            "card_hash": amended.hash,
        }
        if confirmed:
            data["confirms"] = list(confirmed)
        self.apply(_entry("principal_answer", at, data), (amended.amendments or ())[-1])
        follow_up = self.owed
        if follow_up is not None:
            self.apply(_entry(follow_up, at, self.owed_data()))
        return amended.hash

    def _check_confirms(self, confirms: Any) -> tuple[str, ...]:
        if isinstance(confirms, str) or not isinstance(confirms, tuple | list):
            raise PxpError("answer_invalid", "confirms must be a list of claim ids")
        out: list[str] = []
        for cid in confirms:
            rec = self._claims.get(cid) if isinstance(cid, str) else None
            if rec is None:
                raise PxpError(
                    "answer_invalid",
                    f"the answer confirms {str(cid)[:40]!r}, which is not a claim of this room",
                )
            if rec.verified:
                raise PxpError(
                    "answer_invalid", f"the answer confirms {cid}, which is already verified"
                )
            if cid not in out:
                out.append(cid)
        return tuple(out)

    # ----------------------------------------------------------------- apply

    def apply(self, entry: LedgerEntry | Mapping[str, Any], body: Any = None) -> LedgerEntry:
        """Apply one ledger entry to the room, append it, and return it as appended.

        Every change a room's ledger records goes through here: the live actions
        (:meth:`join`, :meth:`seal`, :meth:`send`, :meth:`answer`, ...) build their entry and
        apply it, and :meth:`from_export` applies an export's entries one by one, so an
        imported history is held to the rules live play is. The entry's action
        (:data:`ENTRY_ACTIONS`) must be allowed in the room's state by :data:`TRANSITIONS`,
        which alone decides the next state; ``escalation``, ``agreement`` and ``turn_limit``
        (:data:`FOLLOW_UPS`) only complete the outcome the entry before them left owed
        (:attr:`owed`).

        ``entry`` is ``{type, at, data}`` or a :class:`LedgerEntry`; an exported entry's
        ``n``, ``prev`` and ``hash``, when given, must be those the room computes. ``body``
        is what the entry's hashes cover: the :class:`IntentCard` of ``card_sealed`` (as
        sealed, without amendments), the stored envelope of ``envelope``, the
        :class:`Amendment` of ``principal_answer``; other entries take none.

        A refusal carries the code live play gives for the same act (``invalid_transition``,
        ``not_your_turn``, ``not_your_escalation``, ``card_sealed``, ``seat_invalid``,
        ``agent_invalid``, ``card_invalid``, ``answer_invalid``); an entry that disagrees with
        its body or the room's record (a hash, a seq, an agent, an entry out of order), or
        whose form live play never writes (a time not from :func:`format_time`, a member
        :data:`ENTRY_MEMBERS` does not list, an ``agree`` enforcement would withhold), is
        ``import_invalid`` with a ``reason``. Both are
        :class:`PxpProtocolError`, and a refused entry changes nothing.
        """
        type_, at, data = _parse_entry(entry)
        try:  # the room owns what it appends: a caller's object changed later changes nothing
            data = json.loads(json.dumps(data, allow_nan=False))
        except (TypeError, ValueError, RecursionError):
            raise _refuse(
                f"the {type_} entry's data is not plain JSON", "malformed_entry"
            ) from None
        built = self.ledger.next_entry(type_, at, data)  # refuses data JSON cannot carry
        if isinstance(entry, LedgerEntry):
            given: Mapping[str, Any] = {"n": entry.n, "prev": entry.prev, "hash": entry.hash}
        else:
            given = entry
        for key in ("n", "prev", "hash"):
            if key in given and given[key] != getattr(built, key):
                raise _refuse(f"the {type_} entry's {key} does not chain to this ledger", "chain")
        if type_ == "room_opened" or not self.ledger:
            self._apply_opened(type_, at, data)
        elif type_ in FOLLOW_UPS:
            self._apply_follow_up(type_, at, data)
        else:
            self._apply_action(type_, at, data, body, built.n)
        self.ledger._push_built(built)  # built just above by next_entry, for this head
        return built

    @property
    def owed(self) -> str | None:
        """The entry type the last applied entry requires next (``escalation``,
        ``agreement`` or ``turn_limit``), or ``None``. Live actions write it at once; an
        import that ends owing ``agreement`` or ``turn_limit`` completes it (spec §8)."""
        if self._owed is None:
            return None
        return next(t for t, outcome in FOLLOW_UPS.items() if outcome == self._owed[1])

    def _apply_opened(self, type_: str, at: str, data: Mapping[str, Any]) -> None:
        if self.ledger:
            raise _refuse("room_opened is only the first entry of a ledger", "order")
        if type_ != "room_opened":
            raise _refuse("the ledger does not start with room_opened", "first_entry")
        self._form(type_, at, data)
        topic = data["topic"]
        if not isinstance(topic, str) or not topic.strip():
            raise _refuse("the room_opened entry's topic is not a non-empty string", "wrong_type")
        # ours: the turn limit is bound by the chain; the reference's entry does not hold it
        bound = data.get("max_turns", self.max_turns)
        if type(bound) is not int or not 2 <= bound <= 1000:
            raise _refuse("the room_opened entry's max_turns is not from 2 to 1000", "max_turns")
        if bound != self.max_turns:
            raise _refuse(
                f"the room's turn limit {self.max_turns} is not the {bound} its ledger opened with",
                "max_turns",
            )
        self.topic, self.created_at = topic, at

    def _form(self, type_: str, at: str, data: Mapping[str, Any]) -> None:
        """:func:`_check_form`; for a stored room, a note instead of a refusal."""
        try:
            _check_form(type_, at, data)
        except PxpError as exc:
            if not self._stored:
                raise
            self._note_stored(data.get("seat"), exc.message)

    def _note_stored(self, seat: Any, what: str) -> None:
        """Note, on a room a store kept, what a check added since it was stored refuses."""
        self._import_notes.append(
            {
                "seq": len(self._envelopes),
                "seat": seat if seat in SEATS else "A",
                "flag": f"Import: stored before this was refused: {what}",
            }
        )

    def _apply_follow_up(self, type_: str, at: str, data: Mapping[str, Any]) -> None:
        owed = self._owed
        if owed is None or owed[1] != FOLLOW_UPS[type_]:
            raise _refuse(f"the {type_} entry follows no event that requires it", "order")
        self._form(type_, at, data)
        if type_ == "escalation":
            pending = self._escalations[-1]
            if data.get("seq") != pending.seq or data.get("seat") != pending.seat:
                raise _refuse("the escalation entry names another envelope", "escalation")
            if data.get("question_hash") != sha256_hex(pending.question):
                raise _refuse("the question does not hash to question_hash", "question_hash")
        elif type_ == "agreement":
            agreement = self._agreement
            assert agreement is not None
            proposer, accepter = agreement["proposed_by"], agreement["accepted_by"]
            # a seat, or (as another implementation may write it) that seat's principal name
            if (
                data.get("proposal_hash") != agreement["proposal_hash"]
                or data.get("proposed_by") not in (proposer, self._seats[proposer].name)
                or data.get("accepted_by") not in (accepter, self._seats[accepter].name)
            ):
                raise _refuse(
                    "the agreement entry disagrees with the agreeing envelope", "agreement"
                )
        elif dict(data) != self.owed_data():
            raise _refuse("the turn_limit entry disagrees with the room's turns", "turn_limit")
        self._owed = None
        self._move(*owed)

    def owed_data(self) -> dict[str, Any] | None:
        """The data of the :attr:`owed` entry as live play writes it (``None``: none owed)."""
        type_ = self.owed
        if type_ is None:
            return None
        if type_ == "escalation":
            pending = self._escalations[-1]
            return {
                "seat": pending.seat,
                "seq": pending.seq,
                "question_hash": sha256_hex(pending.question),
            }
        if type_ == "agreement":
            assert self._agreement is not None
            return {k: self._agreement[k] for k in ("proposal_hash", "proposed_by", "accepted_by")}
        return {"turns": self.turns, "max_turns": self.max_turns}

    def _apply_action(
        self, type_: str, at: str, data: Mapping[str, Any], body: Any, n: int
    ) -> None:
        action = ENTRY_ACTIONS.get(type_)
        if action is None:
            raise _refuse(
                f"a {type_!r} entry is of a type this implementation does not know", "entry_type"
            )
        if self._owed is not None:
            raise _refuse(f"a {type_} entry comes before the {self.owed} entry owed", "order")
        outcomes = self._allowed(action)
        self._form(type_, at, data)
        outcome = _APPLIERS[action](self, data, body, at, n)
        if (action, outcome) in _OWED:
            self._owed = (action, outcome)
        else:
            self.status = outcomes[outcome]

    def _on_join(self, data: Mapping[str, Any], body: Any, at: str, n: int) -> str:
        seat = _check_seat(data.get("seat"))
        agent = _check_agent(data.get("agent", data.get("name")))  # the reference: ``name``
        mode = data.get("mode")
        if mode is not None and mode not in _MODES:
            raise _refuse(f"the join names the mode {str(mode)[:20]!r}", "mode")
        record = self._seats[seat]
        if record.agent == agent and record.mode == mode:
            raise _refuse(f"seat {seat} is joined again by the agent that holds it", "order")
        record.agent, record.mode = agent, mode
        record.agents.append(agent)
        return "joined"

    def _on_link(self, data: Mapping[str, Any], body: Any, at: str, n: int) -> str:
        seat = _check_seat(data.get("seat"))
        agent = data.get("agent")
        self._do_issue(seat, None if agent is None else _check_agent(agent), n)
        return "linked"

    def _on_seal(self, data: Mapping[str, Any], body: Any, at: str, n: int) -> str:
        seat = _check_seat(data.get("seat"))
        record = self._seats[seat]
        if record.card is not None:
            raise PxpError("card_sealed", f"seat {seat} has already sealed its card")
        via = data.get("via")
        if via not in VIAS:
            raise _refuse(f"seat {seat}'s card was sealed via {str(via)[:20]!r}", "via")
        if not isinstance(body, IntentCard):
            raise _refuse(f"there is no card for seat {seat}", "card_missing")
        _no_amendments(body)
        digest = body.hash
        if digest != data.get("card_hash"):
            raise _refuse(f"seat {seat}'s card does not hash to the sealed hash", "card_hash")
        if data.get("principal") != body.principal.name:
            raise _refuse(f"seat {seat}'s card names another principal", "card_principal")
        record.card = body
        record.card_hash = record.first_card_hash = digest
        record.sealed_via = via
        record.sealed_by = self._acted_by(seat, via)
        record.name = body.principal.name
        record.draft = None
        if all(self._seats[s].card is not None for s in SEATS):
            self.turn = "A"
            return "both_sealed"
        return "waiting"

    def _on_send(self, data: Mapping[str, Any], body: Any, at: str, n: int) -> str:
        seat = _check_seat(data.get("seat"))
        if seat != self.turn:
            raise PxpError("not_your_turn", f"it is seat {self.turn}'s turn, not seat {seat}'s")
        seq = data.get("seq")
        if type(seq) is not int or seq != len(self._envelopes) + 1:
            raise _refuse(f"the envelope entry names seq {seq!r} out of order", "order")
        if isinstance(body, _Built):
            # built by this room's enforcement for this very entry (Room.send): its shape,
            # hash and flags hold by construction; the room checks below still run
            stored: Mapping[str, Any] = body.envelope
        else:
            stored = self._checked_body(seq, body, data)
        if (
            stored["from"]["seat"] != seat
            or stored["status"] != data.get("status")
            or stored["seq"] != seq
        ):
            raise _refuse(f"the entry disagrees with envelope {seq}", "envelope")
        if stored["room"] != self.id:
            raise _refuse(f"envelope {seq} belongs to room {stored['room']!r}", "envelope_room")
        if stored["intent_hash"] != self._seats[seat].card_hash:
            raise _refuse(f"envelope {seq} names a card hash its seat did not hold", "intent")
        if stored["status"] == "agree":
            self._check_agreeing(stored)
        if isinstance(body, _Built):
            return self._apply_envelope(body.envelope, ledger_n=n)
        downgraded, hold = self._note_stricter(stored)
        return self._apply_envelope(
            copy.deepcopy(dict(stored)), ledger_n=n, downgraded=downgraded, hold_proposal=hold
        )

    def _checked_body(self, seq: int, body: Any, data: Mapping[str, Any]) -> Mapping[str, Any]:
        """An envelope given from outside: its shape, and the hash the entry recorded."""
        if body is None:
            raise _refuse(f"there is no envelope {seq}", "envelope_missing")
        try:
            stored = validate_envelope(body, strict=False)
        except PxpError as exc:
            raise _refuse(exc.message, "envelope") from None
        if envelope_hash(stored) != data.get("envelope_hash"):
            raise _refuse(f"envelope {seq} does not hash to the recorded hash", "envelope_hash")
        return stored

    def _on_answer(self, data: Mapping[str, Any], body: Any, at: str, n: int) -> str:
        seat = _check_seat(data.get("seat"))
        pending = self._escalations[-1]
        if pending.seat != seat:
            raise PxpError(
                "not_your_escalation",
                f"the pending escalation is seat {pending.seat}'s, not seat {seat}'s",
            )
        via = data.get("via")
        if via not in VIAS:
            raise _refuse(f"the answer came via {str(via)[:20]!r}", "via")
        if not isinstance(body, Amendment):
            raise _refuse(f"seat {seat}'s card has no amendment for this answer", "card")
        if body.question != pending.question:
            raise _refuse("the amendment answers another question", "card")
        if not isinstance(body.answer, str) or not body.answer.strip():
            raise PxpError("answer_invalid", "the principal's answer must be a non-empty string")
        confirms = self._check_confirms(data.get("confirms", []))
        card = self._seats[seat].card
        assert card is not None
        amended = _replace_amendments(card, (*(card.amendments or ()), body))
        if amended.hash != data.get("card_hash"):
            raise _refuse("the amended card does not hash to card_hash", "card_hash")
        if sha256_hex(body.answer) != data.get("answer_hash"):
            raise _refuse("the answer does not hash to answer_hash", "answer_hash")
        self._do_answer(seat, amended, body.answer, via, at, n, confirms)
        if self.turns >= self.max_turns:
            self.turn = None
            return "turn_limit"
        return "resumed"

    def _on_contest(self, data: Mapping[str, Any], body: Any, at: str, n: int) -> str:
        seat, agent = self._seat_event(data, "contested")
        record = self._seats[seat]
        if len(record.contests) >= MAX_CONTESTS_PER_SEAT:
            raise PxpError(
                "invalid_transition",
                f"seat {seat} was contested as often as it may be",
                reason="contest_limit",
            )
        record.contests.append(
            {"agent": agent, "holder": record.agent, "state": self.status, "at": at, "n": n}
        )
        if TRANSITIONS[(self.status, "contest")]["contested"] == "ended":
            self.turn = None
        return "contested"

    def _on_release(self, data: Mapping[str, Any], body: Any, at: str, n: int) -> str:
        seat, agent = self._seat_event(data, "released")
        record = self._seats[seat]
        if agent != record.agent:
            raise _refuse(f"the release names an agent that does not hold seat {seat}", "order")
        record.releases.append(
            {
                "agent": record.agent,
                "at": at,
                "n": n,
                # who released: the page link the room then attributed web actions to
                "by": self.principal_link(seat),
                # the card as it stood: sealed before the release, and by whom
                "sealed_by": dict(record.sealed_by) if record.sealed_by is not None else None,
            }
        )
        record.agent = None
        return "released"

    def _on_rejoin(self, data: Mapping[str, Any], body: Any, at: str, n: int) -> str:
        seat, agent = self._seat_event(data, "joined again")
        record = self._seats[seat]
        if len(record.rejoins) >= MAX_REJOINS_PER_SEAT:
            raise PxpError(
                "invalid_transition",
                f"seat {seat} was joined again as often as it may be",
                reason="rejoin_limit",
            )
        record.rejoins.append({"agent": agent, "holder": record.agent, "at": at, "n": n})
        return "rejoined"

    def _seat_event(self, data: Mapping[str, Any], what: str) -> tuple[str, str]:
        """A seat entry's seat (held by an agent) and agent (its members: ENTRY_MEMBERS)."""
        seat = _check_seat(data.get("seat"))
        self._held(seat, what)
        return seat, _check_agent(data.get("agent"))

    def _do_answer(
        self,
        seat: str,
        amended: IntentCard,
        answer: str,
        via: str,
        at: str,
        ledger_n: int,
        confirms: tuple[str, ...] = (),
    ) -> None:
        record = self._seats[seat]
        record.card = amended
        record.card_hash = amended.hash
        pending = self._escalations[-1]
        self._escalations[-1] = Escalation(
            pending.seat,
            pending.seq,
            pending.question,
            pending.reason,
            answer,
            via,
            at,
            ledger_n,
            confirms,
            self._acted_by(seat, via),
        )
        for cid in confirms:
            rec = self._claims[cid]
            self._claims[cid] = ClaimRecord(
                rec.id,
                rec.seat,
                rec.seq,
                rec.text,
                rec.origin,
                rec.ref,
                rec.backed_by,
                rec.speaker,
                seat,
            )
        index = len(amended.amendments or ()) - 1
        cid = f"{seat}{pending.seq}.0"
        self._claims[cid] = ClaimRecord(
            cid,
            seat,
            pending.seq,
            answer,
            "stated",
            f"amendments[{index}]",
            speaker="principal",
            via=via,
        )

    # ----------------------------------------------------------------- queries

    def unreviewed(self, seat: str) -> tuple[str, ...]:
        """Claim ids of the other side that ``seat`` has not reviewed yet, oldest first."""
        seat = _check_seat(seat)
        other = other_seat(seat)
        return tuple(
            cid
            for cid, rec in self._claims.items()
            if rec.seat == other and rec.speaker == "proxy" and (seat, cid) not in self._reviews
        )

    def disputed(self, seat: str, claim: str) -> bool:
        """Whether ``seat`` challenged or flagged ``claim`` as a conflict and its principal
        has not answered an escalation raised at or after that dispute."""
        since = self._disputes.get((seat, claim))
        if since is None:
            return False
        return not any(
            e.seat == seat and e.seq >= since and e.answer is not None for e in self._escalations
        )

    @property
    def envelopes(self) -> tuple[dict[str, Any], ...]:
        """Every stored envelope, in ``seq`` order (copies)."""
        return tuple(copy.deepcopy(e) for e in self._envelopes)

    @property
    def claims(self) -> dict[str, ClaimRecord]:
        """Every claim made in the room, by id."""
        return dict(self._claims)

    def claims_seen_by(self, seat: str) -> dict[str, ClaimRecord]:
        """The claims ``seat``'s side may read: every claim, except that until the room has
        ended (agreed or ended) the other seat's principal-speaker claims (its principal's
        answers, ``<seat><seq>.0``) are left out, as the answers themselves are: an answer
        is sealed into that seat's card, which the other side never reads."""
        seat = _check_seat(seat)
        if self.status in ("agreed", "ended"):
            return dict(self._claims)
        return {
            cid: rec
            for cid, rec in self._claims.items()
            if rec.seat == seat or rec.speaker != "principal"
        }

    @property
    def escalations(self) -> tuple[Escalation, ...]:
        """Every escalation, answered or pending, in order."""
        return tuple(self._escalations)

    @property
    def pending(self) -> Escalation | None:
        """The escalation the room is paused on, if any."""
        if self.status == "paused":
            return self._escalations[-1]
        return None

    @property
    def agreement(self) -> Agreement | None:
        """The agreement once reached: terms, hash, who proposed and accepted at which seq."""
        return cast("Agreement | None", copy.deepcopy(self._agreement))

    @property
    def protocol_flags(self) -> tuple[dict[str, Any], ...]:
        """Every flag recorded in the room: ``{seq, seat, flag}``."""
        return tuple(dict(f) for f in self._flag_log)

    @property
    def import_notes(self) -> tuple[dict[str, Any], ...]:
        """For an imported room, ``{seq, seat, flag}`` for every flag this library's
        enforcement would have recorded that the imported envelope lacks (empty otherwise)."""
        return tuple(dict(f) for f in self._import_notes)

    @property
    def head(self) -> str:
        """The ledger head hash."""
        return self.ledger.head

    def reviews_of(self, claim: str) -> dict[str, tuple[str, int, str | None]]:
        """The latest review of ``claim`` by each seat: ``{seat: (verdict, seq, reason)}``."""
        return {s: v for (s, c), v in self._reviews.items() if c == claim}

    def agents(self, seat: str) -> tuple[str, ...]:
        """Every agent that sat in ``seat``, in order."""
        return tuple(self._seats[_check_seat(seat)].agents)

    def sealed_by(self, seat: str) -> dict[str, Any] | None:
        """Which agent and link sealed ``seat``'s card (see :meth:`principal_link`)."""
        found = self._seats[_check_seat(seat)].sealed_by
        return dict(found) if found is not None else None

    def sealed_via(self, seat: str) -> str | None:
        """How ``seat``'s card was sealed (``web`` or ``mcp``)."""
        return self._seats[_check_seat(seat)].sealed_via

    def first_card_hash(self, seat: str) -> str | None:
        """The card hash of ``seat`` when it was sealed, before any amendment."""
        return self._seats[_check_seat(seat)].first_card_hash

    def view(self, seat: str) -> RoomView:
        """Return what ``seat``'s proxy may see (never the other side's card body)."""
        seat = _check_seat(seat)
        other = other_seat(seat)
        mine, theirs = self._seats[seat], self._seats[other]
        proposal = self._proposals.get(other)
        pending = self.pending
        return RoomView(
            room=self.id,
            topic=self.topic,
            seat=seat,
            status=self.status,
            turn=self.turn,
            turns=self.turns,
            max_turns=self.max_turns,
            card=mine.card.to_json() if mine.card else None,
            card_hash=mine.card_hash,
            other={
                "seat": other,
                "name": theirs.name,
                "card_hash": theirs.card_hash,
                "sealed": theirs.card is not None,
                "agent": theirs.agent,
            },
            envelopes=self.envelopes,
            unreviewed=self.unreviewed(seat),
            other_proposal=copy.deepcopy(proposal),
            pending=(
                {
                    "seat": pending.seat,
                    "seq": pending.seq,
                    "question": pending.question,
                    "reason": pending.reason,
                }
                if pending is not None and pending.seat == seat
                else None
            ),
            ledger_head=self.head,
        )

    def brief(self) -> Brief:
        """Return the decision brief (JSON); allowed once the room is agreed or ended."""
        self._allowed("brief")
        from ._brief import build_brief

        return build_brief(self)  # the shape of brief.schema.json

    # ----------------------------------------------------------------- export / import

    def export(self) -> dict[str, Any]:
        """Return the whole room as JSON, in the reference server's storage shape.

        This holds both card bodies and the seat tokens: it is storage, not something to
        show the other side (use :meth:`view` or :meth:`brief`).
        """
        seats: dict[str, Any] = {}
        for seat in SEATS:
            record = self._seats[seat]
            seats[seat] = {
                "token": record.token,
                "name": record.name,
                "card": record.card.to_json() if record.card else None,
                "cardHash": record.card_hash,
                "sealed": record.card is not None,
                "draft": record.draft.to_json() if record.draft else None,
                "agent": record.agent,
                "mode": record.mode,
                "sealedVia": record.sealed_via,
            }
        pending = self.pending
        return {
            "id": self.id,
            "topic": self.topic,
            "createdAt": self.created_at,
            "status": self.status,
            "seats": seats,
            "envelopes": [copy.deepcopy(e) for e in self._envelopes],
            "ledger": self.ledger.to_json(),
            "turn": self.turn,
            "turnCount": self.turns,
            "maxTurns": self.max_turns,
            "pending": (
                {
                    "seat": pending.seat,
                    "seq": pending.seq,
                    "question": pending.question,
                    "reason": pending.reason,
                }
                if pending is not None
                else None
            ),
        }

    @classmethod
    def from_export(cls, data: Any, *, head: str | None = None) -> Room:
        """Rebuild a room from :meth:`export` output or a reference server room export.

        The ledger is verified (against ``head`` when given) and replayed: every card,
        envelope, question and answer body in the export must hash to what the ledger
        recorded, or the import fails (``import_invalid``). Status, turn and pending
        escalation are derived from the ledger, not trusted from the export.
        """
        from ._export import import_room

        return import_room(cls, data, head=head)

    def _verify_self(self) -> None:  # used by the import and the stores
        verify_ledger(self.ledger.to_json())

    def _ledger_entries(self) -> tuple[LedgerEntry, ...]:
        return self.ledger.entries


@dataclass(frozen=True)
class _Built:
    """The body :meth:`Room.send` gives :meth:`Room.apply`: the envelope this room's own
    enforcement built for that entry (not something a caller can pass in by accident)."""

    envelope: dict[str, Any]


def _parse_entry(entry: Any) -> tuple[str, str, Mapping[str, Any]]:
    if isinstance(entry, LedgerEntry):
        return entry.type, entry.at, entry.data
    if not isinstance(entry, Mapping):
        raise _refuse("a ledger entry is not a JSON object", "malformed_entry")
    type_, at, data = entry.get("type"), entry.get("at"), entry.get("data")
    if not (isinstance(type_, str) and type_ and isinstance(at, str) and isinstance(data, Mapping)):
        raise _refuse("a ledger entry needs a type, a time and a data object", "malformed_entry")
    return type_, at, data


def _draft_of(env: Mapping[str, Any]) -> dict[str, Any]:
    """The draft a proxy sent for a stored envelope (ids of its own claims back to newN)."""
    own = f"{env['from']['seat']}{env['seq']}."
    draft: dict[str, Any] = {"message": env["message"], "status": env["status"]}
    draft["claims"] = [
        {k: c[k] for k in ("text", "origin", "ref") if k in c} for c in env["claims"]
    ]
    # a claim reviewed twice (the reference stores that) counts as the room records it: the
    # later review is the verdict
    reviews = {r.get("claim_id"): r for r in env["reviews"]}
    draft["reviews"] = [
        {k: r[k] for k in ("claim_id", "verdict", "reason") if k in r} for r in reviews.values()
    ]
    if "proposal" in env:
        deps = [
            f"new{d[len(own) :]}" if isinstance(d, str) and d.startswith(own) else d
            for d in env["proposal"].get("depends_on", [])
        ]
        draft["proposal"] = {"terms": list(env["proposal"]["terms"]), "depends_on": deps}
    if "escalation" in env:
        draft["escalation"] = dict(env["escalation"])
    return draft


_Applier = Callable[[Room, Mapping[str, Any], Any, str, int], str]

_APPLIERS: dict[str, _Applier] = {
    "join": Room._on_join,
    "link": Room._on_link,
    "seal": Room._on_seal,
    "send": Room._on_send,
    "answer": Room._on_answer,
    "contest": Room._on_contest,
    "release": Room._on_release,
    "rejoin": Room._on_rejoin,
}
"""Each action's entry check and effect; the next state is the table's (Room.apply)."""

_OWED = frozenset(
    {("send", "escalate"), ("send", "agree"), ("send", "turn_limit"), ("answer", "turn_limit")}
)
"""Outcomes whose state change waits for the follow-up entry (FOLLOW_UPS)."""
