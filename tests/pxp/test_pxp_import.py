"""Spec §8: importing a room export (ours or the reference server's): the replay, the
reference's storage shape, forgeries and robustness. (Folded from the review regression
files; the replay gate itself: test_pxp_apply.py.)"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pxp

from . import _rooms as van
from . import test_pxp_origins as bike
from ._rooms import (
    SAMPLE,
    _fixture_room,
    _rechain,
    msg,
    reference_room_agreed,
)

_ATOMS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from(["", "A", "B", "A2.1", "x", "0" * 64, "\ud800", 2**60, 1.5]),
    st.just([]),
    st.just({}),
)


def _paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _paths(item, (*path, i))


_REFERENCE = reference_room_agreed()


_REFERENCE_PATHS = [p for p in _paths(_REFERENCE) if p]


def test_reference_room_with_an_answered_escalation_imports() -> None:
    data = reference_room_agreed()
    room = pxp.Room.from_export(copy.deepcopy(data), head=data["ledger"][-1]["hash"])
    assert room.status == "agreed"
    assert room.escalations[0].answer == "Yes, up to 10."
    brief = room.brief()
    assert brief["ledger"]["verifies"] is True
    # the claim nobody made is carried as unverified, not a crash
    assert brief["unverified"] == ["A2.3", "zzz"]
    assert brief["depends_on"][1]["unknown"] is True
    again = pxp.Room.from_export(room.export())
    assert again.head == room.head
    assert again.status == "agreed"


@pytest.mark.parametrize(
    ("member", "value", "reason"),
    [("answer", "Yes, up to 1000.", "answer_mismatch"), ("answer_via", "mcp", "answer_mismatch")],
)
def test_an_answer_written_on_the_envelope_must_match_the_ledger(
    member: str, value: str, reason: str
) -> None:
    data = reference_room_agreed()
    data["envelopes"][0][member] = value
    with pytest.raises(pxp.PxpError) as caught:
        pxp.Room.from_export(data)
    assert caught.value.reason == reason


def test_an_answer_on_an_unanswered_envelope_is_refused() -> None:
    data = json.loads(SAMPLE.read_text(encoding="utf-8"))
    data["envelopes"][0]["answer"] = "forged"
    with pytest.raises(pxp.PxpError) as caught:
        pxp.Room.from_export(data)
    assert caught.value.reason == "answer_unrecorded"


def test_our_own_envelopes_still_must_number_claims_without_gaps() -> None:
    env = reference_room_agreed()["envelopes"][1]
    with pytest.raises(pxp.PxpError):
        pxp.validate_envelope({k: v for k, v in env.items() if k != "proposal_hash"})


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (
            lambda env: env["reviews"].append({"claim_id": "A2.3", "verdict": "conflict"}),
            "agreement",
        ),
        (
            lambda env: env["reviews"].__setitem__(2, {"claim_id": "A2.3", "verdict": "challenge"}),
            "agreement_disputed",
        ),
        (lambda env: env["accepts"].__setitem__("seq", 1), "agreement"),
        (lambda env: env["accepts"].__setitem__("proposal_hash", "1" * 64), "agreement"),
    ],
)
def test_an_imported_agreement_enforcement_would_refuse_is_refused(
    change: Callable[[dict[str, Any]], None], reason: str
) -> None:
    data = reference_room_agreed()
    change(data["envelopes"][2])
    if reason == "agreement" and data["envelopes"][2]["accepts"]["proposal_hash"] == "1" * 64:
        data["ledger"][-1]["data"]["proposal_hash"] = "1" * 64  # the agreement entry
    _rechain(data)
    pxp.verify_ledger(data["ledger"])  # the forged chain itself is consistent
    with pytest.raises(pxp.PxpError) as caught:
        pxp.Room.from_export(data)
    assert caught.value.reason == reason


def test_an_imported_agreement_on_a_dispute_cleared_by_an_answer_is_kept() -> None:
    room, now = van.active_room()
    claim = {"text": "Invoice shows 5500 EUR", "origin": "sourced", "ref": "invoice 17"}
    room.send(
        "A",
        msg(claims=[claim], proposal={"terms": ["5500 EUR"], "depends_on": ["new1"]}),
        now=now(),
    )
    room.send(
        "B",
        msg(
            "escalate",
            reviews=[{"claim_id": "A1.1", "verdict": "challenge"}],
            escalation={"question": "Accept?"},
        ),
        now=now(),
    )
    room.answer("B", "Yes.", now=now())
    room.send("B", msg("agree"), now=now())
    again = pxp.Room.from_export(room.export(), head=room.head)
    assert again.status == "agreed"


@given(st.lists(st.tuples(st.sampled_from(_REFERENCE_PATHS), _ATOMS, st.booleans()), max_size=3))
@settings(max_examples=150, deadline=None)
def test_a_mangled_reference_room_raises_only_pxp_errors(
    edits: list[tuple[tuple[Any, ...], Any, bool]],
) -> None:
    data = copy.deepcopy(_REFERENCE)
    for path, value, delete in edits:
        target: Any = data
        try:
            for key in path[:-1]:
                target = target[key]
            if delete and isinstance(target, dict):
                target.pop(path[-1], None)
            else:
                target[path[-1]] = copy.deepcopy(value)
        except (KeyError, IndexError, TypeError):
            continue
    try:
        room = pxp.Room.from_export(data)
    except pxp.PxpError:
        return
    room.view("A")
    room.export()
    if room.status in ("agreed", "ended"):
        pxp.brief_markdown(room.brief())


def test_an_imported_answer_is_not_shown_to_the_other_side() -> None:
    room = pxp.Room.from_export(reference_room_agreed())
    for seat in ("A", "B"):
        assert all("answer" not in e for e in room.view(seat).envelopes)
    assert "answer" not in room.export()["envelopes"][0]
    assert room.card("A") is not None
    assert room.card("A").to_json()["amendments"][0]["answer"] == "Yes, up to 10."


def test_the_reference_finalise_gap_room_hashes_and_imports_as_agreed() -> None:
    # finalgap01 of the reference's test fixtures: B's agreeing envelope is stored, the
    # agreement entry is not (the server stopped between the two)
    terms = ["Fixture term"]
    digest = pxp.proposal_hash(terms)
    assert digest == "f5ce04f61ac1fa32e918443654de22fabc564e8149b69f66c033b06f0c7814d3"
    sender = {"principal": "Fixture A", "seat": "A", "speaker": "proxy"}
    offer = {
        "pxp": "0",
        "room": "finalgap01",
        "seq": 1,
        "from": sender,
        "intent_hash": "83a05bea371eca4164e405717c3fdd17c7c2785b36d8bee359f0f36511f58dd7",
        "message": "Offer.",
        "claims": [],
        "reviews": [],
        "status": "continue",
        "proposal": {"terms": terms, "depends_on": []},
        "proposal_hash": digest,
    }
    accept = {
        **offer,
        "seq": 2,
        "from": {**sender, "seat": "B", "principal": "Fixture B"},
        "intent_hash": "c329ce370feb5414e0e0c75171360662489d4208626d355ebcae94afbe471bbc",
        "message": "Agreed.",
        "status": "agree",
        "accepts": {"seq": 1, "proposal_hash": digest},
    }
    del accept["proposal"], accept["proposal_hash"]
    data = _fixture_room("finalgap01", [offer, accept])
    assert [e["hash"] for e in data["ledger"]][-2:] == [
        "01e58ce2062fb822b5a94c3db2cfcc5847751a4564ddd2f59427ca7cf54caab8",
        "96cdcd95dfc21823d10fe880a302df7084b12cb405feb0514268f9e5707a4788",
    ]
    room = pxp.Room.from_export(data, head=data["ledger"][-1]["hash"])
    assert room.status == "agreed"
    assert [e.type for e in room.ledger][-2:] == ["envelope", "agreement"]
    assert room.brief()["agreement"]["terms"] == terms


@pytest.mark.parametrize("load", [pxp.load_room, pxp.ledger.load_ledger])
def test_deeply_nested_json_text_is_a_pxp_error(load: Callable[[str], Any]) -> None:
    with pytest.raises(pxp.PxpError):
        load("[" * 100_000)


def test_an_import_refuses_an_envelope_where_an_escalation_entry_is_owed() -> None:
    room, now = van.active_room()
    room.send("A", msg("escalate", escalation={"question": "Q?"}), now=now())
    room.answer("A", "Yes.", now=now())
    room.send("A", msg(), now=now())
    data = room.export()
    # drop the escalation entry from the middle and re-chain: A's two envelopes now follow
    # each other with no escalation recorded between them
    owed = ("escalation", "principal_answer")
    data["ledger"] = [e for e in data["ledger"] if e["type"] not in owed]
    data["seats"]["A"]["card"]["amendments"] = []
    data["envelopes"][1]["intent_hash"] = data["envelopes"][0]["intent_hash"]
    for i, entry in enumerate(data["ledger"], start=1):
        entry["n"] = i
    _rechain(data)
    with pytest.raises(pxp.PxpError) as caught:
        pxp.Room.from_export(data)
    assert caught.value.reason == "order"


def test_import_notes_what_this_library_would_flag() -> None:
    """A looser server's room (a claim citing the other side kept stated, no flag): the
    import is not refused, the room holds the claim assumed and the brief says why."""
    from pxp.server import RoomService, SeatGrant

    now = bike.clock()
    room = pxp.Room.open("forged1", topic="Bike", now=now())  # an id the server serves
    room.seal("A", bike.CARD_A, now=now())
    room.seal("B", bike.CARD_B, now=now(), via="mcp")
    laundered = {"text": "Ben will pay 460 EUR", "origin": "stated", "ref": "Ben said so"}
    room.send("A", bike.msg(claims=[laundered]), now=now())
    room.send("B", bike.msg(proposal={"terms": ["440 EUR"]}), now=now())
    room.send("A", bike.msg("agree"), now=now())
    assert room.status == "agreed"
    flagged = room.envelopes[0]["protocol_flags"]
    data = json.loads(json.dumps(room.export()))
    envelope = data["envelopes"][0]
    del envelope["protocol_flags"]
    envelope["claims"][0]["origin"] = "stated"
    next(e for e in data["ledger"] if e["type"] == "envelope")["data"]["envelope_hash"] = (
        pxp.envelope_hash(envelope)
    )
    for entry in data["ledger"]:
        entry.pop("prev"), entry.pop("hash"), entry.pop("n")
    ledger = pxp.ledger.Ledger()
    for entry in data["ledger"]:
        ledger.append(entry["type"], entry["at"], entry["data"])
    data["ledger"] = ledger.to_json()
    svc = RoomService()
    made = svc.import_room(data)  # not refused: reference rooms are looser
    brief = svc.brief_data(SeatGrant(made.room_id, "A", "seat"))
    noted = [f["flag"] for f in brief["brief"]["protocol_flags"] if f["flag"].startswith("Imp")]
    assert noted == [
        f"Import: would be flagged here: {flagged[0]}",
        "Import: claim A1.1 would be stored assumed here, and is held assumed.",
    ]
    assert "Import: would be flagged here" in brief["markdown"]
    assert "hash chain verifies (integrity only, not authenticity)." in brief["markdown"]


def test_an_honest_room_imports_without_notes() -> None:
    room, now = bike.active_room()
    room.send("A", bike.msg(claims=[{"text": "x", "origin": "stated", "ref": "goal"}]), now=now())
    room.send("B", bike.msg(proposal={"terms": ["440 EUR, ship abroad"]}), now=now())
    room.send("A", bike.msg("agree"), now=now())
    assert pxp.load_room(json.loads(json.dumps(room.export()))).import_notes == ()


def test_the_simulated_room_imports_into_a_server() -> None:
    """``pxp simulate --export`` wrote a room id (``sim-shop-rebuild``) the server's import
    refused (room ids in links are letters and digits), so our own export never served."""
    from pxp.server import RoomService, SeatGrant

    svc = RoomService()
    made = svc.import_room(json.loads(json.dumps(pxp.simulate().export())))
    assert made.room_id == pxp.simulate().id
    brief = svc.brief_data(SeatGrant(made.room_id, "A", "seat"))
    assert brief["brief"]["ledger"]["verifies"] is True
