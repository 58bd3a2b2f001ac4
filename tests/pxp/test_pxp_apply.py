"""Spec §4 and §8: one gate, :meth:`pxp.Room.apply`, for live actions and import.

Every ledger entry, written live or read from an export, goes through ``Room.apply``, which
asks the transition table only; an imported history is refused with the code live play
gives for the same act. The re-chained forgeries here are attackers without the head: each
must be refused, and a refused entry changes nothing. (Forgeries of the reference's room
shape are vectors: ``vectors/pxp/import-room.json``, ``replay-attacks-*``.)
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

import pytest

import pxp
from pxp.ledger import entry_hash
from pxp.rules import ENTRY_ACTIONS, FOLLOW_UPS, TRANSITIONS

CARD_A = {"principal": {"name": "Ana"}, "goal": "Sell the van", "must_haves": ["5000 EUR"]}
CARD_B = {"principal": {"name": "Bo"}, "goal": "Buy a van", "must_haves": ["Before June"]}


def _clock() -> Callable[[], datetime]:
    t = [datetime(2026, 1, 1, tzinfo=UTC)]

    def now() -> datetime:
        t[0] += timedelta(seconds=1)
        return t[0]

    return now


def _agreed() -> tuple[pxp.Room, Callable[[], datetime]]:
    now = _clock()
    room = pxp.Room.open("van-1", topic="Van", now=now())
    room.join("A", agent="ana-agent", now=now())
    room.seal("A", CARD_A, now=now())
    room.seal("B", CARD_B, now=now(), via="mcp")
    room.send(
        "A",
        {"message": "5000?", "status": "continue", "proposal": {"terms": ["5000 EUR"]}},
        now=now(),
    )
    room.send("B", {"message": "Yes", "status": "agree"}, now=now())
    assert room.status == "agreed"
    return room, now


def _rechain(ledger: list[dict[str, Any]]) -> None:
    prev = "0" * 64
    for n, entry in enumerate(ledger, start=1):
        entry["n"], entry["prev"] = n, prev
        entry["hash"] = entry_hash(prev, n, entry["type"], entry["at"], entry["data"])
        prev = entry["hash"]


def _forged(export: dict[str, Any], at: int, type_: str, data: dict[str, Any]) -> dict[str, Any]:
    forged = copy.deepcopy(export)
    ledger = forged["ledger"]
    ledger.insert(at, {"type": type_, "at": ledger[at - 1]["at"], "data": data})
    _rechain(ledger)
    return forged


def _refusal(export: dict[str, Any]) -> tuple[str, str | None]:
    with pytest.raises(pxp.PxpProtocolError) as caught:
        pxp.Room.from_export(export)
    return caught.value.code, caught.value.reason


def test_every_entry_type_names_a_table_action_or_completes_one() -> None:
    actions = {action for _state, action in TRANSITIONS}
    assert set(ENTRY_ACTIONS.values()) <= actions
    assert set(FOLLOW_UPS.values()) <= {o for outcomes in TRANSITIONS.values() for o in outcomes}
    assert set(ENTRY_ACTIONS) | set(FOLLOW_UPS) | {"room_opened"} >= set(pxp.ledger.ENTRY_TYPES)


def test_an_imported_room_is_the_live_room_entry_for_entry() -> None:
    room, _ = _agreed()
    again = pxp.Room.from_export(room.export(), head=room.head)
    assert again.export() == room.export()
    assert again.import_notes == room.import_notes == ()


def test_a_room_built_by_apply_alone_matches_the_live_one() -> None:
    """The public gate, used directly: each entry with its body."""
    room, _ = _agreed()
    copy_ = pxp.Room("van-1")
    bodies: dict[int, Any] = {
        2: room.card("A"),
        3: room.card("B"),
        4: room.envelopes[0],
        5: room.envelopes[1],
    }
    for i, entry in enumerate(room.ledger):
        copy_.apply(entry, bodies.get(i))
    assert copy_.export() == room.export()
    assert copy_.head == room.head


@pytest.mark.parametrize(
    ("where", "type_", "data", "refusal"),
    [
        # an agent joined twice with the same name and mode: live writes nothing
        (
            3,
            "agent_joined",
            {"seat": "A", "agent": "ana-agent", "mode": "external"},
            ("import_invalid", "order"),
        ),
        # a join whose mode live play refuses
        (
            3,
            "agent_joined",
            {"seat": "B", "agent": "bo", "mode": "root"},
            ("import_invalid", "mode"),
        ),
        # a seat that does not exist
        (
            3,
            "agent_joined",
            {"seat": "C", "agent": "bo", "mode": "external"},
            ("seat_invalid", None),
        ),
        # a principal link issued to an empty agent name
        (3, "principal_link", {"seat": "A", "agent": ""}, ("agent_invalid", None)),
        # the room opened twice
        (2, "room_opened", {"topic": "Van", "protocol": "PXP/0"}, ("import_invalid", "order")),
        # an entry between the agreeing envelope and the agreement it owes
        (
            6,
            "agent_joined",
            {"seat": "B", "agent": "bo", "mode": "external"},
            ("import_invalid", "order"),
        ),
        # a follow-up entry nothing requires
        (
            5,
            "agreement",
            {"proposal_hash": "0" * 64, "proposed_by": "A", "accepted_by": "B"},
            ("import_invalid", "order"),
        ),
        # a principal link issued after the room finished
        (7, "principal_link", {"seat": "A", "agent": None}, ("invalid_transition", "agreed_link")),
        # a release after the room finished
        (
            7,
            "seat_released",
            {"seat": "A", "agent": "ana-agent"},
            ("invalid_transition", "agreed_release"),
        ),
        # an answer with no escalation pending
        (
            5,
            "principal_answer",
            {"seat": "A", "via": "web"},
            ("invalid_transition", "active_answer"),
        ),
        # an entry type nobody knows
        (6, "refund", {"seat": "A"}, ("import_invalid", "entry_type")),
    ],
)
def test_a_forged_entry_is_refused_with_the_live_code(
    where: int, type_: str, data: dict[str, Any], refusal: tuple[str, str | None]
) -> None:
    room, _ = _agreed()
    assert _refusal(_forged(room.export(), where, type_, data)) == refusal


def test_a_forged_turn_limit_and_a_forged_seal_channel_are_refused() -> None:
    now = _clock()
    room = pxp.Room.open("van-2", topic="Van", now=now(), max_turns=2)
    room.seal("A", CARD_A, now=now())
    room.seal("B", CARD_B, now=now())
    room.send("A", {"message": "a", "status": "continue"}, now=now())
    room.send("B", {"message": "b", "status": "continue"}, now=now())
    assert room.status == "ended"
    assert room.ledger[-1].type == "turn_limit"
    export = room.export()
    export["ledger"][-1]["data"]["max_turns"] = 3
    _rechain(export["ledger"])
    assert _refusal(export) == ("import_invalid", "turn_limit")
    export = room.export()
    export["ledger"][1]["data"]["via"] = "fax"
    _rechain(export["ledger"])
    assert _refusal(export) == ("import_invalid", "via")


def test_live_play_and_apply_refuse_a_link_in_a_finished_room_alike() -> None:
    room, now = _agreed()
    with pytest.raises(pxp.PxpProtocolError) as live:
        room.issue_principal_link("A", agent=None, now=now())
    entry = {
        "type": "principal_link",
        "at": room.ledger[-1].at,
        "data": {"seat": "A", "agent": None},
    }
    with pytest.raises(pxp.PxpProtocolError) as applied:
        room.apply(entry)
    assert (live.value.code, live.value.reason) == (applied.value.code, applied.value.reason)
    assert (live.value.code, live.value.reason) == ("invalid_transition", "agreed_link")


def test_a_refused_entry_changes_nothing() -> None:
    room, _ = _agreed()
    before = json.dumps(room.export(), sort_keys=True)
    bad = [
        {"type": "card_sealed", "at": "x", "data": {"seat": "A"}},
        {"type": "agreement", "at": "x", "data": {}},
        {"type": "envelope", "at": "x", "data": {"seq": 3, "seat": "A"}},
        {"type": "seat_contested", "at": "x", "data": {"seat": "A", "agent": "x", "more": 1}},
        {"type": "seat_contested", "at": "x", "data": {"seat": "A", "agent": float("nan")}},
        {"type": "agent_joined", "at": "x", "data": {"seat": "A", "agent": "x"}, "n": 99},
        {"type": "agent_joined", "at": "x", "data": {"seat": "A", "agent": "x"}, "hash": "0" * 64},
        {"type": 3, "at": "x", "data": {}},
        "not an entry",
    ]
    for entry in bad:
        with pytest.raises(pxp.PxpError):
            room.apply(entry)  # type: ignore[arg-type]
        assert json.dumps(room.export(), sort_keys=True) == before


def test_an_export_naming_an_agent_the_ledger_never_seated_gets_none() -> None:
    """The seats' agents are derived from the ledger like the status, never read from the
    export: an agent written into the export alone sits nowhere."""
    room, _ = _agreed()
    export = room.export()
    export["seats"]["B"]["agent"] = "forged-agent"
    again = pxp.Room.from_export(export)
    assert again.agent("B") is None
    assert again.agents("B") == ()


def test_seat_tokens_live_play_would_refuse_open_no_seat_after_import() -> None:
    room, _ = _agreed()
    export = room.export()
    export["seats"]["A"]["token"] = export["seats"]["B"]["token"] = "x" * 20
    again = pxp.Room.from_export(export)
    assert again.seat_for_token("x" * 20) is None
    export["seats"]["A"]["token"], export["seats"]["B"]["token"] = "short", "y" * 20
    again = pxp.Room.from_export(export)
    assert again.seat_for_token("short") is None
    assert again.seat_for_token("y" * 20) == "B"


def test_an_export_with_an_empty_ledger_is_refused() -> None:
    """A room exists only from its room_opened entry: an export whose ledger is empty (or
    holds no entry at all once a forger truncated it) opens nothing."""
    empty = {"id": "x", "ledger": [], "seats": {}, "envelopes": []}
    assert _refusal(empty) == ("import_invalid", "first_entry")


# ------------------------------------------------------------------ review i25 (08:10)


def _reenvelope(export: dict[str, Any], seq: int, change: Callable[[dict[str, Any]], None]) -> None:
    env = export["envelopes"][seq - 1]
    change(env)
    entry = next(e for e in export["ledger"] if e["type"] == "envelope" and e["data"]["seq"] == seq)
    entry["data"]["envelope_hash"] = pxp.envelope_hash(env)
    entry["data"]["status"] = env["status"]
    _rechain(export["ledger"])


@pytest.mark.parametrize("seat", [["A"], {"s": "A"}, 1])
def test_an_entry_whose_seat_is_not_a_string_is_refused_not_a_crash(seat: Any) -> None:
    room, _ = _agreed()
    export = room.export()
    export["ledger"][2]["data"]["seat"] = seat
    _rechain(export["ledger"])
    assert _refusal(export) == ("seat_invalid", None)


def test_an_agree_without_accepts_seq_takes_the_proposals_seq() -> None:
    room, _ = _agreed()
    export = room.export()
    _reenvelope(export, 2, lambda env: env["accepts"].pop("seq"))
    again = pxp.Room.from_export(export)
    agreement = again.agreement
    assert agreement is not None
    assert agreement["proposal_seq"] == 1


def test_a_laundered_origin_is_held_assumed_and_noted() -> None:
    """Review i25 #3: the export says stated where enforcement stores assumed (its flag
    sentence kept): the room holds the claim assumed and the brief says so."""
    now = _clock()
    room = pxp.Room.open("van-3", topic="Van", now=now())
    room.seal("A", CARD_A, now=now())
    room.seal("B", CARD_B, now=now())
    claim = {"text": "B will pay 5800 EUR", "origin": "stated", "ref": "seat B said so"}
    room.send("A", {"message": "m", "status": "continue", "claims": [claim]}, now=now())
    assert room.claims["A1.1"].origin == "assumed"
    export = room.export()
    _reenvelope(export, 1, lambda env: env["claims"][0].__setitem__("origin", "stated"))
    again = pxp.Room.from_export(export)
    assert again.claims["A1.1"].origin == "assumed"
    assert not again.claims["A1.1"].verified
    assert any("A1.1 would be stored assumed" in n["flag"] for n in again.import_notes)


def test_apply_refuses_an_envelope_whose_seq_is_not_the_entrys() -> None:
    room, _ = _agreed()
    env = room.envelopes[0]
    fresh = pxp.Room("van-1")
    for entry in room.ledger.entries[:4]:
        body = {2: room.card("A"), 3: room.card("B")}.get(entry.n - 1)
        fresh.apply(entry, body)
    env["seq"] = 5
    data = {"seq": 1, "seat": "A", "status": "continue", "envelope_hash": pxp.envelope_hash(env)}
    with pytest.raises(pxp.PxpProtocolError) as caught:
        fresh.apply({"type": "envelope", "at": room.ledger[4].at, "data": data}, env)
    assert (caught.value.code, caught.value.reason) == ("import_invalid", "envelope")


def test_a_claim_id_with_a_trailing_newline_is_refused() -> None:
    room, _ = _agreed()
    export = room.export()
    now = _clock()
    live = pxp.Room.open("van-5", topic="Van", now=now())
    live.seal("A", CARD_A, now=now())
    live.seal("B", CARD_B, now=now())
    live.send(
        "A",
        {"message": "m", "status": "continue", "claims": [{"text": "x", "origin": "assumed"}]},
        now=now(),
    )
    export = live.export()
    _reenvelope(export, 1, lambda env: env["claims"][0].__setitem__("id", "A1.1\n"))
    assert _refusal(export) == ("import_invalid", "envelope")


def test_a_ledger_nested_too_deeply_is_a_ledger_error() -> None:
    deep: Any = 0
    for _ in range(500):
        deep = [deep]
    entry = {"n": 1, "type": "room_opened", "at": "x", "data": {"d": deep}}
    entry.update({"prev": "0" * 64, "hash": "0" * 64})
    with pytest.raises(pxp.errors.LedgerError):
        pxp.verify_ledger([entry])
    with pytest.raises(pxp.PxpProtocolError):
        pxp.wire.canonical(deep)


def test_the_room_owns_the_data_it_appends() -> None:
    room = pxp.Room.open("van-6", topic="Van", now=datetime(2026, 1, 1, tzinfo=UTC))
    data = {"seat": "A", "agent": "alpha", "mode": "external"}
    room.apply({"type": "agent_joined", "at": room.ledger[0].at, "data": data})
    data["agent"] = "mallory"
    assert room.ledger[-1].data["agent"] == "alpha"
    pxp.verify_ledger(room.ledger.to_json())


def test_a_ledger_of_entry_objects_imports_as_its_json_does() -> None:
    room, _ = _agreed()
    export = room.export()
    export["ledger"] = list(room.ledger.entries)
    assert pxp.Room.from_export(export).head == room.head


# ------------------------------------------------------------------ review i25b: one answer


def _offer_room(card_b: dict[str, Any] | None = None) -> tuple[pxp.Room, dict[str, Any]]:
    """Seat A offers 5500 EUR, resting on its claim A1.1; seat B has not answered yet."""
    now = _clock()
    room = pxp.Room.open("van-7", topic="Van", now=now())
    room.seal("A", CARD_A, now=now())
    room.seal("B", card_b or CARD_B, now=now())
    claim = {"text": "The van was serviced", "origin": "assumed"}
    offer = {"terms": ["5500 EUR, pay in cash"], "depends_on": ["new1"]}
    room.send(
        "A", {"message": "m", "status": "continue", "claims": [claim], "proposal": offer}, now=now()
    )
    return room, {"seq": 1, "proposal_hash": pxp.proposal_hash(offer["terms"])}


def _forge_agreement(
    room: pxp.Room, accepts: dict[str, Any], change: Callable[[dict[str, Any]], None]
) -> dict[str, Any]:
    """Seat B's envelope 2 rewritten to agree (``change`` shapes it), then the agreement
    entry: a re-chained forgery, checked without a head."""
    export = room.export()

    def agree(env: dict[str, Any]) -> None:
        env.pop("protocol_flags", None)
        env.update({"status": "agree", "accepts": accepts})
        change(env)

    _reenvelope(export, 2, agree)
    data = {"proposal_hash": accepts["proposal_hash"], "proposed_by": "A", "accepted_by": "B"}
    export["ledger"].append({"type": "agreement", "at": export["ledger"][-1]["at"], "data": data})
    _rechain(export["ledger"])
    return export


ALL_REVIEWED = [{"claim_id": "A1.1", "verdict": "accept"}]


def test_an_agreement_over_the_accepting_seats_must_never_is_refused() -> None:
    """Live, seat B agreeing to a term its card forbids is recorded as continue (flag
    agree_must_never): an export that shows it agreed reaches no agreement either."""
    room, accepts = _offer_room({**CARD_B, "must_never": ["Pay in cash"]})
    live = room.send("B", {"message": "ok", "status": "agree", "reviews": ALL_REVIEWED}, now=_now())
    assert live.status == "active"
    forged = _forge_agreement(room, accepts, lambda env: None)
    assert _refusal(forged) == ("import_invalid", "agreement_withheld")


def test_an_agreement_carrying_its_own_counter_proposal_is_refused() -> None:
    room, accepts = _offer_room()
    counter = {"terms": ["5000 EUR"], "depends_on": []}
    draft = {"message": "ok", "status": "agree", "reviews": ALL_REVIEWED, "proposal": counter}
    assert room.send("B", draft, now=_now()).status == "active"

    def counter_offer(env: dict[str, Any]) -> None:
        env["proposal"] = counter
        env["proposal_hash"] = pxp.proposal_hash(counter["terms"])

    # the envelope's own shape refuses it (an agree carries no proposal)
    assert _refusal(_forge_agreement(room, accepts, counter_offer)) == (
        "import_invalid",
        "envelope",
    )


def test_an_agreement_resting_on_a_claim_it_never_reviewed_is_refused() -> None:
    """Live, a claim of the other side left unreviewed is recorded as challenged, and an
    agree whose proposal rests on it is withheld: the export that omits the review (so
    no dispute shows in it) is refused too."""
    room, accepts = _offer_room()
    assert room.send("B", {"message": "ok", "status": "agree"}, now=_now()).status == "active"
    unreviewed = _forge_agreement(room, accepts, lambda env: env.__setitem__("reviews", []))
    assert _refusal(unreviewed) == ("import_invalid", "agreement_withheld")
    reviewed = _forge_agreement(room, accepts, lambda env: env.__setitem__("reviews", ALL_REVIEWED))
    assert pxp.Room.from_export(reviewed).status == "agreed"  # the honest agreement imports


def test_a_proposal_live_play_would_not_record_is_not_held_and_cannot_be_agreed() -> None:
    """Seat A proposes a term its own card forbids: live, the proposal is not recorded.
    An export whose envelope carries it anyway (flag dropped) imports with the proposal
    not held, noted, and seat B's agreement to it is refused."""
    now = _clock()
    room = pxp.Room.open("van-8", topic="Van", now=now())
    room.seal("A", {**CARD_A, "must_never": ["Pay in cash"]}, now=now())
    room.seal("B", CARD_B, now=now())
    offer = {"terms": ["5500 EUR, pay in cash"], "depends_on": []}
    sent = room.send("A", {"message": "m", "status": "continue", "proposal": offer}, now=now())
    assert "proposal" not in sent.envelope
    room.send("B", {"message": "hm", "status": "continue"}, now=now())
    export = room.export()

    def propose(env: dict[str, Any]) -> None:
        env.pop("protocol_flags")
        env["proposal"], env["proposal_hash"] = offer, pxp.proposal_hash(offer["terms"])

    _reenvelope(export, 1, propose)
    held = pxp.Room.from_export(copy.deepcopy(export))
    assert held.view("B").other_proposal is None
    assert any("proposal of envelope 1" in n["flag"] for n in held.import_notes)
    accepts = {"seq": 1, "proposal_hash": pxp.proposal_hash(offer["terms"])}
    forged = _forge_agreement(held, accepts, lambda env: None)
    assert _refusal(forged) == ("import_invalid", "agreement")


