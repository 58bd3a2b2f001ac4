"""One convention for checks: pass/fail returns what it checked or raises the protocol error;
a report (``Verdict``, ``Added``, ``EvidenceCheck``) refuses to be read as a boolean."""

from __future__ import annotations

import copy

import pytest

import handoff

from .ext_fixtures import ROLES, ed_key, raised, registry, settlement

ITEM = handoff.ItemId("acts", "web", "k1")


def _signed() -> tuple[handoff.Registry, dict[str, object]]:
    reg = registry()
    reg.add(raised())
    return reg, handoff.attach_proof(settlement(reg), ed_key())


def test_pass_fail_checks_return_what_they_checked() -> None:
    reg, signed = _signed()
    side = handoff.PrincipalSide(jwks=handoff.public_jwks(ed_key()), verifiable=True)
    assert handoff.check_principal_side_record(signed, reg, side) is signed
    need = raised("n2", "k2")
    assert handoff.check_requester_record(need, reg) is need
    check = handoff.verify_proof(signed, handoff.public_jwks(ed_key()))
    assert (check.alg, check.kid) == ("Ed25519", handoff.public_jwks(ed_key())["keys"][0]["kid"])
    terms = {"text": "Pay"}
    assert handoff.acts.check_act_terms(terms) is terms
    options = {"options": [{"id": "a", "text": "A"}]}
    assert handoff.decisions.check_decision_terms(options) is options
    choice = {"outcome": "a"}
    assert handoff.decisions.check_decision_outcome(choice, options) is choice
    assert handoff.schemas.check_schema("record.schema.json", need) is need


def test_a_failed_pass_fail_check_raises_the_protocol_error() -> None:
    reg, signed = _signed()
    forged = copy.deepcopy(signed)
    forged["outcome"] = "declined"
    side = handoff.PrincipalSide(jwks=handoff.public_jwks(ed_key()), verifiable=True)
    with pytest.raises(handoff.HandoffProtocolError) as caught:
        handoff.check_principal_side_record(forged, reg, side)
    assert caught.value.code in ("evidence", "proof")
    with pytest.raises(handoff.HandoffProtocolError) as proof:
        handoff.verify_proof(forged, handoff.public_jwks(ed_key()))
    assert (proof.value.code, proof.value.reason) == ("proof", "bad_signature")


def test_reports_refuse_bool() -> None:
    reg, signed = _signed()
    verdict = handoff.check_record(signed, roles=ROLES, extensions=handoff.EXTENSIONS)
    assert verdict.status == "accepted"
    added = reg.add(signed)
    assert added.status == "accepted"
    side = handoff.PrincipalSide(jwks=handoff.public_jwks(ed_key()), verifiable=True)
    check = handoff.settlement_evidence(reg, ITEM, side)
    assert check is not None
    assert check.verified
    assert check.to_json() == {"verdict": "verified", "presented": "match", "proof": "valid"}
    for report in (verdict, added, check):
        with pytest.raises(TypeError, match="is a report"):
            bool(report)
        with pytest.raises(TypeError):
            assert report  # the misuse this convention refuses


def test_a_forged_settlement_cannot_pass_an_if() -> None:
    reg, signed = _signed()
    forged = copy.deepcopy(signed)
    forged["outcome"] = "declined"
    reg.add(forged)
    side = handoff.PrincipalSide(jwks=handoff.public_jwks(ed_key()), verifiable=True)
    check = handoff.settlement_evidence(reg, ITEM, side)
    assert check is not None
    assert check.verdict == "forged"
    assert not check.verified
    with pytest.raises(TypeError):
        _ = "accepted" if check else "refused"  # a forged verdict read as success
    ignored = handoff.check_record(
        {**raised(), "ext": "other/9.9"}, roles=ROLES, extensions=handoff.EXTENSIONS
    )
    assert ignored.status == "ignored"
    with pytest.raises(TypeError):
        bool(ignored)
