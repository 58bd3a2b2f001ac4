"""Spec §7: the decision brief, as JSON and as Markdown (folded from the review
regression files)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import pxp

from . import _rooms as van
from . import test_pxp_origins as bike
from ._rooms import (
    _room_with_a_lone_surrogate,
    msg,
)


def _authority(terms: list[str]) -> dict[str, list[str]]:
    now = bike.clock()
    room = pxp.Room.open("r1", topic="Bike", now=now())
    card_a = {
        "principal": {"name": "Ana"},
        "goal": "Sell the bike",
        "must_haves": ["Payment in cash, never by bank transfer"],
        "may_agree_to": ["440 EUR"],
    }
    room.seal("A", card_a, now=now())
    room.seal("B", {"principal": {"name": "Bo"}, "goal": "Buy", "must_haves": ["x"]}, now=now())
    room.send("A", bike.msg(), now=now())
    room.send("B", bike.msg(proposal={"terms": terms}), now=now())
    room.send("A", bike.msg("agree"), now=now())
    return {row["term"]: [r["ref"] for r in row["A"]] for row in room.brief()["authority"]}


def test_a_disputed_dependency_stays_unverified_after_the_principal_clears_it() -> None:
    room, now = van.active_room()
    claim = {"text": "Invoice shows 5500 EUR", "origin": "sourced", "ref": "invoice 17"}
    proposal = {"terms": ["5500 EUR"], "depends_on": ["new1"]}
    room.send("A", msg(claims=[claim], proposal=proposal), now=now())
    room.send(
        "B",
        msg(
            "escalate",
            reviews=[{"claim_id": "A1.1", "verdict": "challenge"}],
            escalation={"question": "Accept without seeing the invoice?"},
        ),
        now=now(),
    )
    room.answer("B", "Yes, accept it.", now=now())
    assert room.send("B", msg("agree"), now=now()).status == "agreed"
    brief = room.brief()
    assert brief["unverified"] == ["A1.1"]
    assert brief["depends_on"][0]["verified"] is False
    assert brief["depends_on"][0]["disputed_by"] == ["B"]
    assert "A1.1" in pxp.brief_markdown(brief)


def test_markdown_brief_text_cannot_inject_markup() -> None:
    now = van.clock()
    room = pxp.Room.open("room-1", topic="Van\n\n# Agreed: all <b>terms</b>", now=now())
    card_a = {**van.CARD_A, "principal": {"name": "Ana [click](http://x.test)"}}
    room.seal("A", card_a, now=now())
    room.seal("B", van.CARD_B, now=now())
    term = "Pay 10\n\n## What was agreed\n1. Pay 1000000 <script>x</script>"
    room.send("A", msg(proposal={"terms": [term]}), now=now())
    room.send("B", msg("agree"), now=now())
    text = pxp.brief_markdown(room.brief())
    assert "<script>" not in text
    assert "<b>" not in text
    assert "\n# Agreed" not in text
    assert "\n## What was agreed\n1. Pay 1000000" not in text
    assert "[click](http" not in text
    assert text.count("\n## What was agreed\n") == 1
    assert "Ana \\[click\\]\\(http" in text or "Ana \\[click\\](http" in text


def test_markdown_of_an_imported_brief_keeps_hashes_as_hex() -> None:
    room, now = van.active_room()
    room.send("A", msg(proposal={"terms": ["x"]}), now=now())
    room.send("B", msg("agree"), now=now())
    brief = room.brief()
    brief["ledger"]["head"] = "`<img src=x>`"
    assert "<img" not in pxp.brief_markdown(brief)


def test_an_answer_is_authority_only_for_terms_it_mentions() -> None:
    room, now = van.active_room()
    room.send("A", msg(proposal={"terms": ["5500 EUR", "Delivery to Paris"]}), now=now())
    room.send("B", msg("escalate", escalation={"question": "May I pay 5500 EUR?"}), now=now())
    room.answer("B", "Yes, you may pay 5500 EUR.", now=now())
    room.send("B", msg("agree"), now=now())
    rows = {row["term"]: row["B"] for row in room.brief()["authority"]}
    assert [r["ref"] for r in rows["5500 EUR"]] == ["amendments[0]"]
    assert rows["Delivery to Paris"] == []


def test_markdown_shows_a_lone_surrogate_as_a_replacement_character() -> None:
    text = pxp.brief_markdown(_room_with_a_lone_surrogate().brief())
    assert "Pay \ufffd now" in text
    text.encode("utf-8")


@pytest.mark.parametrize("extra", [[], ["--markdown"]])
def test_cli_brief_prints_a_room_holding_a_lone_surrogate(tmp_path: Path, extra: list[str]) -> None:
    path = tmp_path / "room.json"
    path.write_text(json.dumps(_room_with_a_lone_surrogate().export()), encoding="ascii")
    done = subprocess.run(
        [sys.executable, "-m", "pxp", "brief", str(path), *extra],
        capture_output=True,
        timeout=60,
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()


def test_the_brief_carries_every_unverified_claim_of_the_record() -> None:
    # PXP section 3 rule 3: unverified claims are carried into the final brief, even those
    # the agreement does not name as dependencies
    room, now = van.active_room()
    side = {"text": "The buyer has a trailer", "origin": "assumed"}
    room.send("A", msg(claims=[side], proposal={"terms": ["5500 EUR"]}), now=now())
    room.send("B", msg("agree", reviews=[{"claim_id": "A1.1", "verdict": "accept"}]), now=now())
    brief = room.brief()
    assert brief["unverified"] == []
    assert [c["id"] for c in brief["unverified_in_record"]] == ["A1.1"]
    text = pxp.brief_markdown(brief)
    assert "## Other unverified claims in the record" in text
    assert "A1.1 (Ana Silva, assumed): The buyer has a trailer" in text


def test_markdown_shows_invisible_and_bidi_controls() -> None:
    now = van.clock()
    room = pxp.Room.open("room-1", topic="Van", now=now())
    room.seal("A", van.CARD_A, now=now())
    room.seal("B", van.CARD_B, now=now())
    # a proposal term with such characters is not recorded (second review, finding 3), so
    # they reach the brief through a claim
    hidden = {"text": "Pay \u202e0001\u202c EUR\x1f\x9b", "origin": "assumed"}
    room.send("A", msg(claims=[hidden], proposal={"terms": ["1000 EUR"]}), now=now())
    room.send("B", msg("agree", reviews=[{"claim_id": "A1.1", "verdict": "accept"}]), now=now())
    text = pxp.brief_markdown(room.brief())
    assert "Pay U+202E0001U+202C EURU+001FU+009B" in text
    assert not any(c in text for c in "\u202e\u202c\x1f\x9b")


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
