"""§12 requester builders (issue 19 #11): requester-side builders and ``ItemId`` with a
versioned ext."""

from __future__ import annotations

import pytest

import handoff

from .ext_fixtures import TS, registry

ITEM = handoff.ItemId("acts", "web", "roof")


def test_item_id_accepts_the_spelling_records_use() -> None:
    reg = registry()
    raised = handoff.make_raised(reg, ITEM, {"text": "Pay the roofer"}, by="agent-1", ts=TS)
    reg.add(raised)
    versioned = handoff.ItemId("acts/0.3", "web", "roof")
    assert versioned == ITEM
    assert reg.state(versioned).state == "open"
    assert reg.records(versioned) == reg.records(ITEM) != []


def test_raise_amend_note_settle_round_trip() -> None:
    reg = registry()
    raised = handoff.make_raised(reg, ITEM, {"text": "Pay the roofer"}, by="agent-1", ts=TS)
    assert reg.add(raised).status == "accepted"
    with pytest.raises(handoff.HandoffError) as caught:
        handoff.make_raised(reg, ITEM, {"text": "Pay again"}, by="agent-1", ts=TS)
    assert caught.value.reason == "key_reused"
    terms = {"text": "Pay the roofer", "amount": "800.00", "currency": "EUR"}
    amended = handoff.make_amended(reg, ITEM, terms, by="agent-1", ts=TS)
    assert (amended["terms_rev"], amended["supersedes"]) == (2, [raised["id"]])
    reg.add(amended)
    note = handoff.make_note(reg, ITEM, "the roofer called", by="agent-1", ts=TS)
    reg.add(note)
    state = reg.state(ITEM)
    assert (state.need, state.terms_rev, state.notes) == (amended["id"], 2, (note["id"],))
    # the same content at another time is the same record: a repeat
    again = handoff.make_note(
        reg, ITEM, "the roofer called", by="agent-1", ts="2027-01-01T00:00:00Z"
    )
    assert again["id"] == note["id"]
    assert reg.add(again).status == "duplicate"


def test_builders_refuse_what_would_not_be_admitted() -> None:
    reg = registry()
    with pytest.raises(handoff.HandoffError) as caught:
        handoff.make_raised(reg, ITEM, {"text": " padded "}, by="agent-1", ts=TS)
    assert caught.value.reason == "text_invalid"
    with pytest.raises(handoff.HandoffError) as caught:
        handoff.make_raised(reg, ITEM, {"text": "Pay"}, by="mallory", ts=TS)
    assert caught.value.code == "ownership"
    with pytest.raises(handoff.HandoffError) as caught:
        handoff.make_amended(reg, ITEM, {"text": "Pay"}, by="agent-1", ts=TS)
    assert caught.value.reason == "need_missing"


def test_records_filters_select_what_a_plain_filter_selects() -> None:
    reg = registry()
    raised = handoff.make_raised(reg, ITEM, {"text": "Pay the roofer"}, by="agent-1", ts=TS)
    reg.add(raised)
    amended = handoff.make_amended(reg, ITEM, {"text": "Pay 800"}, by="agent-1", ts=TS)
    reg.add(amended)
    reg.add(handoff.make_note(reg, ITEM, "called", by="agent-1", ts=TS))
    every = reg.records(ITEM)
    assert len(every) == 3
    need = ("raised", "amended")
    for rev in (1, 2, 3):
        plain = [r for r in every if r["type"] in need and r.get("terms_rev") == rev]
        assert reg.records(ITEM, types=need, terms_rev=rev) == plain
    for record in every:
        assert reg.records(ITEM, id=record["id"]) == [record]
        assert reg.records(ITEM, id=record["id"], types=("settled",)) == []
    assert reg.records(ITEM, types=("note",)) == [r for r in every if r["type"] == "note"]