_T = [datetime(2026, 1, 2, tzinfo=UTC)]


def _now() -> datetime:
    _T[0] += timedelta(seconds=1)
    return _T[0]


# ------------------------------------------------------------------ review i25b: max_turns


def test_the_turn_limit_is_in_the_ledger_and_an_export_cannot_change_it() -> None:
    now = _clock()
    room = pxp.Room.open("van-9", topic="Van", now=now(), max_turns=4)
    assert dict(room.ledger[0].data) == {"topic": "Van", "protocol": "PXP/0", "max_turns": 4}
    export = room.export()
    export["maxTurns"] = 40
    assert _refusal(export) == ("import_invalid", "max_turns")
    del export["maxTurns"]  # an export without it takes the ledger's
    assert pxp.Room.from_export(export).max_turns == 4
    forged = room.export()
    forged["ledger"][0]["data"]["max_turns"] = 40  # the chain breaks at entry 0
    with pytest.raises(pxp.errors.LedgerError) as caught:
        pxp.Room.from_export(forged)
    assert (caught.value.reason, caught.value.index) == ("hash_mismatch", 0)


@pytest.mark.parametrize("value", [1, 1001, "10", True, None])
def test_a_turn_limit_live_play_cannot_open_with_is_refused(value: Any) -> None:
    room = pxp.Room.open("van-10", topic="Van", now=datetime(2026, 1, 1, tzinfo=UTC))
    export = room.export()
    export["ledger"][0]["data"]["max_turns"] = value
    export.pop("maxTurns")
    _rechain(export["ledger"])
    assert _refusal(export) == ("import_invalid", "max_turns")


