"""Claim origins that cannot be laundered, must-nevers inside bundled terms, authority the
card really gives, and principal answers that confirm claims (issue 20, findings 4, 5, 7)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

import pxp
from pxp.rules import compact, contains_words, hidden_characters, normalize

from . import _rooms as van

CARD_A = {
    "principal": {"name": "Ana"},
    "goal": "Sell the bike for a fair price.",
    "must_haves": ["At least 400 EUR"],
    "may_agree_to": ["440 EUR"],
    "must_never": ["ship abroad"],
    "known_facts": ["The bike was serviced in May"],
}
CARD_B = {
    "principal": {"name": "Bo"},
    "goal": "Buy a bike.",
    "must_haves": ["Below 500 EUR"],
    "known_facts": ["I live in Porto"],
}


def clock() -> Callable[[], datetime]:
    ticks: Iterator[datetime] = (
        datetime(2026, 3, 1, tzinfo=UTC) + timedelta(seconds=i) for i in range(10_000)
    )
    return lambda: next(ticks)


def active_room() -> tuple[pxp.Room, Callable[[], datetime]]:
    now = clock()
    room = pxp.Room.open("room-20", topic="Bike", now=now())
    room.seal("A", CARD_A, now=now())
    room.seal("B", CARD_B, now=now(), via="mcp")
    return room, now


def msg(status: str = "continue", **extra: Any) -> dict[str, Any]:
    return {"message": "m", "status": status, **extra}


# ------------------------------------------------------------------ finding 4: origins


def test_repeating_an_assumption_tagged_sourced_does_not_verify_it() -> None:
    room, now = active_room()
    guess = "The buyer can collect on Sunday"
    room.send("A", msg(claims=[{"text": guess, "origin": "assumed"}]), now=now())
    laundered = {"text": guess + ".", "origin": "sourced", "ref": "https://example.com/x"}
    result = room.send(
        "B",
        msg(reviews=[{"claim_id": "A1.1", "verdict": "accept"}], claims=[laundered]),
        now=now(),
    )
    assert result.envelope["claims"][0]["origin"] == "assumed"
    assert result.flags == (
        pxp.rules.FLAG_SENTENCES["restated_assumption"].format(claim="B2.1", cited="A1.1"),
    )
    assert not room.claims["B2.1"].verified


@pytest.mark.parametrize(
    ("ref", "flag_name"),
    [
        ("goal", "stated_text_not_in_clause"),
        ("must_haves[0]", "stated_text_not_in_clause"),
        ("my principal told me", "stated_cites_missing_clause"),
        ("known_facts[3]", "stated_cites_missing_clause"),
    ],
)
def test_a_stated_claim_must_cite_a_clause_that_holds_its_text(ref: str, flag_name: str) -> None:
    room, now = active_room()
    claim = {"text": "The buyer pays the shipping", "origin": "stated", "ref": ref}
    result = room.send("A", msg(claims=[claim]), now=now())
    assert result.envelope["claims"][0]["origin"] == "assumed"
    assert result.flags == (pxp.rules.FLAG_SENTENCES[flag_name].format(claim="A1.1", clause=ref),)


@pytest.mark.parametrize(
    ("text", "ref"),
    [
        ("The bike was serviced in May", "known_facts[0]"),
        ("serviced in May", "known_facts[0]"),  # the clause holds the text
        ("at least 400 eur!", "must_haves[0]"),  # equal after the shared normaliser
    ],
)
def test_a_stated_claim_its_clause_holds_stays_stated(text: str, ref: str) -> None:
    room, now = active_room()
    result = room.send("A", msg(claims=[{"text": text, "origin": "stated", "ref": ref}]), now=now())
    assert result.envelope["claims"][0]["origin"] == "stated"
    assert result.flags == ()


def test_the_brief_shows_every_claims_ref() -> None:
    room, now = active_room()
    claims = [
        {"text": "The bike was serviced in May", "origin": "stated", "ref": "known_facts[0]"},
        {"text": "Parts cost 90 EUR", "origin": "sourced", "ref": "invoice 12"},
    ]
    room.send(
        "A",
        msg(claims=claims, proposal={"terms": ["440 EUR"], "depends_on": ["new1", "new2"]}),
        now=now(),
    )
    reviews = [{"claim_id": "A1.1", "verdict": "accept"}, {"claim_id": "A1.2", "verdict": "accept"}]
    room.send("B", msg("agree", reviews=reviews), now=now())
    text = pxp.brief_markdown(room.brief())
    assert "A1.1 (Ana, stated from known_facts[0], verified)" in text
    assert "A1.2 (Ana, sourced from invoice 12, verified)" in text


# ------------------------------------------------------------------ finding 5: bundled terms


def test_agreeing_to_a_bundled_term_holding_a_must_never_is_flagged() -> None:
    room, now = active_room()
    room.send("A", msg(), now=now())
    room.send("B", msg(proposal={"terms": ["440 EUR, ship abroad"]}), now=now())
    result = room.send("A", msg("agree"), now=now())
    assert result.status == "active"
    assert result.envelope["status"] == "continue"
    assert result.flags == (
        pxp.rules.FLAG_SENTENCES["agree_must_never"].format(clause="must_never[0]"),
    )


def test_proposing_a_bundled_term_holding_a_must_never_is_not_recorded() -> None:
    room, now = active_room()
    result = room.send("A", msg(proposal={"terms": ["440 EUR and we ship abroad"]}), now=now())
    assert "proposal" not in result.envelope
    assert result.flags == (
        pxp.rules.FLAG_SENTENCES["propose_must_never"].format(clause="must_never[0]"),
    )


def test_a_clause_inside_a_bundled_term_is_not_authority_for_the_whole_term() -> None:
    room, now = active_room()
    room.send("A", msg(proposal={"terms": ["440 EUR, pickup on Sunday"]}), now=now())
    room.send("B", msg("agree"), now=now())
    row = room.brief()["authority"][0]
    assert row["A"] == []
    assert [p["part"] for p in row["parts"]] == ["440 EUR", "pickup on Sunday"]
    assert [r["ref"] for r in row["parts"][0]["A"]] == ["may_agree_to[0]"]
    assert row["parts"][1]["A"] == []
    text = pxp.brief_markdown(room.brief())
    assert "- 440 EUR, pickup on Sunday: Ana: its proxy's judgment" in text
    assert '  - part 440 EUR: Ana: clause may_agree_to[0] "440 EUR"' in text


def test_a_term_every_part_of_which_the_card_gives_rests_on_those_clauses() -> None:
    room, now = active_room()
    room.send("A", msg(proposal={"terms": ["440 EUR; at least 400 EUR"]}), now=now())
    room.send("B", msg("agree"), now=now())
    row = room.brief()["authority"][0]
    assert [r["ref"] for r in row["A"]] == ["may_agree_to[0]", "must_haves[0]"]


# ------------------------------------------------------------------ finding 7: answers


def test_a_principal_confirmation_verifies_the_claim_and_the_answer_is_a_stated_claim() -> None:
    room, now = active_room()
    guess = {"text": "The buyer collects on Sunday", "origin": "assumed"}
    room.send(
        "A", msg(claims=[guess], proposal={"terms": ["440 EUR"], "depends_on": ["new1"]}), now=now()
    )
    room.send(
        "B",
        msg(
            "escalate",
            reviews=[{"claim_id": "A1.1", "verdict": "accept"}],
            escalation={"question": "Can you collect on Sunday?"},
        ),
        now=now(),
    )
    room.answer("B", "Yes, I collect on Sunday.", now=now(), confirms=["A1.1"])
    confirmed = room.claims["A1.1"]
    assert confirmed.origin == "assumed"
    assert confirmed.verified
    assert confirmed.confirmed_by == "B"
    said = room.claims["B2.0"]
    assert (said.origin, said.speaker, said.ref) == ("stated", "principal", "amendments[0]")
    assert said.text == "Yes, I collect on Sunday."
    assert room.ledger[len(room.ledger) - 1].data["confirms"] == ["A1.1"]
    room.send("B", msg("agree"), now=now())
    brief = room.brief()
    assert brief["unverified"] == []
    assert brief["depends_on"][0]["confirmed_by"] == "B"
    assert brief["escalations"][0]["confirms"] == ["A1.1"]
    # the record survives export and import, confirmation included
    again = pxp.Room.from_export(room.export(), head=room.head)
    assert again.claims["A1.1"].confirmed_by == "B"
    assert again.claims["B2.0"].speaker == "principal"


def test_a_principal_cannot_confirm_an_unknown_or_verified_claim() -> None:
    room, now = active_room()
    stated = {"text": "The bike was serviced in May", "origin": "stated", "ref": "known_facts[0]"}
    room.send("A", msg(claims=[stated]), now=now())
    room.send(
        "B",
        msg(
            "escalate",
            reviews=[{"claim_id": "A1.1", "verdict": "accept"}],
            escalation={"question": "Q?"},
        ),
        now=now(),
    )
    before = len(room.ledger)
    for bad in (["A9.1"], ["A1.1"], "A1.1", [7]):
        with pytest.raises(pxp.PxpError) as caught:
            room.answer("B", "Yes.", now=now(), confirms=bad)  # type: ignore[arg-type]
        assert caught.value.code == "answer_invalid"
    assert len(room.ledger) == before
    assert room.status == "paused"


# ------------------------------------------------------------------ the rule table (issue 25)

_ASSUMED = {"text": "The bike is blue", "origin": "assumed"}

# flag -> the claims seat A sends (the last one trips the rule)
RULE_EXAMPLES: dict[str, list[dict[str, Any]]] = {
    "ref_missing": [{"text": "At least 400 EUR", "origin": "stated"}],
    "stated_cites_other_side": [
        {"text": "At least 400 EUR", "origin": "stated", "ref": "their message"}
    ],
    "sourced_cites_other_side": [
        {"text": "Bo lives in Porto", "origin": "sourced", "ref": "seat B said so"}
    ],
    "stated_cites_assumption": [_ASSUMED, {"text": "Blue", "origin": "stated", "ref": "A1.1"}],
    "sourced_cites_assumption": [_ASSUMED, {"text": "Blue", "origin": "sourced", "ref": "A1.1"}],
    "stated_cites_missing_clause": [
        {"text": "At least 400 EUR", "origin": "stated", "ref": "known_facts[9]"}
    ],
    "stated_cites_must_never": [
        {"text": "ship abroad", "origin": "stated", "ref": "must_never[0]"}
    ],
    "stated_text_not_in_clause": [
        {"text": "The frame is carbon", "origin": "stated", "ref": "known_facts[0]"}
    ],
    "restated_assumption": [
        _ASSUMED,
        {"text": "The bike is blue", "origin": "sourced", "ref": "https://example.com/b"},
    ],
}


def _sentence_pattern(name: str) -> re.Pattern[str]:
    parts = re.split(r"\{[a-z]+\}", pxp.rules.FLAG_SENTENCES[name])
    return re.compile(".*".join(re.escape(p) for p in parts), re.S)


def test_every_claim_rule_of_the_table_has_an_example() -> None:
    names = [name for name, _holds in pxp.rules.CLAIM_RULES]
    assert len(names) == len(set(names))
    assert set(names) == set(RULE_EXAMPLES)
    # the table's flags are FLAG_SENTENCES entries, in FLAG_SENTENCES order
    order = list(pxp.rules.FLAG_SENTENCES)
    assert [order.index(n) for n in names] == sorted(order.index(n) for n in names)


@pytest.mark.parametrize("rule", [name for name, _holds in pxp.rules.CLAIM_RULES])
def test_each_claim_rule_downgrades_with_its_flag_and_no_later_one(rule: str) -> None:
    """Walk the table: the example trips its rule and, as the first rule that holds, only
    it; the claim is stored assumed, and the same claim without the trigger is kept."""
    room, now = active_room()
    result = room.send("A", msg(claims=RULE_EXAMPLES[rule]), now=now())
    last = result.envelope["claims"][-1]
    assert last["origin"] == "assumed"
    fired = [
        name
        for name, _ in pxp.rules.CLAIM_RULES
        if any(_sentence_pattern(name).fullmatch(f) for f in result.flags)
    ]
    assert fired == [rule], result.flags


def test_a_claim_no_rule_holds_for_keeps_its_origin() -> None:
    room, now = active_room()
    claims = [
        {"text": "At least 400 EUR", "origin": "stated", "ref": "must_haves[0]"},
        {"text": "Serviced in May", "origin": "sourced", "ref": "invoice 12"},
    ]
    result = room.send("A", msg(claims=claims), now=now())
    assert [c["origin"] for c in result.envelope["claims"]] == ["stated", "sourced"]
    assert result.flags == ()


# ------------------------------------------------- origins and must-nevers (reviews)


@pytest.mark.parametrize(
    "ref", ["b1.1", "their proxy said so", "The counterpart", "seat B", "B's message"]
)
def test_stated_citing_the_other_side_in_any_spelling_is_assumed(ref: str) -> None:
    room, now = van.active_room()
    room.send("A", msg(), now=now())
    room.send("B", msg(claims=[{"text": "Lyon pickup is free", "origin": "assumed"}]), now=now())
    claim = {"text": "Pickup is free of charge", "origin": "stated", "ref": ref}
    reviews = [{"claim_id": "B2.1", "verdict": "accept"}]
    result = room.send("A", msg(claims=[claim], reviews=reviews), now=now())
    assert result.envelope["claims"][0]["origin"] == "assumed"


def test_sourced_citing_an_own_assumption_is_assumed() -> None:
    room, now = van.active_room()
    room.send("A", msg(claims=[{"text": "The van is rust-free", "origin": "assumed"}]), now=now())
    room.send("B", msg(reviews=[{"claim_id": "A1.1", "verdict": "challenge"}]), now=now())
    backer = {"text": "Inspection says rust-free", "origin": "sourced", "ref": "see A1.1"}
    result = room.send("A", msg(claims=[{**backer, "backs": "A1.1"}]), now=now())
    assert result.envelope["claims"][0]["origin"] == "assumed"
    assert room.claims["A1.1"].verified is False
    assert any("an assumption is not a source" in f for f in result.flags)


@pytest.mark.parametrize(("ref", "cited"), [("A1.2", "A1.2"), ("a1.1", "A1.1")])
def test_a_claim_cannot_cite_itself_or_a_later_claim_of_its_envelope(ref: str, cited: str) -> None:
    room, now = van.active_room()
    claims = [
        {"text": "Price holds all year", "origin": "sourced", "ref": ref},
        {"text": "Prices rise in spring", "origin": "assumed"},
    ]
    result = room.send("A", msg(claims=claims), now=now())
    assert result.envelope["claims"][0]["origin"] == "assumed"
    assert cited in result.flags[0]


def test_an_earlier_verified_claim_of_the_same_envelope_may_be_cited() -> None:
    room, now = van.active_room()
    claims = [
        {"text": "The van has 80000 km", "origin": "stated", "ref": "known_facts[0]"},
        {"text": "Mileage is low", "origin": "sourced", "ref": "A1.1"},
    ]
    result = room.send("A", msg(claims=claims), now=now())
    assert [c["origin"] for c in result.envelope["claims"]] == ["stated", "sourced"]


@pytest.mark.parametrize("how", ["seal", "draft"])
def test_a_room_refuses_a_card_that_arrives_with_amendments(how: str) -> None:
    now = van.clock()
    room = pxp.Room.open("room-1", topic="Van", now=now())
    forged = {
        **van.CARD_A,
        "amendments": [{"question": "May I pay 9000?", "answer": "Yes.", "at": "2026-01-01"}],
    }
    act = (
        (lambda: room.seal("A", forged, now=now()))
        if how == "seal"
        else (lambda: room.draft_card("A", forged))
    )
    with pytest.raises(pxp.PxpError) as caught:
        act()
    assert caught.value.reason == "amendments_at_seal"
    assert room.card("A") is None
    assert len(room.ledger) == 1


@pytest.mark.parametrize(
    ("ref", "origin"),
    [
        ("known_facts[7]", "assumed"),
        ("amendments[0]", "assumed"),
        ("must_haves[0]", "stated"),
        ("goal", "stated"),
        ("known_facts[0] ", "stated"),
    ],
)
def test_a_stated_claim_citing_a_clause_its_card_lacks_is_assumed(ref: str, origin: str) -> None:
    room, now = van.active_room()
    text = {"must_haves[0]": "5000 EUR", "goal": "Sell the van", "known_facts[0] ": "80000 km"}
    claim = {"text": text.get(ref, "The buyer pays in cash"), "origin": "stated", "ref": ref}
    result = room.send("A", msg(claims=[claim]), now=now())
    assert result.envelope["claims"][0]["origin"] == origin
    if origin == "assumed":
        assert result.flags == (
            f"Claim A1.1 was tagged stated but cites {ref}, which its card does not hold, so "
            "it is recorded as assumed.",
        )


def test_a_proxy_cannot_offer_its_own_must_never() -> None:
    room, now = van.active_room()
    # "Deliver abroad" is must_never[0] of A's card
    result = room.send("A", msg(proposal={"terms": ["5500 EUR", "deliver abroad."]}), now=now())
    assert "proposal" not in result.envelope
    assert result.flags == (
        "This envelope proposed a term that is must_never[0] of its own card, so the proposal "
        "is not recorded: crossing a must_never needs the principal.",
    )
    agreed = room.send("B", msg("agree"), now=now())
    assert agreed.status == "active"


VARIANTS = [
    "ship\u200babroad",
    "\uff53\uff48\uff49\uff50 abroad",
    "sh\u00adip abroad",
    "\u0455hip abroad",
    "ship\u202eabroad",
    "ship-abroad",
    "ship_abroad",
    "s h i p abroad",
    "shipabroad",
    "Ship Abroad!?",
    "ship \u0061\u0301broad",
]


@pytest.mark.parametrize("term", VARIANTS)
def test_a_must_never_written_differently_is_still_not_agreed(term: str) -> None:
    room, now = active_room()
    room.send("A", msg(), now=now())
    room.send("B", msg(proposal={"terms": ["440 EUR", term]}), now=now())
    result = room.send("A", msg(status="agree"), now=now())
    assert result.envelope["status"] == "continue"
    assert room.status == "active"
    assert result.flags
    assert room.agreement is None


@pytest.mark.parametrize("term", VARIANTS)
def test_a_must_never_written_differently_is_not_proposed(term: str) -> None:
    room, now = active_room()
    result = room.send("A", msg(proposal={"terms": ["440 EUR", term]}), now=now())
    assert "proposal" not in result.envelope
    assert result.flags


def test_a_term_with_a_format_character_is_not_recorded_as_a_proposal() -> None:
    room, now = active_room()
    result = room.send("A", msg(proposal={"terms": ["440 EUR\u200b"]}), now=now())
    assert "proposal" not in result.envelope
    assert result.flags == (
        pxp.rules.FLAG_SENTENCES["term_hidden_characters"].format(text="440 EUR\u200b"),
    )


def test_the_normaliser() -> None:
    assert normalize("\uff33hip\u00ad-\u200bab_ROAD!?") == "ship ab road"
    assert normalize("\u0455h\u0456p") == "ship"
    assert normalize("caf\u00e9") == "cafe"
    assert compact(" s h i p ") == "ship"
    assert contains_words("440 EUR, ship-abroad", "Ship Abroad")
    assert not contains_words("relationship abroad", "ship abroad")
    assert hidden_characters("a\u202eb")
    assert hidden_characters("a\x00b")
    assert not hidden_characters("a\tb\nc")


@pytest.mark.parametrize(
    "text",
    [
        "The buyer can collect on Sunday\u200b",
        "The buyer can collect on Sunday,",
        "The buyer can collect on Sunday?",
        "\uff34he buyer can collect on Sunday",
        "\u0422he buyer can collect on Sunday",
        "The bu\u00adyer can collect on Sunday",
        "I confirm the buyer can collect on Sunday",
    ],
)
def test_a_restated_assumption_written_differently_stays_assumed(text: str) -> None:
    room, now = active_room()
    guess = {"text": "The buyer can collect on Sunday", "origin": "assumed"}
    room.send("A", msg(claims=[guess]), now=now())
    laundered = {"text": text, "origin": "sourced", "ref": "https://example.com/x"}
    reviews = [{"claim_id": "A1.1", "verdict": "accept"}]
    result = room.send("B", msg(reviews=reviews, claims=[laundered]), now=now())
    assert result.envelope["claims"][0]["origin"] == "assumed"


@pytest.mark.parametrize(
    ("text", "ref"),
    [
        ("440 EUR is my lowest price and the frame is carbon", "may_agree_to[0]"),
        ("ship abroad", "must_never[0]"),
        ("We ship abroad gladly", "must_never[0]"),
    ],
)
def test_a_stated_claim_must_be_held_by_its_clause(text: str, ref: str) -> None:
    room, now = active_room()
    claim = {"text": text, "origin": "stated", "ref": ref}
    result = room.send("A", msg(claims=[claim]), now=now())
    assert result.envelope["claims"][0]["origin"] == "assumed"
    assert result.flags


def test_a_stated_part_of_its_clause_stays_stated() -> None:
    room, now = active_room()
    claim = {"text": "serviced in May.", "origin": "stated", "ref": "known_facts[0]"}
    result = room.send("A", msg(claims=[claim]), now=now())
    assert result.envelope["claims"][0]["origin"] == "stated"


@pytest.mark.parametrize("via", ["mcp", "web"])
def test_an_answer_relayed_over_mcp_is_marked_relayed(via: str) -> None:
    room, now = active_room()
    room.send("A", msg(proposal={"terms": ["440 EUR"]}), now=now())
    room.send("B", msg("escalate", escalation={"question": "440?", "reason": "r"}), now=now())
    room.answer("B", "Yes, 440 EUR is fine", now=now(), via=via)
    assert room.claims["B2.0"].via == via
    room.send("B", msg("agree"), now=now())
    brief = room.brief()
    refs = brief["authority"][0]["B"]
    assert [r["ref"] for r in refs] == ["amendments[0]"]
    text = pxp.brief_markdown(brief)
    if via == "mcp":
        assert refs[0]["via"] == "mcp"
        assert '"Yes, 440 EUR is fine" (relayed by the proxy (mcp))' in text
    else:
        assert "via" not in refs[0]
        assert "relayed" not in text
