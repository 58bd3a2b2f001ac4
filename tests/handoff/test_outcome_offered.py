"""Decisions §5 (ext.; issue 19 #10): a decision settled with an outcome never offered is not
standing.

Where the receiver holds the terms the settlement was made against, the fold refuses an
outcome outside the offered options (reserved outcomes aside): the item is not
``settled`` with that outcome, and ``make_settlement`` refuses to build one.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

import handoff

from .ext_fixtures import TS, rec, registry

ITEM = handoff.ItemId("decisions", "web", "plan")
TERMS = {
    "text": "Which hosting plan?",
    "options": [{"id": "small", "text": "Small"}, {"id": "large", "text": "Large"}],
    "assumption": "small until told otherwise",
}


def _need(terms: dict[str, Any] = TERMS) -> dict[str, Any]:
    return rec("d1", "raised", "requester", "agent-1", "plan", ext="decisions/0.3",
               terms=terms, terms_rev=1)  # fmt: skip


def _settled(outcome: str, **more: Any) -> dict[str, Any]:
    return rec("s1", "settled", "principal", "alice-desk", "plan", ext="decisions/0.3",
               terms_rev=1, outcome=outcome,
               authority={"kind": "principal", "decider": "alice"}, **more)  # fmt: skip


def test_make_settlement_refuses_an_outcome_never_offered() -> None:
    reg = registry()
    reg.add(_need())
    with pytest.raises(handoff.HandoffError) as caught:
        handoff.make_settlement(reg, ITEM, "approve_all_future_orders", by="alice-desk", ts=TS)
    assert caught.value.reason == "outcome_not_offered"
    with pytest.raises(handoff.HandoffError) as caught:
        handoff.make_settlement(reg, ITEM, "free", by="alice-desk", ts=TS, answer="yes")
    assert caught.value.reason == "free_answer_not_allowed"
    assert handoff.make_settlement(reg, ITEM, "declined", by="alice-desk", ts=TS)["outcome"]


def test_the_fold_never_reports_an_unoffered_outcome() -> None:
    bad = _settled("approve_all_future_orders")
    for order in itertools.permutations([_need(), bad]):
        reg = registry()
        added = [reg.add(r) for r in order]
        assert added[-1].status == "accepted"
        state = reg.state(ITEM)
        assert state.outcome is None
        assert state.state == "open"
        assert state.settlement == "s1"  # the next settlement must supersede it
        assert [(c.kind, c.ids) for c in state.conflicts] == [("outcome_not_offered", ("s1",))]


def test_an_offered_or_reserved_outcome_stands() -> None:
    for outcome in ("large", "declined"):
        reg = registry()
        reg.add(_need())
        reg.add(_settled(outcome))
        assert reg.state(ITEM).outcome == outcome
        assert reg.state(ITEM).conflicts == ()


def test_without_the_terms_only_the_form_is_checked() -> None:
    reg = registry()
    reg.add(_settled("approve_all_future_orders"))
    state = reg.state(ITEM)
    assert (state.state, state.outcome) == ("settled", "approve_all_future_orders")
