"""Rooms the rule tests share: a van sale between two seats, and the reference server's
sample room carried on as the reference stores it (answered, agreed)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pxp
from pxp.ledger import entry_hash

SAMPLE = Path(__file__).resolve().parents[2] / "vectors/third_party/pxp/sample-room.json"


TOP = Path(__file__).resolve().parents[2]


CARD_A = {
    "principal": {"name": "Ana Silva"},
    "goal": "Sell the van.",
    "must_haves": ["At least 5000 EUR"],
    "may_agree_to": ["Pickup in Lyon"],
    "must_never": ["Deliver abroad"],
    "known_facts": ["The van has 80000 km"],
}


CARD_B = {
    "principal": {"name": "Bo Berg"},
    "goal": "Buy a van.",
    "must_haves": ["Below 6000 EUR"],
    "known_facts": ["I live in Lyon"],
}


def clock() -> Callable[[], datetime]:
    ticks: Iterator[datetime] = (
        datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=i) for i in range(100_000)
    )
    return lambda: next(ticks)


def active_room() -> tuple[pxp.Room, Callable[[], datetime]]:
    now = clock()
    room = pxp.Room.open("room-1", topic="Van", now=now())
    room.seal("A", CARD_A, now=now())
    room.seal("B", CARD_B, now=now(), via="mcp")
    return room, now


def msg(status: str = "continue", **extra: Any) -> dict[str, Any]:
    return {"message": "m", "status": status, **extra}


def _append(room: dict[str, Any], type_: str, data: dict[str, Any], at: str) -> None:
    ledger = room["ledger"]
    prev, n = ledger[-1]["hash"], len(ledger) + 1
    ledger.append(
        {
            "n": n,
            "type": type_,
            "at": at,
            "data": data,
            "prev": prev,
            "hash": entry_hash(prev, n, type_, at, data),
        }
    )


def _send(room: dict[str, Any], env: dict[str, Any], at: str) -> None:
    room["envelopes"].append(env)
    data = {
        "seq": env["seq"],
        "seat": env["from"]["seat"],
        "status": env["status"],
        "envelope_hash": pxp.envelope_hash(env),
    }
    _append(room, "envelope", data, at)


def reference_room_agreed() -> dict[str, Any]:
    """The sample room carried on as the reference server stores it: the answer written
    onto the escalating envelope after hashing, claim ids with a gap, a top-level
    proposal_hash, from.agent, a duplicate review, depends_on naming no claim, and an
    agent_joined after the agreement."""
    room = json.loads(SAMPLE.read_text(encoding="utf-8"))
    answer = "Yes, up to 10."
    env = room["envelopes"][0]
    env["answer"], env["answer_via"] = answer, "web"
    seat = room["seats"]["A"]
    seat["card"]["amendments"].append(
        {"question": "May I go higher?", "answer": answer, "at": "2026-01-01T00:00:05.000Z"}
    )
    seat["cardHash"] = pxp.card_hash(seat["card"])
    _append(
        room,
        "principal_answer",
        {
            "seat": "A",
            "speaker": "principal",
            "via": "web",
            "answer_hash": hashlib.sha256(answer.encode()).hexdigest(),
            "card_hash": seat["cardHash"],
        },
        "2026-01-01T00:00:05.000Z",
    )
    terms = ["Price is 10"]
    digest = pxp.proposal_hash(terms)
    base = {"pxp": "0", "room": "paused0001", "message": ""}
    _send(
        room,
        {
            **base,
            "seq": 2,
            "from": {
                "seat": "A",
                "principal": "Fixture A",
                "speaker": "proxy",
                "agent": "External agent",
            },
            "intent_hash": seat["cardHash"],
            "claims": [
                {"id": "A2.1", "text": "Budget is 10", "origin": "stated", "ref": "amendment"},
                {"id": "A2.3", "text": "B can deliver", "origin": "assumed"},
            ],
            "reviews": [],
            "status": "continue",
            "proposal": {"terms": terms, "depends_on": ["A2.3", "zzz"]},
            "proposal_hash": digest,
        },
        "2026-01-01T00:00:06.000Z",
    )
    review = {"claim_id": "A2.1", "verdict": "accept", "reason": ""}
    _send(
        room,
        {
            **base,
            "seq": 3,
            "from": {"seat": "B", "principal": "Fixture B", "speaker": "proxy"},
            "intent_hash": room["seats"]["B"]["cardHash"],
            "claims": [],
            "reviews": [review, review, {"claim_id": "A2.3", "verdict": "accept", "reason": ""}],
            "status": "agree",
            "accepts": {"seq": 2, "proposal_hash": digest},
        },
        "2026-01-01T00:00:07.000Z",
    )
    agreement = {"proposal_hash": digest, "proposed_by": "A", "accepted_by": "B"}
    _append(room, "agreement", agreement, "2026-01-01T00:00:07.000Z")
    return room


def _claim_origin(room: pxp.Room, seat: str, claim: dict[str, Any], now: Any) -> str:
    result = room.send(seat, msg(claims=[claim]), now=now())
    return str(result.envelope["claims"][-1]["origin"])


def _rechain(room: dict[str, Any]) -> None:
    """Recompute every envelope hash and the whole chain, as a forger without a head would."""
    by_seq = {e["seq"]: e for e in room["envelopes"]}
    prev = "0" * 64
    for entry in room["ledger"]:
        if entry["type"] == "envelope":
            env = by_seq[entry["data"]["seq"]]
            bare = {k: v for k, v in env.items() if k not in ("answer", "answer_via")}
            entry["data"]["envelope_hash"] = pxp.envelope_hash(bare)
        entry["prev"] = prev
        entry["hash"] = prev = entry_hash(
            prev, entry["n"], entry["type"], entry["at"], entry["data"]
        )


def _fixture_room(room_id: str, envelopes: list[dict[str, Any]]) -> dict[str, Any]:
    """A room of the reference's own test fixtures (the sample room's cards and times)."""
    room = json.loads(SAMPLE.read_text(encoding="utf-8"))
    room.update({"id": room_id, "topic": f"Fixture room {room_id}", "status": "negotiating"})
    room.update({"envelopes": [], "pending": None, "turnCount": len(envelopes)})
    first = {"topic": room["topic"], "protocol": "PXP/0"}
    room["ledger"] = [
        {
            "n": 1,
            "type": "room_opened",
            "at": "2026-01-01T00:00:00.000Z",
            "data": first,
            "prev": "0" * 64,
            "hash": entry_hash("0" * 64, 1, "room_opened", "2026-01-01T00:00:00.000Z", first),
        }
    ]
    for second, seat in ((1, "A"), (2, "B")):
        data = {
            "seat": seat,
            "principal": f"Fixture {seat}",
            "card_hash": room["seats"][seat]["cardHash"],
            "via": "mcp",
        }
        _append(room, "card_sealed", data, f"2026-01-01T00:00:0{second}.000Z")
    for second, env in enumerate(envelopes, start=3):
        _send(room, env, f"2026-01-01T00:00:0{second}.000Z")
    return room


def _room_with_a_lone_surrogate() -> pxp.Room:
    room, now = active_room()
    room.send("A", msg(message="x", proposal={"terms": ["Pay \ud800 now"]}), now=now())
    room.send("B", msg("agree"), now=now())
    return room
