"""What the PXP MCP tools answer, in the reference server's shapes and words.

An agent prompted for the reference server (Behalf, ``lib/mcp.js``) reads back the same
member names, status words and ``next_action`` sentences here: ``agent_view`` is the room as
one seat sees it (``get_room``, ``join_room``, ``seal_intent_card``, ``wait_for_turn``,
``answer_escalation``), ``compact_envelope`` one line of its ``transcript``. Where the seed
demands otherwise it is said beside the member (the other side's principal answer is private,
and no public brief page is published).
"""

from __future__ import annotations

import copy
from typing import Any

from ._room import ClaimRecord, Room, other_seat

__all__ = ["STATUS_WORDS", "agent_view", "compact_envelope", "status_word"]

STATUS_WORDS = {
    "open": "drafting",
    "active": "negotiating",
    "paused": "paused",
    "agreed": "agreed",
    "ended": "stalled",
}
"""The room engine's states and the reference's status words for them."""

_NOT_JOINED = "external agent (not joined yet)"
_BUILTIN = "built-in Claude proxy"


def status_word(room: Room) -> str:
    """The reference's word for the room's state (``drafting``, ``negotiating``, ...)."""
    return STATUS_WORDS[room.status]


def compact_envelope(room: Room, env: dict[str, Any], viewer: str) -> dict[str, Any]:
    """One ``transcript`` line as the reference writes it, for the seat ``viewer``.

    The escalation's answer is shown to the escalating seat only: it is sealed into that
    principal's card, whose body stays private (seed section 1); the other seat reads
    ``answer: null`` and ``answered: true``.
    """
    sender = env["from"]
    seat = sender["seat"]
    agent = room.agent(seat) if room.agent(seat) and _mode(room, seat) == "external" else None
    label = f"{seat} ({sender['principal']}'s proxy{', ' + agent if agent else ''})"
    out: dict[str, Any] = {
        "seq": env["seq"],
        "from": label,
        "status": env["status"],
        "message": env["message"],
    }
    if env["claims"]:
        out["claims"] = [
            {k: c[k] for k in ("id", "origin", "ref", "text") if k in c} for c in env["claims"]
        ]
    if env["reviews"]:
        out["reviews"] = copy.deepcopy(env["reviews"])
    if "proposal" in env:
        out["proposal"] = {**copy.deepcopy(env["proposal"]), "hash": env.get("proposal_hash")}
    if "accepts" in env:
        out["accepts"] = dict(env["accepts"])
    if "escalation" in env:
        answer = next((e for e in room.escalations if e.seq == env["seq"]), None)
        answered = answer is not None and answer.answer is not None
        out["escalation"] = {
            "question": env["escalation"]["question"],
            "answer": answer.answer if answered and seat == viewer and answer else None,
            "answered": answered,
        }
    if "protocol_flags" in env:
        out["protocol_flags"] = list(env["protocol_flags"])
    return out


def _mode(room: Room, seat: str) -> str:
    return room.mode(seat) or "external"


def _next_action(room: Room, seat: str, status: str, your_turn: bool) -> str:
    other_name = room.seat_name(other_seat(seat)) or "the other side"
    pending = room.pending
    if status == "drafting" and room.card(seat) is None:
        return (
            "Ask your principal for every Intent Card field (do not invent any), confirm the "
            "card with them, then call seal_intent_card."
        )
    if status == "drafting":
        return f"Your card is sealed. Waiting for {other_name} to seal theirs. Call wait_for_turn."
    if pending is not None and pending.seat == seat:
        return (
            "Paused for your principal. Ask them exactly this and relay their words with "
            f'answer_escalation: "{pending.question}"'
        )
    if pending is not None:
        return "Paused while the other principal answers their proxy. Call wait_for_turn."
    if your_turn:
        return "Your turn. Review every claim in claims_to_review, then call send_envelope."
    if status == "negotiating":
        return "The other side's turn. Call wait_for_turn."
    if status == "agreed":
        return (
            "Agreement reached. Call get_brief and report the terms, authority and unverified "
            "assumptions to your principal."
        )
    contested = [
        s for s in ("A", "B") for c in room.contests(s) if c["state"] not in ("agreed", "ended")
    ]
    if status == "stalled" and contested:
        # ours: the room ended on a contest (the reference has no contests)
        return (
            f"No agreement: seat {contested[0]}'s invite was presented again after an agent "
            "had joined with it, so the room ended. Call get_brief and report to your "
            "principal."
        )
    if status == "stalled":
        return "No agreement within the turn limit. Call get_brief and report to your principal."
    return "Call wait_for_turn."


def _review_item(claim: ClaimRecord) -> dict[str, Any]:
    out: dict[str, Any] = {"id": claim.id, "origin": claim.origin}
    if claim.ref is not None:
        out["ref"] = claim.ref
    out["text"] = claim.text
    return out


def agent_view(room: Room, seat: str) -> dict[str, Any]:
    """The room as ``seat``'s proxy sees it, in the reference's shape (``agentView``).

    ``web_view`` and ``brief_url`` are ``null``: the principal's page opens only with the
    principal link, which is handed to the human, never to an agent, and no brief is
    published at a public address (the brief quotes the seat's card).
    """
    view = room.view(seat)
    other = other_seat(seat)
    status = status_word(room)
    your_turn = view.my_turn
    pending = room.pending
    them_mode = _mode(room, other)
    claims = room.claims_seen_by(seat)
    return {
        "room_id": room.id,
        "topic": room.topic,
        "status": status,
        "you": {
            "seat": seat,
            "principal": room.seat_name(seat),
            "proxy": _mode(room, seat),
            "agent": room.agent(seat),  # ours: the agent the ledger records in this seat
            "card_sealed": view.card is not None,
            "card": view.card,
            "card_hash": view.card_hash,
        },
        "counterpart": {
            "seat": other,
            "principal": room.seat_name(other),
            "proxy": (room.agent(other) or _NOT_JOINED) if them_mode == "external" else _BUILTIN,
            "card_sealed": room.card(other) is not None,
            "card_hash": room.card_hash(other),
        },
        "your_turn": your_turn,
        "pending_question": (
            pending.question if pending is not None and pending.seat == seat else None
        ),
        "next_action": _next_action(room, seat, status, your_turn),
        "turn_count": room.turns,
        "max_turns": room.max_turns,
        "transcript": [compact_envelope(room, env, seat) for env in view.envelopes],
        "claims_to_review": [_review_item(claims[c]) for c in view.unreviewed],
        "unverified_assumptions": [
            {"id": c.id, "by": c.seat, "text": c.text} for c in claims.values() if not c.verified
        ],
        # ours: a card an agent drafted while the server asks principals to confirm cards
        # on their page (``confirm_on_web``); the reference has no drafts over MCP
        "your_draft": draft.to_json() if (draft := room.draft(seat)) is not None else None,
        "web_view": None,
        "brief_url": None,
        "ledger_head": room.head,
    }
