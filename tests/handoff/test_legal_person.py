"""§5 authority (issue 19 #7): a legal person's settlement needs ``representative``; evidence
is a SHOULD.

Seed §5: a settlement of kind principal or confirmed for a legal person MUST carry
``representative``; ``evidence.proof`` SHOULD show the power to represent. It is required
only where the principal side is configured ``verifiable: true`` (§12).
"""

from __future__ import annotations

import pytest

import handoff

from .ext_fixtures import ROLES_JSON, TS, rec

ORG = handoff.Roles.from_json({**ROLES_JSON, "principal": "acme", "principal_is_person": False})


def _settled(**authority: str) -> dict[str, object]:
    return rec("s1", "settled", "principal", "alice-desk", terms_rev=1, outcome="done",
               authority={"kind": "principal", "decider": "acme", **authority})  # fmt: skip


def test_representative_without_evidence_is_admitted() -> None:
    verdict = handoff.check_record(
        _settled(representative="carol"), roles=ORG, extensions=handoff.EXTENSIONS
    )
    assert verdict.status == "accepted"


def test_representative_is_still_required() -> None:
    with pytest.raises(handoff.HandoffError) as caught:
        handoff.check_record(_settled(), roles=ORG, extensions=handoff.EXTENSIONS)
    assert caught.value.reason == "representative_missing"


def test_a_verifiable_side_requires_the_proof() -> None:
    reg = handoff.Registry(roles=ORG, extensions=handoff.EXTENSIONS)
    reg.add(rec("n1", "raised", "requester", "agent-1", terms={"text": "Sign"}, terms_rev=1))
    record = handoff.make_settlement(reg, handoff.ItemId("acts", "web", "k1"), "done",
                                     by="alice-desk", ts=TS)  # fmt: skip
    record["authority"]["representative"] = "carol"
    handoff.check_principal_side_record(record, reg, handoff.PrincipalSide())
    with pytest.raises(handoff.HandoffError) as caught:
        handoff.check_principal_side_record(record, reg, handoff.PrincipalSide(verifiable=True))
    assert caught.value.reason == "proof_missing"
