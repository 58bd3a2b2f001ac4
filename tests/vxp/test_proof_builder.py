"""VXP Proof issuer-side builder (docs/spec/vxp-proof.md §6, docs/spec/vxp.md §5.3): a
refusal is the caller's ``step_refused`` and changes nothing; what it signs reads back as
the verifier reads it; metadata and rotation helpers."""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import Any

import pytest

import vxp
from tests.vxp import demo_facts
from tests.vxp.demo_facts import CAPABILITY, COMPANY, LOG_ORIGIN, T0, TERMS, rfc3339, salts
from vxp import demo_key, demo_operation


def _at(seconds: float) -> Any:
    return T0 + timedelta(seconds=seconds)


def _builder(**terms_kw: Any) -> vxp.OperationBuilder:
    b = vxp.OperationBuilder(
        company=COMPANY,
        op_id="req_1",
        operator_key=demo_key("operator"),
        company_key=demo_key("company"),
        log=vxp.MerkleLog("test-log"),
        rng=salts("t"),
    )
    b.request(channel="vxp", client_id="https://agent.example", request={"a": 1}, now=_at(-1))
    kw: dict[str, Any] = {
        "capability": CAPABILITY,
        "terms": TERMS,
        "expires_at": _at(900),
        "read_back_terms": ["pedido", "despacho_nuevo"],
    }
    kw.update(terms_kw)
    b.terms(**kw, now=_at(0))
    return b


def _refused(b: vxp.OperationBuilder, fn: Any, reason: str) -> None:
    before = (b.statements, b.log.size, b.state)
    with pytest.raises(vxp.VxpUsageError) as info:  # the caller's mistake, not a peer's
        fn()
    assert (info.value.code, info.value.reason) == ("step_refused", reason)
    assert (b.statements, b.log.size, b.state) == before


def test_refusals_change_nothing() -> None:
    """§6, docs/spec/vxp.md §5.3: each refusal (a step out of order, sealing before the
    outcome) is the caller's ``step_refused``, a usage error, and changes nothing."""
    b = _builder()
    _refused(b, lambda: b.execute(release={}, now=_at(1)), "approval_missing")
    _refused(b, lambda: b.approve(now=_at(900)), "terms_expired_at_approval")
    _refused(b, lambda: b.correct(state="failed", fact={}, now=_at(1)), "p4_before_outcome")
    _refused(
        b,
        lambda: b.outcome(state="succeeded", result_summary={}, now=_at(1)),
        "succeeded_without_execution",
    )
    _refused(b, lambda: b.package(log_key=demo_key("log")), "outcome_missing")
    b.approve(now=_at(1))
    _refused(b, lambda: b.approve(now=_at(1)), "approval_repeated")
    b.execute(release={"r": 1}, now=_at(2))
    _refused(b, lambda: b.execute(release={"r": 2}, now=_at(3)), "p2_second_execution")
    _refused(
        b, lambda: b.outcome(state="succeeded", result_summary={}, now=_at(3)), "p6_no_read_back"
    )
    _refused(
        b,
        lambda: b.outcome(state="cancelled", result_summary={}, now=_at(3)),
        "executed_then_cancelled",
    )
    b.read_back(observed={"pedido": "P-1042", "despacho_nuevo": "2026-10-30"}, now=_at(3))
    _refused(
        b, lambda: b.outcome(state="succeeded", result_summary={}, now=_at(4)), "p5_contradiction"
    )
    b.outcome(state="unknown", result_summary={}, now=_at(4))
    _refused(b, lambda: b.correct(state="unknown", fact={}, now=_at(5)), "correction_no_change")
    _refused(b, lambda: b.correct(state="succeeded", fact={}, now=_at(5)), "p5_contradiction")
    b.revoke(reason={"why": 1}, now=_at(6))
    _refused(b, lambda: b.revoke(reason={"why": 2}, now=_at(7)), "after_revocation")


def test_counter_then_new_revision_then_approval_of_latest_only() -> None:
    b = _builder()
    b.counter(proposal={"despacho_nuevo": "2026-10-29"}, now=_at(1))
    b.terms(
        capability=CAPABILITY,
        terms={**TERMS, "despacho_nuevo": "2026-10-29"},
        expires_at=_at(900),
        read_back_terms=["pedido"],
        now=_at(2),
    )
    assert b.state.latest is not None
    assert b.state.latest.revision == 2
    b.approve(now=_at(3))
    b.execute(release={"r": 1}, now=_at(4))
    b.read_back(observed={"pedido": "P-1042"}, now=_at(5))
    b.outcome(state="succeeded", result_summary={}, now=_at(6))
    op = b.package(log_key=demo_key("log"))
    assert len(op["statements"]) == 8


