"""Regressions from the second adversarial review of issue 20 (/work/wt/reviews/pxp.md):
each test pins one finding on the real path."""

from __future__ import annotations

import pytest

import pxp
from pxp._text import compact, contains_words, hidden_characters, normalize

from .test_pxp_origins import active_room, msg

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
        pxp.FLAG_SENTENCES["term_hidden_characters"].format(text="440 EUR\u200b"),
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
