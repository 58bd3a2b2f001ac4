"""Regressions from the second adversarial review of issue 20 (/work/wt/reviews/pxp.md):
each test pins one finding on the real path."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import pxp
from pxp._text import compact, contains_words, hidden_characters, normalize

from .test_pxp_origins import CARD_A, CARD_B, active_room, clock, msg

# ------------------------------------------------- finding 3: must-never look-alikes

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


# ------------------------------------------------- finding 1: the other side's answer


def _answered_service() -> tuple[Any, Any]:
    from pxp._server_links import SeatGrant
    from pxp._server_rooms import RoomService

    svc = RoomService(clock=clock())
    made = svc.create_room(
        topic="Chairs", your_principal="Ann", counterpart="Bo", counterpart_proxy="external"
    )
    a, b = SeatGrant(made.room_id, "A", "seat"), SeatGrant(made.room_id, "B", "seat")
    svc.join(b, "bo-agent")
    svc.seal(a, {"principal": {"name": "Ann"}, "goal": "Buy chairs", "must_haves": ["June"]}, "mcp")
    card_b = {
        "principal": {"name": "Bo"},
        "goal": "Sell chairs",
        "must_haves": ["floor 3000 EUR"],
        "escalate_when": ["Price under 4600 EUR"],
    }
    svc.seal(b, card_b, "mcp")
    svc.send(a, {"message": "4500?", "status": "continue", "proposal": {"terms": ["4500 EUR"]}})
    escalation = {"question": "May I accept 4500 EUR?", "reason": "Price under 4600 EUR"}
    svc.send(b, {"message": "asking", "status": "escalate", "escalation": escalation})
    svc.answer(SeatGrant(made.room_id, "B", "principal"), "SECRET: as low as 2600 EUR", "web")
    return svc, made.room_id


def test_the_other_seats_principal_answer_is_on_no_view_of_this_seat() -> None:
    from pxp._server_links import SeatGrant
    from pxp._server_page import room_page

    svc, room_id = _answered_service()
    a_seat, a_page = SeatGrant(room_id, "A", "seat"), SeatGrant(room_id, "A", "principal")
    assert "2600" not in json.dumps(svc.view(a_seat), ensure_ascii=False)
    page = svc.page_view(a_page)
    assert "2600" not in json.dumps(page, ensure_ascii=False)
    html, _ = room_page(page, "/p/x/y", None)
    assert "2600" not in html
    # B's own page still shows its principal's answer as a claim
    b_page = svc.page_view(SeatGrant(room_id, "B", "principal"))
    assert any(c["id"] == "B2.0" for c in b_page["claims"])


def test_claims_seen_by_hides_the_other_principal_until_the_end() -> None:
    room, now = active_room()
    room.send("A", msg(), now=now())
    room.send("B", msg("escalate", escalation={"question": "Go?", "reason": "r"}), now=now())
    room.answer("B", "yes, down to 300", now=now())
    assert "B2.0" in room.claims
    assert "B2.0" not in room.claims_seen_by("A")
    assert "B2.0" in room.claims_seen_by("B")


# ------------------------------------------------- finding 2: the seat admits one agent


def test_a_look_alike_agent_cannot_take_the_seat_or_its_page(tmp_path: Path) -> None:
    from pxp._server_links import SeatGrant, SqliteLinkStore
    from pxp._server_rooms import RoomService
    from pxp._store import SqliteRoomStore

    db = tmp_path / "rooms.sqlite"
    svc = RoomService(SqliteRoomStore(db), SqliteLinkStore(db), clock=clock())
    made = svc.create_room(
        topic="Chairs", your_principal="Ann", counterpart="Bo", counterpart_proxy="external"
    )
    b = SeatGrant(made.room_id, "B", "seat")
    page = svc.join(b, "bo-agent").page_token
    assert page is not None
    before = SqliteLinkStore(db).room_digests(made.room_id)
    with pytest.raises(pxp.PxpError) as err:
        svc.join(b, "b\u043e-agent")  # Cyrillic o
    assert err.value.code == "seat_taken"
    # the same name with an invisible character is the same agent: nothing is issued
    again = svc.join(b, "bo\u200b-agent").page_token
    assert again is None
    assert SqliteLinkStore(db).room_digests(made.room_id) == before
    # only the operator re-issues, and the old page stops working
    token = svc.reissue_principal_link(made.room_id, "B")
    after = SqliteLinkStore(db).room_digests(made.room_id)
    assert after[("B", "principal")] != before[("B", "principal")]
    assert token


def test_pxp_links_reissue_prints_a_new_page_link(tmp_path: Path) -> None:
    from pxp._server_links import SqliteLinkStore
    from pxp._server_rooms import RoomService
    from pxp._store import SqliteRoomStore

    db = tmp_path / "rooms.sqlite"
    svc = RoomService(SqliteRoomStore(db), SqliteLinkStore(db))
    made = svc.create_room(
        topic="Chairs", your_principal="Ann", counterpart="Bo", counterpart_proxy="external"
    )
    old = SqliteLinkStore(db).room_digests(made.room_id)[("A", "principal")]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pxp",
            "links",
            "reissue",
            made.room_id,
            "--seat",
            "A",
            "--db",
            str(db),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert f"A principal http://127.0.0.1:8765/p/{made.room_id}/" in done.stdout
    assert SqliteLinkStore(db).room_digests(made.room_id)[("A", "principal")] != old


def test_the_brief_numbers_each_join_and_marks_a_look_alike() -> None:
    room, now = active_room()
    room.join("B", agent="bo-agent", now=now())
    room.join("B", agent="b\u043e-agent", now=now())
    room.send("A", msg(proposal={"terms": ["440 EUR"]}), now=now())
    room.send("B", msg("agree"), now=now())
    text = pxp.brief_markdown(room.brief())
    assert "agents: #1 bo-agent, #2 b\u043e-agent (reads like #1)" in text


# ------------------------------------------------- finding 4: origin laundering


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


# ------------------------------------------------- finding 5: authority by whole phrase


def _authority(terms: list[str]) -> dict[str, list[str]]:
    now = clock()
    room = pxp.Room.open("r1", topic="Bike", now=now())
    card_a = {
        "principal": {"name": "Ana"},
        "goal": "Sell the bike",
        "must_haves": ["Payment in cash, never by bank transfer"],
        "may_agree_to": ["440 EUR"],
    }
    room.seal("A", card_a, now=now())
    room.seal("B", {"principal": {"name": "Bo"}, "goal": "Buy", "must_haves": ["x"]}, now=now())
    room.send("A", msg(), now=now())
    room.send("B", msg(proposal={"terms": terms}), now=now())
    room.send("A", msg("agree"), now=now())
    return {row["term"]: [r["ref"] for r in row["A"]] for row in room.brief()["authority"]}


def test_authority_needs_a_whole_phrase_and_never_a_negated_one() -> None:
    got = _authority(
        ["bank transfer", "never by bank transfer", "440", "payment in cash", "440 eur."]
    )
    assert got == {
        "bank transfer": [],
        "never by bank transfer": [],
        "440": [],
        "payment in cash": ["must_haves[0]"],
        "440 eur.": ["may_agree_to[0]"],
    }


# ------------------------------------------------- finding 6: import notes what we would flag


def test_import_notes_what_this_library_would_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    import pxp._room as engine
    from pxp._server_links import SeatGrant
    from pxp._server_rooms import RoomService

    # a looser server: no must_never check on agree
    with monkeypatch.context() as patch:
        patch.setattr(engine, "_crossed", lambda card, terms: [])
        now = clock()
        room = pxp.Room.open("forged1", topic="Bike", now=now())
        room.seal("A", CARD_A, now=now())
        room.seal("B", CARD_B, now=now(), via="mcp")
        room.send("A", msg(), now=now())
        room.send("B", msg(proposal={"terms": ["440 EUR, ship abroad"]}), now=now())
        room.send("A", msg("agree"), now=now())
        data = json.loads(json.dumps(room.export()))
    assert data["envelopes"][-1]["status"] == "agree"
    svc = RoomService()
    made = svc.import_room(data)  # not refused: reference rooms are looser
    brief = svc.brief_data(SeatGrant(made.room_id, "A", "seat"))
    noted = [f["flag"] for f in brief["brief"]["protocol_flags"]]
    assert noted == [
        "Import: would be flagged here: "
        + pxp.rules.FLAG_SENTENCES["agree_must_never"].format(clause="must_never[0]")
    ]
    assert "Import: would be flagged here" in brief["markdown"]
    assert "hash chain verifies (integrity only, not authenticity)." in brief["markdown"]


def test_an_honest_room_imports_without_notes() -> None:
    room, now = active_room()
    room.send("A", msg(claims=[{"text": "x", "origin": "stated", "ref": "goal"}]), now=now())
    room.send("B", msg(proposal={"terms": ["440 EUR, ship abroad"]}), now=now())
    room.send("A", msg("agree"), now=now())
    assert pxp.load_room(json.loads(json.dumps(room.export()))).import_notes == ()


# ------------------------------------------------- finding 9: relayed answers say so


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


# ------------------------------------------------- finding 7: ledger and link store agree


@pytest.mark.parametrize("store", ["memory", "sqlite"])
def test_a_slower_process_never_overwrites_a_later_issued_link(store: str, tmp_path: Path) -> None:
    from pxp._server_links import MemoryLinkStore, SqliteLinkStore

    links = MemoryLinkStore() if store == "memory" else SqliteLinkStore(tmp_path / "l.sqlite")
    links.add_room("r1", {("A", "seat"): "s", ("B", "seat"): "t"})
    # process 2 issued at ledger entry 11 and wrote first; process 1 issued at 10, writes late
    assert links.set_link("r1", "B", "principal", "later", issued_at=11)
    assert not links.set_link("r1", "B", "principal", "earlier", issued_at=10)
    assert links.room_digests("r1")[("B", "principal")] == "later"
    assert links.set_link("r1", "B", "principal", "newest", issued_at=12)
    assert links.room_digests("r1")[("B", "principal")] == "newest"


def test_two_services_on_one_file_agree_with_the_ledger(tmp_path: Path) -> None:
    from pxp._server_links import SeatGrant, SqliteLinkStore, check_link
    from pxp._server_rooms import RoomService
    from pxp._store import SqliteRoomStore

    db = tmp_path / "rooms.sqlite"
    one = RoomService(SqliteRoomStore(db), SqliteLinkStore(db))
    two = RoomService(SqliteRoomStore(db), SqliteLinkStore(db))
    made = one.create_room(
        topic="t", your_principal="a", counterpart="b", counterpart_proxy="external"
    )
    first = one.join(SeatGrant(made.room_id, "B", "seat"), "bo").page_token
    token = two.reissue_principal_link(made.room_id, "B")
    assert first is not None
    room = one._load(made.room_id)
    assert room.principal_link("B") == {"issued_at": len(room.ledger), "agent": None}
    check_link(SqliteLinkStore(db), f"{made.room_id}.{token}", "principal")
    with pytest.raises(pxp.PxpError):
        check_link(SqliteLinkStore(db), f"{made.room_id}.{first}", "principal")