def test_capability_cannot_change_between_revisions() -> None:
    b = _builder()
    _refused(
        b,
        lambda: b.terms(
            capability="other.cap",
            terms=TERMS,
            expires_at=_at(900),
            read_back_terms=[],
            now=_at(1),
        ),
        "capability_changed",
    )


def test_company_review_rejected_blocks_execution() -> None:
    b = _builder(company_review_required=True)
    b.review(decision="rejected", reviewer={"who": "x"}, now=_at(1))
    b.approve(now=_at(2))
    _refused(b, lambda: b.execute(release={}, now=_at(3)), "review_rejected")
    b.outcome(state="cancelled", result_summary={}, now=_at(4))


def test_builder_input_errors() -> None:
    with pytest.raises(vxp.VxpError):
        vxp.OperationBuilder(
            company="http://x",
            op_id="a",
            operator_key=demo_key("o"),
            company_key=demo_key("c"),
            log=vxp.MerkleLog("l"),
        )
    with pytest.raises(vxp.VxpError) as info:
        vxp.OperationBuilder(
            company=COMPANY,
            op_id="a",
            operator_key=dict(demo_key("o").as_dict(private=False)),
            company_key=demo_key("c"),
            log=vxp.MerkleLog("l"),
        )
    assert info.value.code == "key_not_private"
    b = _builder()
    with pytest.raises(vxp.VxpError) as info:
        b.terms(
            capability=CAPABILITY,
            terms=TERMS,
            expires_at=_at(9),
            read_back_terms=["nope"],
            now=_at(1),
        )
    assert info.value.code == "terms_invalid"
    with pytest.raises(vxp.VxpError):
        b.package(log_key=demo_key("log"))


def test_package_is_deterministic() -> None:
    assert demo_operation("succeeded").package == demo_operation("succeeded").package


def test_sqlite_log_survives_and_verifies(tmp_path: Any) -> None:
    store = vxp.stores.SqliteLogStore(
        tmp_path / "log.db", "store.example/e/ferreteria-demo/vxp-log"
    )
    log = vxp.MerkleLog("store.example/e/ferreteria-demo/vxp-log", store)
    op = demo_operation("succeeded")
    for i in range(op.builder.log.size):
        log.append(op.builder.log.entry(i))
    assert log.root() == op.builder.log.root()
    log.close()


def test_metadata_helpers() -> None:
    op = demo_operation("succeeded")
    kid = vxp.key_thumbprint(demo_key("company"))
    rotated = vxp.trust.rotate_key(op.metadata, "company", demo_key("company-2"), at=_at(10))
    entries = rotated["vxp_proof"]["keys"]
    assert [e["not_after"] for e in entries if e["kid"] == kid] == ["2026-10-22T22:30:39.356Z"]
    with pytest.raises(vxp.VxpError):
        vxp.trust.rotate_key(op.metadata, "log", demo_key("x"), at=_at(1))
    with pytest.raises(vxp.VxpError):
        vxp.trust.retire_key(rotated, kid, at=_at(20))
    with pytest.raises(vxp.VxpError):
        vxp.trust.unpublish_key(op.metadata, "nope")
    trust = vxp.trust.load_trust(op.metadata, op.jwks)
    assert trust.custody == "operator_hosted"
    assert trust.issuer == COMPANY
    with pytest.raises(vxp.VxpError) as info:
        vxp.build_metadata(
            COMPANY, jwks_uri="https://x", keys=[], custody="nobody", log_origin="l", log_kid="k"
        )
    assert info.value.code == "argument_invalid"  # build_metadata's arguments are the caller's


# the builder refuses what the verifier would refuse


def _last_logged(package: dict[str, Any]) -> int:
    times = [datetime.fromisoformat(e["logged_at"]) for e in package["log"]["entries"]]
    return math.floor(max(times).timestamp())


