"""Lens byte-exact with the reference (issue 21): each test holds one finding.

Expectations are the reference's behaviour as SPEC.md section 9.2 and NOTES.md state it, and
as JavaScript evaluates the template (truthiness, UTF-16 strings).
"""

from __future__ import annotations

from typing import Any

import pytest

import parley
from parley._lens import effect_line


# ---------------------------------------------------------------- finding 2: effect `field`


@pytest.mark.parametrize("field", ["", None, 0, 0.0, False])
def test_an_effect_field_that_is_not_truthy_is_not_rendered(field: Any) -> None:
    effect = {"op": "update", "target": "event/e42", "field": field, "from": 1, "to": 2}
    assert effect_line(effect) == "~ update event/e42: 1 → 2"


@pytest.mark.parametrize(
    ("field", "shown"), [("start", "start"), (1, "1"), (True, "true"), ("-", "-"), (" ", " ")]
)
def test_a_truthy_effect_field_is_rendered(field: Any, shown: str) -> None:
    effect = {"op": "delete", "target": "t", "field": field}
    assert effect_line(effect) == f"- delete t.{shown}"


@pytest.mark.parametrize("detail", ["", None, 0, False])
def test_an_effect_detail_that_is_not_truthy_is_not_rendered(detail: Any) -> None:
    assert effect_line({"op": "send", "target": "ana", "detail": detail}) == "> send ana"


def test_effect_fields_in_a_whole_reply() -> None:
    reply = {
        "kind": "RECEIPT",
        "auto": True,
        "receipt": {
            "id": "r_1",
            "summary": "Done",
            "undo": None,
            "effects": [
                {"op": "update", "target": "a", "field": ""},
                {"op": "update", "target": "b", "field": "x"},
            ],
        },
    }
    assert parley.lens(reply) == "✓ Done (receipt r_1) · irreversible\n  ~ update a\n  ~ update b.x"


@pytest.mark.parametrize("blank", ["", None, 0, False])
def test_brief_summaries_and_risk_follow_the_same_truthiness(blank: Any) -> None:
    reply = {
        "kind": "BRIEF",
        "service": {"id": "s", "name": "S", "summary": blank},
        "capabilities": [{"kind": "ask", "name": "a", "summary": blank, "risk": blank}],
    }
    assert parley.lens(reply) == "# S (s)\nask a()"
