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
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, cast

from ._canonical import canonical, sha256_hex
from ._card import IntentCard, SealedCard, seal_card
from ._envelope import (
    SEATS,
    claim_id,
    envelope_hash,
    parse_claim_id,
    proposal_hash,
    validate_draft,
)
from ._flags import flag
from ._jsstr import js_prefix
from ._ledger import Ledger, LedgerEntry, verify_ledger
from ._text import compact, contains_words, hidden_characters, normalize
from ._wire import Agreement, Brief
from .errors import PxpError

__all__ = [
    "ACTIONS",
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

ACTIONS = ("join", "draft", "seal", "send", "answer", "brief", "contest", "release", "rejoin")
"""Actions on a room (``Room.join`` ... ``Room.brief``)."""

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
}
"""``(state, action) -> {outcome: next state}``; any pair not listed is an invalid action."""

MAX_CONTESTS_PER_SEAT = 4
"""A seat's invite presented again is recorded (``Room.contest``) this many times at most:
the room has ended by then, and each entry lengthens the ledger every load re-verifies."""

MAX_REJOINS_PER_SEAT = 8
"""A seat link joining its held seat again is recorded (``Room.rejoin``) this many times at
most; later joins under the holder's name change nothing."""

VIAS = ("web", "mcp")
_MODES = ("builtin", "external")
_ROOM_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_CLAIM_TOKEN = re.compile(r"(?<![A-Za-z0-9])[ABab][1-9][0-9]*\.[1-8](?![0-9])")
_OTHER_WORDS = re.compile(
    r"^\s*(?:the\s+)?(?:other|their|theirs|counterpart|counter-party|counterparty)\b"
    r"|\b(?:counterpart|counter-party|counterparty)"
    r"|\b(?:other|their)\s+(?:side|proxy|party|seat|agent|principal|claim|message)",
    re.I,
)


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


def _is_must_never(ref: str) -> bool:
    return re.fullmatch(r"must_never\[[0-9]+\]", ref.strip()) is not None


def _repeats(assumptions: Mapping[str, str], text: str) -> str | None:
    """The first earlier assumption (normalised text to claim id) that ``text`` repeats:
    one of the two normalised texts holds the other as whole words."""
    said = _norm(text)
    if not said:
        return None
    for known, cid in assumptions.items():
        if known and (f" {known} " in f" {said} " or f" {said} " in f" {known} "):
            return cid
    return None


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


def _check_seat(seat: Any) -> str:
    if seat not in SEATS:
        raise PxpError("seat_invalid", f"seat {seat!r} does not exist; a v0 room has A and B")
    return str(seat)


