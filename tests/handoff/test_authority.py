"""§5 Authority: who may decide or attest a settlement (moved from the review regressions)."""

from __future__ import annotations

from typing import Any

import pytest

import handoff

from .handoff_helpers import EXTS, ROLES, settled


def _check(record: dict[str, Any]) -> None:
    handoff.check_record(record, roles=ROLES, extensions=EXTS)


def test_an_attested_settlement_is_decided_by_the_principal_side_only() -> None:
    good = settled("s1", authority={"kind": "attested", "decider": "alice-pa"})
    good["evidence"] = {"basis": "bank line 4"}
    _check(good)
    for decider in ("bot-1", "helper-9"):
        bad = {**good, "authority": {"kind": "attested", "decider": decider}}
        with pytest.raises(handoff.HandoffError) as caught:
            _check(bad)
        assert caught.value.reason == "attester_not_principal_side"


@pytest.mark.parametrize("lookalike", ["ALICE", "Alice", "\uff41lice", "\U0001d41alice"])
def test_a_delegate_that_reads_like_the_principal_is_refused(lookalike: str) -> None:
    authority = {"kind": "delegated", "decider": lookalike, "under": "m", "chain": ["alice"]}
    authority["chain"] = ["alice", lookalike]
    with pytest.raises(handoff.HandoffError) as caught:
        _check(settled("s1", authority=authority))
    assert caught.value.reason == "delegate_is_principal"
    looping = {**authority, "decider": "boss", "chain": ["alice", lookalike, "boss"]}
    with pytest.raises(handoff.HandoffError) as caught:
        _check(settled("s1", authority=looping))
    assert caught.value.reason == "chain_broken"
