"""The reference server's bytes: its seven exported rooms import, every envelope rebuilt from
its draft hashes as the reference recorded it, and cards seal to the reference's hashes
(issue 20, findings 1 and 2)."""

from __future__ import annotations

import copy
import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pxp

TOP = Path(__file__).resolve().parents[2]
ROOMS: dict[str, Any] = json.loads(
    (TOP / "vectors" / "third_party" / "pxp" / "rooms.v0.json").read_text(encoding="utf-8")
)["rooms"]


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _draft(env: dict[str, Any]) -> dict[str, Any]:
    draft: dict[str, Any] = {"message": env["message"], "status": env["status"]}
    if env["claims"]:
        draft["claims"] = [
            {k: c[k] for k in ("text", "origin", "ref") if k in c} for c in env["claims"]
        ]
    for key in ("reviews",):
        if env[key]:
            draft[key] = copy.deepcopy(env[key])
    for key in ("proposal", "escalation"):
        if key in env:
            draft[key] = copy.deepcopy(env[key])
    return draft


def test_there_are_seven_reference_rooms() -> None:
    assert len(ROOMS) == 7


@pytest.mark.parametrize("room_id", sorted(ROOMS))
def test_every_reference_room_imports(room_id: str) -> None:
    data = ROOMS[room_id]
    room = pxp.Room.from_export(copy.deepcopy(data), head=data["ledger"][-1]["hash"])
    # the import keeps the reference's entries and may complete its "finalise gap"
    kept = room.ledger.to_json()[: len(data["ledger"])]
    assert [e["hash"] for e in kept] == [e["hash"] for e in data["ledger"]]


@pytest.mark.parametrize(
    "room_id", sorted(r for r in ROOMS if ROOMS[r]["envelopes"] and ROOMS[r]["seats"]["A"]["card"])
)
def test_every_reference_envelope_rebuilds_from_its_draft(room_id: str) -> None:
    data = ROOMS[room_id]
    room = pxp.Room.open(
        room_id, topic=data["topic"], now=_time(data["createdAt"]), max_turns=data["maxTurns"]
    )
    recorded = {
        e["data"]["seq"]: e["data"]["envelope_hash"]
        for e in data["ledger"]
        if e["type"] == "envelope"
    }
    for entry in data["ledger"]:
        if entry["type"] == "card_sealed":
            seat = entry["data"]["seat"]
            card = {k: v for k, v in data["seats"][seat]["card"].items() if k != "amendments"}
            sealed = room.seal(seat, card, now=_time(entry["at"]), via=entry["data"]["via"])
            assert sealed.hash == entry["data"]["card_hash"] == data["seats"][seat]["cardHash"]
    for env in data["envelopes"]:
        result = room.send(env["from"]["seat"], _draft(env), now=_time(data["createdAt"]))
        assert result.envelope == env
        assert result.envelope_hash == recorded[env["seq"]]


# What the reference's normaliseCard makes of ordinary inputs (read from lib/pxp.js and
# written out by hand): trimmed strings, empty items dropped, role "" when absent.
ORDINARY = [
    (
        {"principal": {"name": "Ana"}, "goal": "Sell the van", "must_haves": ["5000 EUR"]},
        {"principal": {"name": "Ana", "role": ""}, "goal": "Sell the van"},
    ),
    (
        {"principal": {"name": " Ana "}, "goal": "Sell the van. ", "must_haves": ["5000 EUR"]},
        {"principal": {"name": "Ana", "role": ""}, "goal": "Sell the van."},
    ),
    (
        {
            "principal": {"name": "Ana", "role": "owner", "org": ""},
            "goal": "Sell the van",
            "must_haves": ["5000 EUR", ""],
        },
        {"principal": {"name": "Ana", "role": "owner"}, "goal": "Sell the van"},
    ),
    (
        {
            "principal": {"name": "Ana"},
            "goal": "\tSell the van\n",
            "must_haves": [" 5000 EUR "],
            "known_facts": ["  "],
        },
        {"principal": {"name": "Ana", "role": ""}, "goal": "Sell the van"},
    ),
    (
        {
            "principal": {"name": "Ana", "role": "owner", "org": "Vans"},
            "goal": "Sell the van",
            "must_haves": ["5000 EUR"],
        },
        {"principal": {"name": "Ana", "role": "owner", "org": "Vans"}, "goal": "Sell the van"},
    ),
]


@pytest.mark.parametrize(("given", "expected"), ORDINARY)
def test_ordinary_cards_seal_to_the_reference_hash(
    given: dict[str, Any], expected: dict[str, Any]
) -> None:
    card = {
        "pxp": "0",
        **expected,
        "must_haves": ["5000 EUR"],
        "may_agree_to": [],
        "must_never": [],
        "escalate_when": [],
        "known_facts": [],
        "amendments": [],
    }
    digest = pxp.wire.sha256_hex(pxp.wire.canonical(card))
    assert pxp.seal_card(given).hash == digest


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"goal": ""}, "goal_missing"),
        ({"goal": "   "}, "goal_missing"),
        ({"must_haves": []}, "must_have_missing"),
        ({"must_haves": ["", " "]}, "must_have_missing"),
        ({"goal": "g" * 401}, "too_long"),
        ({"must_haves": ["m" * 301]}, "too_long"),
        ({"must_haves": [f"m{i}" for i in range(13)]}, "too_many"),
    ],
)
def test_sealing_refuses_what_the_reference_refuses_or_cuts(
    change: dict[str, Any], reason: str
) -> None:
    card = {"principal": {"name": "Ana"}, "goal": "Sell", "must_haves": ["5000 EUR"], **change}
    with pytest.raises(pxp.PxpError) as caught:
        pxp.seal_card(card)
    assert (caught.value.code, caught.value.reason) == ("card_invalid", reason)
    now = _time("2026-01-01T00:00:00.000Z")
    room = pxp.Room.open("r1", topic="t", now=now)
    with pytest.raises(pxp.PxpError):
        room.seal("A", card, now=now)
    assert room.card("A") is None
    assert len(room.ledger) == 1


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)
_FIELDS = st.sampled_from(
    ["principal", "goal", "must_haves", "may_agree_to", "must_never", "known_facts", "pxp"]
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(_FIELDS, _JSON | st.lists(st.text(max_size=4), max_size=14), max_size=7))
def test_sealing_any_shape_refuses_with_its_own_error(card: dict[str, Any]) -> None:
    codes: list[str] = []
    try:
        sealed = pxp.seal_card(card)
    except pxp.PxpError as exc:
        codes.append(exc.code)
    if codes:
        assert codes == ["card_invalid"]
        return
    again = pxp.seal_card(sealed.card.to_json())
    assert again.hash == sealed.hash  # sealing is idempotent