class Room:
    """A two-seat PXP room. Create one with :meth:`open` or :meth:`from_export`."""

    def __init__(self, room_id: str, topic: str, created_at: str, max_turns: int) -> None:
        self.id = room_id
        self.topic = topic
        self.created_at = created_at
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
        self._replay_outcome: str | None = None
        # import only: answers the reference wrote onto escalating envelopes after hashing
        self._late_answers: dict[int, dict[str, Any]] = {}
        # import only: flags this library would have recorded that an imported envelope lacks
        self._import_notes: list[dict[str, Any]] = []

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
        """Open a room: ledger entry ``room_opened {topic, protocol: "PXP/0"}``.

        ``names`` are the principals' display names known before their cards are sealed;
        ``tokens`` are seat-link secrets chosen by the caller (see :meth:`seat_for_token`).
        """
        if not isinstance(room_id, str) or _ROOM_ID.match(room_id) is None:
            raise PxpError("room_invalid", "the room id must be 1-64 letters, digits, - or _")
        if not isinstance(topic, str) or not topic.strip():
            raise PxpError("room_invalid", "the room topic must be a non-empty string")
        if type(max_turns) is not int or not 2 <= max_turns <= 1000:
            raise PxpError("room_invalid", "max_turns must be an integer from 2 to 1000")
        at = format_time(now)
        room = cls(room_id, topic, at, max_turns)
        for seat, name in (names or {}).items():
            if not isinstance(name, str) or not name.strip():
                raise PxpError("room_invalid", f"the name for seat {seat!r} is not a string")
            room._seats[_check_seat(seat)].name = name
        for seat, token in (tokens or {}).items():
            if not isinstance(token, str) or len(token) < 16:
                raise PxpError("room_invalid", f"the token of seat {seat!r} is too short")
            room._seats[_check_seat(seat)].token = token
        if room._seats["A"].token is not None and room._seats["A"].token == room._seats["B"].token:
            raise PxpError("room_invalid", "the two seats must have different tokens")
        room.ledger.append("room_opened", at, {"topic": topic, "protocol": "PXP/0"})
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
        agent takes the seat over (the ledger keeps who sat there).
        """
        self._allowed("join")
        seat = _check_seat(seat)
        if not isinstance(agent, str) or not agent.strip() or len(agent) > 200:
            raise PxpError("agent_invalid", "the agent name must be a non-empty string")
        if mode not in _MODES:
            raise PxpError("mode_invalid", "mode must be 'builtin' or 'external'")
        at = format_time(now)
        record = self._seats[seat]
        if record.agent == agent and record.mode == mode:
            return False
        data = {"seat": seat, "agent": agent, "mode": mode}
        canonical(data)  # refuse what cannot be hashed before anything changes
        self._do_join(seat, agent, mode)
        self.ledger.append("agent_joined", at, data)
        self._move("join", "joined")
        return True

    def issue_principal_link(self, seat: str, *, agent: str | None, now: datetime) -> int:
        """Record that ``seat``'s principal link was (re)issued to ``agent``; return the entry n.

        Ledger ``principal_link {seat, agent}`` (``agent`` is ``null`` for the link handed to
        whoever created the room). A link issued earlier to the seat is no longer the one the
        room attributes web actions to: the caller revokes it. Any state but a finished room.
        """
        seat = _check_seat(seat)
        if self.status in ("agreed", "ended"):
            raise PxpError("invalid_transition", "the room has ended; no link is issued")
        if agent is not None and (not isinstance(agent, str) or not agent.strip()):
            raise PxpError("agent_invalid", "the agent name must be a non-empty string")
        at = format_time(now)
        n = len(self.ledger) + 1
        self._do_issue(seat, agent, n)
        self.ledger.append("principal_link", at, {"seat": seat, "agent": agent})
        return n

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
        ``parties[seat].contests``.
        """
        outcomes = self._allowed("contest")
        seat = _check_seat(seat)
        if self._seats[seat].agent is None:
            raise PxpError(
                "seat_invalid", f"seat {seat} has no agent whose seat could be contested"
            )
        if not isinstance(agent, str) or not agent.strip() or len(agent) > 200:
            raise PxpError("agent_invalid", "the agent name must be a non-empty string")
        at = format_time(now)
        data = {"seat": seat, "agent": agent}
        canonical(data)  # refuse what cannot be hashed before anything changes
        self._do_contest(seat, agent, at, len(self.ledger) + 1, outcomes["contested"])
        self.ledger.append("seat_contested", at, data)

    def _do_contest(self, seat: str, agent: str, at: str, n: int, state: str) -> None:
        record = self._seats[seat]
        record.contests.append(
            {"agent": agent, "holder": record.agent, "state": self.status, "at": at, "n": n}
        )
        self.status = state
        if state == "ended":
            self.turn = None

    def release(self, seat: str, *, now: datetime) -> str:
        """The seat's principal frees ``seat`` from its agent: ledger ``seat_released {seat,
        agent}`` (ours); returns the agent released.

        The next agent that joins takes the seat as a first join would (the ledger and the
        brief keep every agent that sat there). Only while the room runs.
        """
        outcomes = self._allowed("release")
        seat = _check_seat(seat)
        agent = self._seats[seat].agent
        if agent is None:
            raise PxpError("seat_invalid", f"seat {seat} has no agent to release")
        at = format_time(now)
        data = {"seat": seat, "agent": agent}
        self._do_release(seat, at, len(self.ledger) + 1, outcomes["released"])
        self.ledger.append("seat_released", at, data)
        return agent

    def _do_release(self, seat: str, at: str, n: int, state: str) -> None:
        record = self._seats[seat]
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
        self.status = state

    def rejoin(self, seat: str, *, agent: str, now: datetime) -> None:
        """Record that the seat's link joined again while an agent holds the seat (ours):
        ledger ``seat_rejoined {seat, agent}``, ``agent`` the name given this time.

        A seat link is a bearer link: the agent that holds it joining again and another
        agent given the same link look alike to the room. Nothing else changes; the brief
        lists every rejoin, so a seat link shared by two agents is never silent.
        """
        outcomes = self._allowed("rejoin")
        seat = _check_seat(seat)
        if self._seats[seat].agent is None:
            raise PxpError("seat_invalid", f"seat {seat} has no agent to join again")
        if not isinstance(agent, str) or not agent.strip() or len(agent) > 200:
            raise PxpError("agent_invalid", "the agent name must be a non-empty string")
        at = format_time(now)
        data = {"seat": seat, "agent": agent}
        canonical(data)
        self._do_rejoin(seat, agent, at, len(self.ledger) + 1, outcomes["rejoined"])
        self.ledger.append("seat_rejoined", at, data)

    def _do_rejoin(self, seat: str, agent: str, at: str, n: int, state: str) -> None:
        record = self._seats[seat]
        record.rejoins.append({"agent": agent, "holder": record.agent, "at": at, "n": n})
        self.status = state

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

    def _do_join(self, seat: str, agent: str, mode: str | None) -> None:
        record = self._seats[seat]
        record.agent = agent
        record.mode = mode
        record.agents.append(agent)

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
        sealed the room becomes active and seat A has the first turn.
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
        _no_amendments(sealed.card)
        self._do_seal(seat, sealed, via)
        self.ledger.append(
            "card_sealed",
            at,
            {
                "seat": seat,
                "principal": sealed.card.principal.name,
                "card_hash": sealed.hash,
                "via": via,
            },
        )
        self._after_seal()
        return sealed

    def _do_seal(self, seat: str, sealed: SealedCard, via: str | None) -> None:
        record = self._seats[seat]
        record.card = sealed.card
        record.card_hash = sealed.hash
        record.first_card_hash = sealed.hash
        record.sealed_via = via
        record.sealed_by = self._acted_by(seat, via)
        record.name = sealed.card.principal.name
        record.draft = None

    def _after_seal(self) -> None:
        if all(self._seats[s].card is not None for s in SEATS):
            self._move("seal", "both_sealed")
            self.turn = "A"
        else:
            self._move("seal", "waiting")

    # ----------------------------------------------------------------- send

    def send(self, seat: str, draft: Mapping[str, Any], *, now: datetime) -> SendResult:
        """Send one envelope from ``seat``'s proxy: enforce, store, hash, log.

        ``draft`` holds the ``send_envelope`` fields (see :func:`validate_draft`). The room
        fills ``pxp``, ``room``, ``seq``, ``from``, ``intent_hash`` and claim ids, applies
        every enforcement rule (recording each rewrite in ``protocol_flags``) and returns
        the stored envelope. Ledger ``envelope``, then ``escalation``, ``agreement`` or
        ``turn_limit`` as the outcome requires.
        """
        self._allowed("send")
        seat = _check_seat(seat)
        if seat != self.turn:
            raise PxpError("not_your_turn", f"it is seat {self.turn}'s turn, not seat {seat}'s")
        at = format_time(now)
        envelope, flags = self._enforce(seat, validate_draft(draft))
        digest = envelope_hash(envelope)
        outcome = self._apply_envelope(envelope, ledger_n=len(self.ledger) + 1)
        self.ledger.append(
            "envelope",
            at,
            {
                "seq": envelope["seq"],
                "seat": seat,
                "status": envelope["status"],
                "envelope_hash": digest,
            },
        )
        if outcome == "escalate":
            self.ledger.append(
                "escalation",
                at,
                {
                    "seat": seat,
                    "seq": envelope["seq"],
                    "question_hash": sha256_hex(envelope["escalation"]["question"]),
                },
            )
        elif outcome == "agree":
            assert self._agreement is not None
            self.ledger.append(
                "agreement",
                at,
                {
                    "proposal_hash": self._agreement["proposal_hash"],
                    "proposed_by": self._agreement["proposed_by"],
                    "accepted_by": self._agreement["accepted_by"],
                },
            )
        elif outcome == "turn_limit":
            self.ledger.append("turn_limit", at, {"turns": self.turns, "max_turns": self.max_turns})
        self._move("send", outcome)
        return SendResult(copy.deepcopy(envelope), tuple(flags), self.status, digest)

    def _cites_other(self, ref: str, other: str) -> bool:
        for token in _CLAIM_TOKEN.findall(ref):
            parsed = parse_claim_id(token.upper())
            if parsed is not None and parsed[0] == other:
                return True
        # the reference's test (a ref opening with other, their, counterpart or a seat
        # letter), narrowed to the other seat's letter, plus "seat B" / "side B" anywhere
        if _OTHER_WORDS.search(ref) is not None:
            return True
        if re.search(rf"^{other}\b|\b(?:seat|side|proxy)\s+{other}\b", ref, re.I) is not None:
            return True
        name = self._seats[other].name
        if not name or not _norm(name):
            return False
        return _contains(ref, name)

    def _cited_assumption(
        self, ref: str, seat: str, seq: int, local: Mapping[str, bool]
    ) -> str | None:
        """The first claim id of ``seat`` in ``ref`` that is an unbacked assumption.

        ``local`` holds the earlier claims of the envelope being built (id to verified); a
        claim of that envelope not yet built (the citing claim itself or a later one)
        backs nothing either.
        """
        found: list[str] = _CLAIM_TOKEN.findall(ref)
        for text in found:
            token = text.upper()
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
        """Build the stored envelope from a validated draft; nothing is changed here."""
        other = other_seat(seat)
        record = self._seats[seat]
        card = record.card
        assert card is not None
        assert record.card_hash is not None
        seq = len(self._envelopes) + 1
        flags: list[str] = []
        earlier_assumptions: dict[str, str] = {}
        for rec in self._claims.values():
            if not rec.verified:
                earlier_assumptions.setdefault(_norm(rec.text), rec.id)
        claims: list[dict[str, Any]] = []
        local: dict[str, bool] = {}
        new_ids: list[str] = []
        for index, raw in enumerate(draft["claims"], start=1):
            cid = claim_id(seat, seq, index)
            new_ids.append(cid)
            origin = raw["origin"]
            ref = raw.get("ref")
            quoted = js_prefix(raw["text"], 60)
            if origin in ("stated", "sourced") and ref is None:
                flags.append(flag("ref_missing", text=quoted, origin=origin))
                origin = "assumed"
            elif origin == "stated" and ref is not None and self._cites_other(ref, other):
                flags.append(flag("stated_cites_other_side", text=quoted))
                origin = "assumed"
            elif origin == "sourced" and ref is not None and self._cites_other(ref, other):
                flags.append(flag("sourced_cites_other_side", claim=cid))
                origin = "assumed"
            elif (
                origin != "assumed"
                and ref is not None
                and self._cited_assumption(ref, seat, seq, local)
            ):
                cited = self._cited_assumption(ref, seat, seq, local)
                flags.append(flag(f"{origin}_cites_assumption", claim=cid, cited=str(cited)))
                origin = "assumed"
            elif origin == "stated" and ref is not None and card.clause(ref.strip()) is None:
                flags.append(flag("stated_cites_missing_clause", claim=cid, clause=ref.strip()))
                origin = "assumed"
            elif origin == "stated" and ref is not None and _is_must_never(ref):
                # a must_never is what the principal forbids, never what it asserts
                flags.append(flag("stated_cites_must_never", claim=cid, clause=ref.strip()))
                origin = "assumed"
            elif (
                origin == "stated"
                and ref is not None
                and not _contains(str(card.clause(ref.strip())), raw["text"])
            ):
                flags.append(flag("stated_text_not_in_clause", claim=cid, clause=ref.strip()))
                origin = "assumed"
            if origin == "sourced":
                # re-stating does not upgrade an origin (seed 3.2): a claim that repeats an
                # unverified assumption, of either side, is that assumption again. A stated
                # claim that passed the checks above is its own principal's word (its card
                # holds the text), not a re-statement, and stays stated.
                repeated = _repeats(earlier_assumptions, raw["text"])
                if repeated is not None:
                    flags.append(flag("restated_assumption", claim=cid, cited=repeated))
                    origin = "assumed"
            stored: dict[str, Any] = {"id": cid, "text": raw["text"], "origin": origin}
            if ref is not None:
                stored["ref"] = ref
            backs = raw.get("backs")
            if backs is not None:
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
                stored["backs"] = backs
                if origin != "sourced":
                    flags.append(flag("backs_without_source", claim=cid))
            claims.append(stored)
            local[cid] = origin != "assumed"
            if origin == "assumed":
                earlier_assumptions.setdefault(_norm(raw["text"]), cid)
        reviews: list[dict[str, Any]] = []
        reviewed: set[str] = set()
        for review in draft["reviews"]:
            target = self._claims.get(review["claim_id"])
            if target is None:
                raise PxpError(
                    "envelope_rejected",
                    f"the review names claim {review['claim_id']}, which does not exist",
                    reason="review_unknown_claim",
                )
            if target.seat != other:
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
        proposal = draft.get("proposal")
        if proposal is not None:
            resolved: list[str] = []
            for dep in proposal.get("depends_on", []):
                if dep.startswith("new"):
                    dep = new_ids[int(dep[3:]) - 1]
                elif dep not in self._claims:
                    raise PxpError(
                        "envelope_rejected",
                        f"the proposal depends on claim {dep}, which does not exist",
                        reason="depends_on_unknown",
                    )
                if dep not in resolved:
                    resolved.append(dep)
            proposal = {"terms": list(proposal["terms"]), "depends_on": resolved}
            crossing = _crossed(card, proposal["terms"])
            hidden = [t for t in proposal["terms"] if hidden_characters(t)]
            if hidden:
                # a term holding characters a page shows as nothing reads differently
                # from what binds; the proposal is not recorded
                flags.append(flag("term_hidden_characters", text=js_prefix(hidden[0], 60)))
                proposal = None
            elif crossing:
                # a proposal binds its proxy: offering a must_never needs the principal
                for hit in crossing:
                    flags.append(flag("propose_must_never", clause=f"must_never[{hit}]"))
                proposal = None
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

    def _apply_envelope(self, envelope: dict[str, Any], *, ledger_n: int) -> str:
        """Record a stored envelope's effects; return the send outcome. No ledger writes."""
        seat = envelope["from"]["seat"]
        other = other_seat(seat)
        seq = envelope["seq"]
        self._envelopes.append(envelope)
        for claim in envelope["claims"]:
            self._claims[claim["id"]] = ClaimRecord(
                claim["id"], seat, seq, claim["text"], claim["origin"], claim.get("ref")
            )
            backs = claim.get("backs")
            if backs is not None and claim["origin"] == "sourced":
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
        for review in envelope["reviews"]:
            key = (seat, review["claim_id"])
            self._reviews[key] = (review["verdict"], seq, review.get("reason") or None)
            if review["verdict"] in ("challenge", "conflict"):
                self._disputes[key] = seq
        for text in envelope.get("protocol_flags", []):
            self._flag_log.append({"seq": seq, "seat": seat, "flag": text})
        proposal = envelope.get("proposal")
        if proposal is not None:
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
                "proposal_seq": accepted["seq"],
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
        each is marked verified, its origin unchanged.
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
        new_hash = amended.hash
        data: dict[str, Any] = {
            "seat": seat,
            "speaker": "principal",
            "via": via,
            "answer_hash": sha256_hex(answer),
            "card_hash": new_hash,
        }
        if confirmed:
            data["confirms"] = list(confirmed)
        self._do_answer(seat, amended, answer, via, at, len(self.ledger) + 1, confirmed)
        self.ledger.append("principal_answer", at, data)
        outcome = self._after_answer()
        if outcome == "turn_limit":
            self.ledger.append("turn_limit", at, {"turns": self.turns, "max_turns": self.max_turns})
        self._move("answer", outcome)
        return new_hash

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

    def _after_answer(self) -> str:
        if self.turns >= self.max_turns:
            self.turn = None
            return "turn_limit"
        return "resumed"

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

        return cast(Brief, build_brief(self))  # the shape of brief.schema.json

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
