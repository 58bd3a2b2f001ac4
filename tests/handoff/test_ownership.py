"""§3 Ownership: who may write which register starts with a roles configuration that
cannot give the principal's side a requester's pen (from the review regressions)."""

from __future__ import annotations

from typing import Any

import pytest

import handoff


@pytest.mark.parametrize("party", ["alice", "alice-pa"])
@pytest.mark.parametrize("project", ["house", "*"])
def test_the_principal_and_the_principal_side_are_never_requesters(
    party: str, project: str
) -> None:
    config = {
        "principal": "alice",
        "principal_side": ["alice-pa"],
        "requesters": {project: ["bot-1", party]},
    }
    with pytest.raises(handoff.HandoffError) as caught:
        handoff.Roles.from_json(config)
    assert caught.value.reason == "config_invalid"


@pytest.mark.parametrize("parties", [["bot-1"], "alice-pa", 5, frozenset({1})])
def test_roles_built_directly_take_sets_of_identifiers_only(parties: Any) -> None:
    with pytest.raises(handoff.HandoffError) as caught:
        handoff.Roles("alice", frozenset({"alice-pa"}), {"house": parties})
    assert caught.value.reason == "config_invalid"