# ------------------------------------------------------------------ review i25b: entry form


def _every_entry_type() -> list[pxp.Room]:
    """Live rooms whose ledgers hold every entry type between them."""
    now = _clock()
    agreed = pxp.Room.open("forms-1", topic="Van", now=now())
    agreed.join("A", agent="ana-agent", now=now())
    agreed.issue_principal_link("A", agent="ana-agent", now=now())
    agreed.rejoin("A", agent="ana-agent", now=now())
    agreed.join("B", agent="bo-agent", now=now())
    agreed.release("B", now=now())
    agreed.seal("A", CARD_A, now=now())
    agreed.seal("B", CARD_B, now=now(), via="mcp")
    question = {"question": "May I?", "reason": "price"}
    agreed.send("A", {"message": "q", "status": "escalate", "escalation": question}, now=now())
    agreed.answer("A", "Yes.", now=now(), via="mcp")
    offer = {"message": "5000?", "status": "continue", "proposal": {"terms": ["5000 EUR"]}}
    agreed.send("A", offer, now=now())
    agreed.send("B", {"message": "Yes", "status": "agree"}, now=now())
    assert agreed.status == "agreed"
    ended = pxp.Room.open("forms-2", topic="Van", now=now(), max_turns=2)
    ended.seal("A", CARD_A, now=now())
    ended.seal("B", CARD_B, now=now())
    ended.send("A", {"message": "a", "status": "continue"}, now=now())
    ended.send("B", {"message": "b", "status": "continue"}, now=now())
    contested = pxp.Room.open("forms-3", topic="Van", now=now())
    contested.join("B", agent="bo-agent", now=now())
    contested.contest("B", agent="sneaky", now=now())
    rooms = [agreed, ended, contested]
    types = {e.type for r in rooms for e in r.ledger}
    assert types >= set(pxp.ledger.ENTRY_TYPES) | {
        "seat_contested",
        "seat_released",
        "seat_rejoined",
    }
    return rooms


