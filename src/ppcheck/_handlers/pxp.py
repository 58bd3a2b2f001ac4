"""Vector operations of :mod:`pxp` (docs/vectors/pxp.md describes every input and output)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import pxp

from .._registry import handler

__all__: list[str] = []


def _time(value: Any, where: str) -> datetime:
    if not isinstance(value, str):
        raise pxp.PxpError("time_invalid", f"{where} is not an ISO 8601 time string")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise pxp.PxpError("time_invalid", f"{where} is not an ISO 8601 time") from None
    if parsed.tzinfo is None:
        raise pxp.PxpError("time_invalid", f"{where} has no time zone")
    return parsed


def _need(input_: Mapping[str, Any], key: str) -> Any:
    if not isinstance(input_, Mapping) or key not in input_:
        raise pxp.PxpError("argument_invalid", f"the input has no {key!r} member")
    return input_[key]


def _obj(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise pxp.PxpError("argument_invalid", f"{where} is not a JSON object")
    return value


@handler("pxp.card_hash")
def card_hash(input_: dict[str, Any]) -> dict[str, Any]:
    """Validate a card exactly as given and hash it."""
    return {"card_hash": pxp.card_hash(_need(input_, "card"))}


@handler("pxp.seal_card")
def seal_card(input_: dict[str, Any]) -> dict[str, Any]:
    """Seal a confirmed card (filling what the seal tool may leave out)."""
    sealed = pxp.seal_card(_need(input_, "card"))
    return {"card": sealed.card.to_json(), "card_hash": sealed.hash}


@handler("pxp.envelope_hash")
def envelope_hash(input_: dict[str, Any]) -> dict[str, Any]:
    """Validate a stored envelope and hash it."""
    envelope = pxp.validate_envelope(_need(input_, "envelope"))
    return {"envelope_hash": pxp.envelope_hash(envelope)}


@handler("pxp.proposal_hash")
def proposal_hash(input_: dict[str, Any]) -> dict[str, Any]:
    """Hash a proposal's terms."""
    return {"proposal_hash": pxp.proposal_hash(_need(input_, "terms"))}


@handler("pxp.verify_ledger")
def verify_ledger(input_: dict[str, Any]) -> dict[str, Any]:
    """Verify a ledger; a failed check is an output naming the first bad entry."""
    try:
        head = pxp.verify_ledger(_need(input_, "entries"), head=input_.get("head"))
    except pxp.errors.LedgerError as exc:
        return {"valid": False, "index": exc.index, "reason": str(exc.reason)}
    return {"valid": True, "head": head}


def _play(input_: Mapping[str, Any]) -> pxp.Room:
    spec = _obj(input_.get("room"), "room")
    room = pxp.Room.open(
        spec.get("id", "room"),
        topic=spec.get("topic", ""),
        now=_time(spec.get("opened_at"), "room.opened_at"),
        max_turns=spec.get("max_turns", 10),
    )
    steps = input_.get("steps", [])
    if not isinstance(steps, list):
        raise pxp.PxpError("argument_invalid", "steps is not a list")
    for i, step in enumerate(steps):
        step = _obj(step, f"steps[{i}]")
        at = _time(step.get("at"), f"steps[{i}].at")
        seat: Any = step.get("seat")
        if "join" in step:
            room.join(seat, agent=step["join"], now=at, mode=step.get("mode", "external"))
        elif "seal" in step:
            room.seal(seat, step["seal"], now=at, via=step.get("via", "web"))
        elif "send" in step:
            room.send(seat, step["send"], now=at)
        elif "answer" in step:
            confirms = step.get("confirms", [])
            room.answer(seat, step["answer"], now=at, via=step.get("via", "web"), confirms=confirms)
        elif "contest" in step:
            room.contest(seat, agent=step["contest"], now=at)
        elif "release" in step:
            room.release(seat, now=at)
        else:
            raise pxp.PxpError(
                "argument_invalid",
                f"steps[{i}] is not join, seal, send, answer, contest or release",
            )
    return room


@handler("pxp.enforce")
def enforce(input_: dict[str, Any]) -> dict[str, Any]:
    """Play the steps, then send ``envelope`` and return what the room stored."""
    room = _play(input_)
    last = _obj(input_.get("envelope"), "envelope")
    seat: Any = last.get("seat")
    draft: Any = last.get("send")
    result = room.send(seat, draft, now=_time(last.get("at"), "envelope.at"))
    return {
        "envelope": result.envelope,
        "flags": list(result.flags),
        "envelope_hash": result.envelope_hash,
        "status": result.status,
        "ledger_head": room.head,
    }


@handler("pxp.brief")
def brief(input_: dict[str, Any]) -> dict[str, Any]:
    """Play the steps of a finished room and return its decision brief."""
    room = _play(input_)
    return {"brief": room.brief(), "markdown": pxp.brief_markdown(room.brief())}


@handler("pxp.import_room")
def import_room(input_: dict[str, Any]) -> dict[str, Any]:
    """Import a room export (ours or the reference's) and report what the replay derived."""
    room = pxp.Room.from_export(_need(input_, "room"), head=input_.get("head"))
    pending = room.pending
    return {
        "status": room.status,
        "turn": room.turn,
        "turns": room.turns,
        "ledger_head": room.head,
        "card_hashes": {s: room.card_hash(s) for s in ("A", "B")},
        "pending": (
            None
            if pending is None
            else {"seat": pending.seat, "seq": pending.seq, "question": pending.question}
        ),
    }


@handler("pxp.canonical")
def canonical(input_: dict[str, Any]) -> dict[str, Any]:
    """Canonical JSON text of a value and the SHA-256 of its UTF-8 bytes."""
    text = pxp.wire.canonical(_need(input_, "value"))
    return {"text": text, "sha256": pxp.wire.sha256_hex(text)}