def _approved_builder(seed: str) -> vxp.OperationBuilder:
    b = vxp.OperationBuilder(
        company=COMPANY,
        op_id="x",
        operator_key=demo_key("operator"),
        company_key=demo_key("company"),
        log=vxp.MerkleLog(LOG_ORIGIN),
    )
    b.request(channel="vxp", client_id="https://a.example", request={"r": 1}, now=_at(-2))
    b.terms(capability="c", terms={"c": 1}, expires_at=_at(900), read_back_terms=["c"], now=_at(0))
    if seed == "agent":
        b.approve(now=_at(1))
    else:
        b.approve_signed(user_key=demo_key(seed), now=_at(1))
    b.execute(release={}, now=_at(2))
    return b


@pytest.mark.parametrize(
    "observed",
    [
        {"c": 1, "extra": {"k": vxp.Sd(1)}},
        {"c": 1, "extra": [vxp.Sd(1)]},
        {"c": 1, "extra": {"deeper": {"k": vxp.Sd("v")}}},
    ],
)
def test_builder_refuses_disclosures_nested_in_observed(observed: dict[str, Any]) -> None:
    b = _approved_builder("agent")
    before = (b.statements, b.log.size, b.state)
    with pytest.raises(vxp.VxpError) as info:
        b.read_back(observed=observed, now=_at(3))
    assert (info.value.code, info.value.reason) == ("step_refused", "sd_misplaced")
    assert (b.statements, b.log.size, b.state) == before  # nothing signed, nothing logged


def test_builder_accepts_a_top_level_disclosure_in_observed() -> None:
    b = _approved_builder("agent")
    b.read_back(observed={"c": 1, "extra": vxp.Sd({"k": 1})}, now=_at(3))
    b.outcome(state="succeeded", result_summary={}, now=_at(4))
    op = demo_operation("succeeded")
    package = b.package(log_key=demo_key("log"))
    verdict = vxp.verify(package, op.metadata, op.jwks, now=op.now)
    assert verdict.valid, verdict.failure


@pytest.mark.parametrize("seed", ["witness", "log"])
def test_builder_refuses_to_seal_a_user_approval_by_the_log_or_a_witness_key(seed: str) -> None:
    b = _approved_builder(seed)
    b.read_back(observed={"c": 1}, now=_at(3))
    b.outcome(state="succeeded", result_summary={}, now=_at(4))
    op = demo_operation("succeeded")
    last = _last_logged({"log": {"entries": [{"logged_at": rfc3339(_at(4))}]}})
    with pytest.raises(vxp.VxpError) as info:
        b.package(log_key=demo_key("log"), witnesses=[(demo_key("witness"), last)])
    assert (info.value.code, info.value.reason) == ("step_refused", "user_key_is_issuer_key")
    # the same operation approved by the user's own key seals and verifies
    good = _approved_builder("user")
    good.read_back(observed={"c": 1}, now=_at(3))
    good.outcome(state="succeeded", result_summary={}, now=_at(4))
    package = good.package(log_key=demo_key("log"), witnesses=[(demo_key("witness"), last)])
    verdict = vxp.verify(package, op.metadata, op.jwks, now=op.now)
    assert verdict.valid, verdict.failure
    assert verdict.approval == "user_signed"


def test_builder_refuses_a_witness_time_before_its_statements() -> None:
    """§5 (the verifier's witness_time): the builder never seals a cosignature dated
    before its last statement was logged."""
    op = demo_operation("succeeded")
    with pytest.raises(vxp.VxpUsageError) as err:
        op.builder.package(
            log_key=demo_key("log"), witnesses=[(demo_key("witness"), int(_at(3).timestamp()))]
        )
    assert (err.value.code, err.value.reason) == ("step_refused", "witness_time")


def test_builder_read_back_with_a_nested_disclosable_member_verifies() -> None:
    """§6: a personal read-back member may nest ``vxp.Sd`` values: the package verifies."""
    builder = demo_facts.builder("nested-personal")
    builder.read_back(
        observed={"pedido": "P-1", "dia": "2026-10-28"},
        personal={"receptor": {"nombre": vxp.Sd("Ana"), "doc": "X"}},
        now=_at(3),
    )
    builder.outcome(state="succeeded", result_summary={"ok": 1}, now=_at(4))
    package = builder.package(log_key=demo_key("log"))
    metadata, jwks = demo_facts.material()
    verdict = vxp.verify(package, metadata, jwks, now=_at(60))
    assert verdict.valid, verdict.failure
    assert "operator_reported_read_back" in verdict.derived_assurance