FIXED = {"room_opened": ("protocol", "PXP/1"), "principal_answer": ("speaker", "proxy")}
"""Members live play always writes with one value, and a value it never writes."""


def _set_member(entry: dict[str, Any], *, key: str, value: Any) -> None:
    entry["data"][key] = value


def _entry_cases() -> list[tuple[str, pxp.Room, int, Callable[[dict[str, Any]], None], str]]:
    """One case per entry and mutation class, derived mechanically from live ledgers."""
    cases: list[tuple[str, pxp.Room, int, Callable[[dict[str, Any]], None], str]] = []
    times = [
        "2026-01-01T00:00:01Z",  # no milliseconds
        "2026-01-01T00:00:01.000+00:00",  # an offset, not Z
        "2026-01-01 00:00:01.000Z",  # a space
        "2026-02-30T00:00:01.000Z",  # no such day
        "2026-01-01T00:00:01.000000Z",  # microseconds
        "\u0662\u0660\u0662\u0666-01-01T00:00:01.000Z",  # a year in Arabic-Indic digits
        "\uff12\uff10\uff12\uff16-01-01T00:00:01.000Z",  # a year in full-width digits
        "",
    ]
    for room in _every_entry_type():
        for i, entry in enumerate(room.ledger):
            name = f"{room.id}-{i}-{entry.type}"
            cases.append(
                (
                    f"{name}-extra",
                    room,
                    i,
                    lambda e: e["data"].__setitem__("note", 1),
                    "entry_members",
                )
            )
            for t in times:
                cases.append(
                    (f"{name}-at-{t}", room, i, lambda e, t=t: e.__setitem__("at", t), "entry_time")
                )
            if entry.type in FIXED:
                key, value = FIXED[entry.type]
                change = partial(_set_member, key=key, value=value)
                cases.append((f"{name}-{key}", room, i, change, "entry_value"))
    return cases


ENTRY_CASES = _entry_cases()


@pytest.mark.parametrize(
    ("room", "index", "change", "reason"),
    [c[1:] for c in ENTRY_CASES],
    ids=[c[0] for c in ENTRY_CASES],
)
def test_an_entry_live_play_could_not_have_written_is_refused(
    room: pxp.Room, index: int, change: Callable[[dict[str, Any]], None], reason: str
) -> None:
    export = room.export()
    assert pxp.Room.from_export(copy.deepcopy(export)).head == room.head  # the base imports
    change(export["ledger"][index])
    _rechain(export["ledger"])
    with pytest.raises(pxp.PxpProtocolError) as caught:
        pxp.Room.from_export(export)
    assert (caught.value.code, caught.value.reason) == ("import_invalid", reason)
    assert f"ledger entry {index} " in caught.value.message
