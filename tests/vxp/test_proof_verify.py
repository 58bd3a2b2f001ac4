"""VXP Proof verifier: the draft's verdict, every final state, rotation, live, assurance table."""

from __future__ import annotations

import base64
import copy
import hashlib
import itertools
import json
from datetime import timedelta
from typing import Any

import pytest

import vxp
from tests.vxp.demo_facts import T0
from vxp import demo_key, demo_operation

DRAFT_VERDICT = {
    "valid": True,
    "final_state": "succeeded",
    "revision": 1,
    "approval": "agent_asserted",
    "derived_assurance": [
        "issuer_key_attested",
        "operator_observed",
        "operator_reported_read_back",
        "operator_reported_agent_approval",
    ],
    "single_root": "operator",
    "custody_declared": "operator_hosted",
    "logged": False,
    "company": "https://store.example/e/ferreteria-demo",
    "anchor": "issuer",
    "key_source": "issuer_metadata_live",
    "profile": "issuer",
    "statements": 6,
    "log_inclusion": "ok",
    "tree_size": 6,
    "live_tree_size": 6,
    "consistency": "ok",
    "witnesses": 0,
    "operation": "matches",
}


def _b64(text: str) -> Any:
    return json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))


def _decode(statement: str) -> tuple[dict[str, Any], dict[str, Any], list[list[Any]]]:
    """Decode a statement by hand (no vxp code): header, payload, disclosures."""
    jws, *rest = statement.split("~")
    header, payload, _sig = jws.split(".")
    disclosures = [_b64(d) for d in rest if d]
    return _b64(header), _b64(payload), disclosures


def _verify(op: Any, **kw: Any) -> dict[str, Any]:
    live = kw.pop("live", op.live)
    return vxp.verify(op.package, op.metadata, op.jwks, live=live, now=op.now, **kw).to_json()


def test_draft_example_gives_the_drafts_verdict_field_for_field() -> None:
    op = demo_operation("succeeded")
    assert _verify(op) == DRAFT_VERDICT
    assert list(_verify(op)) == list(DRAFT_VERDICT)


def test_draft_chain_has_the_drafts_shape() -> None:
    """Every statement has the draft's kind, signer, prev rule and body members."""
    op = demo_operation("succeeded")
    kinds = ["request", "terms", "user_approval", "execution", "read_back", "outcome"]
    signers = ["operator", "company", "operator", "operator", "operator", "company"]
    members = {
        "request": {"channel", "client_id", "request_digest"},
        "terms": {
            "capability",
            "commitment",
            "company_review_required",
            "expires_at",
            "read_back_terms",
            "revision",
            "terms_digest",
            "user_approval_required",
        },
        "user_approval": {"method", "revision", "terms_digest"},
        "execution": {"attempt", "capability", "release", "revision", "terms_digest"},
        "read_back": {"matches_terms", "method", "observed", "source"},
        "outcome": {
            "claimed_assurance",
            "result_summary_digest",
            "revision",
            "state",
            "terms_digest",
            "third_party",
        },
    }
    validator = vxp._schemas.validator("proof/statement-payload.json")
    header_validator = vxp._schemas.validator("proof/statement-header.json")
    for i, statement in enumerate(op.package["statements"]):
        header, payload, disclosures = _decode(statement)
        header_validator.validate(header)
        validator.validate(payload)
        assert header["typ"] == "vxp-stmt+sd-jwt"
        assert header["kid"] == vxp.key_thumbprint(
            demo_key("company" if signers[i] == "company" else "operator")
        )
        assert payload["seq"] == i
        assert payload["kind"] == kinds[i]
        assert payload["signer"] == signers[i]
        assert set(payload["body"]) == members[kinds[i]]
        assert (payload["prev"] is None) == (i == 0)
        if kinds[i] == "read_back":
            assert len(payload["body"]["observed"]["_sd"]) == 1
            assert payload["body"]["observed"]["pedido"] == "P-1042"
            assert disclosures[0][1:] == ["receptor", "Ana Pérez"]
        else:
            assert disclosures == []
    terms = _decode(op.package["statements"][1])[1]["body"]
    assert terms["expires_at"] == "2026-10-22T22:45:29.356Z"
    assert terms["read_back_terms"] == ["pedido", "despacho_nuevo"]
    outcome = _decode(op.package["statements"][5])[1]["body"]
    assert outcome["claimed_assurance"] == DRAFT_VERDICT["derived_assurance"]


def test_prev_is_the_digest_of_the_previous_issuer_signed_jwt() -> None:

    op = demo_operation("succeeded")
    statements = op.package["statements"]
    for before, after in itertools.pairwise(statements):
        digest = hashlib.sha256(before.split("~")[0].encode()).digest()
        expected = "sha-256:" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
        assert _decode(after)[1]["prev"] == expected


def test_schemas_accept_package_metadata_jwks_verdict() -> None:
    op = demo_operation("witnessed")
    vxp._schemas.validator("proof/package.json").validate(op.package)
    vxp._schemas.validator("proof/metadata.json").validate(op.metadata)
    vxp._schemas.validator("proof/jwks.json").validate(op.jwks)
    vxp._schemas.validator("proof/live.json").validate(op.live)
    vxp._schemas.validator("proof/verdict.json").validate(_verify(op))
    bad = vxp.verify({}, op.metadata, op.jwks, now=op.now).to_json()
    vxp._schemas.validator("proof/verdict.json").validate(bad)


@pytest.mark.parametrize("variant", vxp.DemoOperation.VARIANTS)
def test_every_variant_is_valid(variant: str) -> None:
    verdict = _verify(demo_operation(variant))
    assert verdict["valid"] is True, verdict.get("failure")
    expected = {
        "corrected": "failed",
        "reviewed": "succeeded",
        "witnessed": "succeeded",
        "rotated": "succeeded",
    }.get(variant, variant)
    assert verdict["final_state"] == expected


def test_withheld_disclosure_keeps_chain_and_verdict() -> None:
    op = demo_operation("succeeded")
    package = copy.deepcopy(op.package)
    package["statements"][4] = package["statements"][4].split("~")[0] + "~"
    verdict = vxp.verify(package, op.metadata, op.jwks, live=op.live, now=op.now)
    assert verdict.to_json() == DRAFT_VERDICT


def test_withheld_read_back_term_is_undecidable_not_overclaimed() -> None:
    """A read-back term sent as a disclosure and withheld: valid, but not derived."""

    def tamper(b: vxp.OperationBuilder) -> None:
        b.execute(release={"r": 1}, now=_at(2))
        b.read_back(
            observed={"pedido": "P-1042"},
            personal={"despacho_nuevo": "2026-10-28"},
            now=_at(3),
        )
        b.outcome(state="succeeded", result_summary={"ok": 1}, now=_at(4))

    op = demo_operation("succeeded", tamper=tamper)
    full = _verify(op)
    assert full["valid"] is True
    assert "operator_reported_read_back" in full["derived_assurance"]
    package = copy.deepcopy(op.package)
    package["statements"][4] = package["statements"][4].split("~")[0] + "~"
    hidden = vxp.verify(package, op.metadata, op.jwks, live=op.live, now=op.now).to_json()
    assert hidden["valid"] is True
    assert "operator_reported_read_back" not in hidden["derived_assurance"]


def _at(seconds: float) -> Any:

    return T0 + timedelta(seconds=seconds)


def test_offline_and_grown_log() -> None:
    op = demo_operation("succeeded")
    offline = _verify(op, live=None)
    assert offline["key_source"] == "issuer_metadata_saved"
    assert offline["consistency"] == "not_checked"
    assert offline["live_tree_size"] is None
    grown = _verify(op, live=op.extend_log(7))
    assert (grown["valid"], grown["tree_size"], grown["live_tree_size"]) == (True, 6, 13)


def test_live_checkpoint_smaller_than_packaged_is_refused() -> None:
    op = demo_operation("succeeded")
    small = demo_operation("failed")  # 5 statements in a log of the same origin and key
    live = {**op.live, "checkpoint": small.live["checkpoint"]}
    verdict = _verify(op, live=live)
    assert verdict["failure"]["code"] == "live_inconsistent"


def test_request_id_must_match() -> None:
    op = demo_operation("succeeded")
    assert _verify(op, request_id="req_01JB7Q2X9M")["valid"] is True
    assert _verify(op, request_id="req_other")["failure"]["code"] == "operation_mismatch"


def test_request_binds_the_package_to_the_callers_request() -> None:
    op = demo_operation("succeeded")
    mine = {
        "request_id": "req_01JB7Q2X9M",
        "capability": "pedido.reprogramar_despacho",
        "params": {"pedido": "P-1042", "despacho_nuevo": "2026-10-28"},
    }
    assert _verify(op, request=mine)["valid"] is True
    other = {**mine, "request_id": "req_other"}
    assert _verify(op, request=other)["failure"]["code"] == "operation_mismatch"


def test_live_metadata_of_another_issuer_is_refused() -> None:
    op = demo_operation("succeeded")
    other = copy.deepcopy(op.metadata)
    other["issuer"] = "https://evil.example"
    verdict = _verify(op, live={**op.live, "metadata": other})
    assert verdict["failure"] == {
        "code": "live_invalid",
        "reason": "issuer_changed",
        "message": "the live metadata names another issuer",
    }


def test_rotation_saved_versus_live() -> None:
    op = demo_operation("rotated")
    old = vxp.key_thumbprint(demo_key("company"))
    live_md = vxp.trust.unpublish_key(op.metadata, old)
    live_jwks = {"keys": [k for k in op.jwks["keys"] if k["kid"] != old]}
    live = {**op.live, "metadata": live_md, "jwks": live_jwks}
    verdict = _verify(op, live=live)
    assert verdict["valid"] is True
    assert verdict["key_source"] == "issuer_metadata_saved"
    only_live = vxp.verify(op.package, live_md, live_jwks, now=op.now).to_json()
    assert only_live["valid"] is False
    assert only_live["failure"]["code"] == "key_untrusted"


def test_retire_then_sign_is_refused_by_the_verifier() -> None:
    op = demo_operation("succeeded")
    retired = vxp.trust.retire_key(
        op.metadata, vxp.key_thumbprint(demo_key("operator")), at=_at(2.5)
    )
    verdict = vxp.verify(op.package, retired, op.jwks, now=op.now).to_json()
    assert verdict["failure"]["reason"] == "key_not_valid_at_time"


def test_company_held_and_self_operated_custody() -> None:
    held = _verify(demo_operation("succeeded", custody="company_held"))
    assert (held["single_root"], held["custody_declared"]) == (None, "company_held")
    own = _verify(demo_operation("succeeded", custody="self_operated"))
    assert (own["single_root"], own["custody_declared"]) == ("company", "self_operated")


@pytest.mark.parametrize(
    "bad",
    [None, [], "x", {"v": 1}, {"v": True, "company": 1, "op": 1, "statements": 1, "log": 1}],
)
def test_malformed_packages_fail_closed(bad: Any) -> None:
    op = demo_operation("succeeded")
    verdict = vxp.verify(bad, op.metadata, op.jwks, now=op.now)
    assert verdict.valid is False
    assert verdict.failure is not None
    assert verdict.failure["code"] == "package_malformed"
    assert verdict.derived_assurance == ()


@pytest.mark.parametrize(
    "mutate",
    [
        lambda p: p["statements"].append(p["statements"][0]),
        lambda p: p["log"]["entries"][0].update(index=True),
        lambda p: p["log"]["entries"][0].update(proof="x"),
        lambda p: p["log"]["entries"][0].update(logged_at="yesterday"),
        lambda p: p["log"].update(checkpoint=[]),
        lambda p: p["statements"].__setitem__(0, 5),
        lambda p: p["statements"].__setitem__(0, "a.b.c~"),
        lambda p: p["op"].update(id=3),
    ],
)
def test_odd_shapes_never_leak_python_errors(mutate: Any) -> None:
    op = demo_operation("succeeded")
    package = copy.deepcopy(op.package)
    mutate(package)
    verdict = vxp.verify(package, op.metadata, op.jwks, live=op.live, now=op.now)
    assert verdict.valid is False


def test_bad_metadata_and_jwks() -> None:
    op = demo_operation("succeeded")
    for md in ({}, {"issuer": "http://x", "vxp_proof": {}}, {**op.metadata, "vxp_proof": 3}):
        assert vxp.verify(op.package, md, op.jwks, now=op.now).failure["code"] == "metadata_invalid"  # type: ignore[index]
    wrong_kid = copy.deepcopy(op.jwks)
    wrong_kid["keys"][0]["kid"] = "x"
    verdict = vxp.verify(op.package, op.metadata, wrong_kid, now=op.now)
    assert verdict.failure == {
        "code": "metadata_invalid",
        "reason": "jwks_kid",
        "message": "JWKS key 0 has a kid that is not its RFC 7638 thumbprint",
    }
    private = copy.deepcopy(op.jwks)
    private["keys"][0] = dict(demo_key("operator").as_dict(private=True))
    assert vxp.verify(op.package, op.metadata, private, now=op.now).valid is False


def test_naive_now_is_the_callers_usage_error_not_a_verdict() -> None:
    op = demo_operation("succeeded")
    naive = op.now.replace(tzinfo=None)
    with pytest.raises(vxp.VxpUsageError) as caught:
        vxp.verify(op.package, op.metadata, op.jwks, now=naive)
    assert caught.value.code == "time_naive"
    with pytest.raises(vxp.VxpUsageError) as caught:
        vxp.Verifier(op.metadata, op.jwks).verify(op.package, now=naive)
    assert caught.value.code == "time_naive"


def test_statement_logged_after_now_is_refused() -> None:
    op = demo_operation("succeeded")
    verdict = vxp.verify(op.package, op.metadata, op.jwks, now=_at(3.5))
    assert verdict.failure is not None
    assert verdict.failure["reason"] == "logged_in_future"


# ----------------------------------------------------------- independent assurance table


def _independent_assurance(package: dict[str, Any], verdict: dict[str, Any]) -> list[str]:
    """The spec's derivation table, re-encoded from hand-decoded statements."""
    decoded = []
    for statement in package["statements"]:
        _h, payload, disclosures = _decode(statement)
        body = payload["body"]
        if payload["kind"] == "read_back":
            observed = {k: v for k, v in body["observed"].items() if k != "_sd"}
            observed.update({d[1]: d[2] for d in disclosures})
            body = {**body, "observed": observed}
        decoded.append((payload["kind"], body))
    terms = [b for k, b in decoded if k == "terms"]
    last = terms[-1]
    found = []
    found.append("issuer_key_attested")
    if any(k == "execution" for k, _ in decoded):
        found.append("operator_observed")
    rbs = [b for k, b in decoded if k == "read_back"]
    if (
        rbs
        and rbs[0]["matches_terms"] is True
        and last["read_back_terms"]
        and all(t in rbs[0]["observed"] for t in last["read_back_terms"])
    ):
        found.append("operator_reported_read_back")
    approvals = [
        b for k, b in decoded if k == "user_approval" and b["revision"] == last["revision"]
    ]
    if approvals and approvals[-1]["method"] == "agent_asserted":
        found.append("operator_reported_agent_approval")
    if approvals and approvals[-1]["method"] == "user_signed":
        found.append("user_signed_approval")
    reviews = [b for k, b in decoded if k == "company_review" and b["revision"] == last["revision"]]
    if reviews and reviews[-1]["decision"] == "approved":
        found.append("company_reviewed")
    if verdict["witnesses"] >= 1:
        found.append("witnessed_log")
    return found


@pytest.mark.parametrize("variant", vxp.DemoOperation.VARIANTS)
def test_assurance_matches_the_independent_table(variant: str) -> None:
    op = demo_operation(variant)
    verdict = _verify(op)
    assert verdict["derived_assurance"] == _independent_assurance(op.package, verdict)
    claimed = _decode(
        next(s for s in op.package["statements"] if _decode(s)[1]["kind"] == "outcome")
    )[1]["body"]["claimed_assurance"]
    assert set(claimed) <= set(verdict["derived_assurance"])


# §8 stage 1: the package's shape, read once; the statement cap


def _failure(package: Any, metadata: Any, jwks: Any, *, live: Any = None, now: Any) -> Any:
    verdict = vxp.verify(package, metadata, jwks, live=live, now=now)
    assert verdict.valid is False
    assert verdict.derived_assurance == ()
    assert verdict.failure is not None
    return (verdict.failure["code"], verdict.failure.get("reason"))


@pytest.mark.parametrize("version", [1.0, True, "1", 2])
def test_package_version_is_the_integer_1(version: Any) -> None:
    op = demo_operation("succeeded")
    package = {**op.package, "v": version}
    assert _failure(package, op.metadata, op.jwks, now=op.now) == ("package_malformed", "version")


def _failed_with(verdict: vxp.Verdict) -> tuple[str, str | None]:
    assert verdict.valid is False
    assert verdict.failure is not None
    return verdict.failure["code"], verdict.failure.get("reason")


class _ShortList(list):  # type: ignore[type-arg]
    def __len__(self) -> int:
        return 6


class _LyingKeys(dict):  # type: ignore[type-arg]
    def keys(self) -> Any:
        return {"v", "company", "op", "statements", "log"}


def test_lying_list_and_dict_subclasses_are_read_as_their_contents() -> None:
    op = demo_operation("succeeded")
    op.builder.revoke(reason={"r": 1}, now=_at(10))  # a 7th signed statement
    package = dict(op.package, statements=_ShortList(op.builder.statements))
    verdict = vxp.verify(package, op.metadata, op.jwks, now=op.now)
    assert _failed_with(verdict) == ("package_malformed", "log_entries")
    verifier = vxp.Verifier(op.metadata, op.jwks)
    assert _failed_with(verifier.verify(package, now=op.now)) == (
        "package_malformed",
        "log_entries",
    )
    no_v = _LyingKeys({k: v for k, v in op.package.items() if k != "v"})
    assert _failed_with(verifier.verify(no_v, now=op.now)) == ("package_malformed", "members")
    assert _failed_with(vxp.verify(no_v, op.metadata, op.jwks, now=op.now)) == (
        "package_malformed",
        "members",
    )


def _padded(op: vxp.DemoOperation, n: int) -> dict[str, Any]:
    """A package of ``n`` statements (one repeated): refused, but only after its shape."""
    package = copy.deepcopy(op.package)
    package["statements"] = [package["statements"][0]] + [package["statements"][3]] * (n - 1)
    entries = package["log"]["entries"]
    package["log"]["entries"] = [entries[0]] + [entries[3]] * (n - 1)
    return package


def test_default_statement_cap_is_4096() -> None:
    op = demo_operation("succeeded")
    verifier = vxp.Verifier(op.metadata, op.jwks)
    assert vxp.statements.MAX_STATEMENTS == 4096
    over = verifier.verify(_padded(op, 4097), now=op.now)
    assert _failed_with(over) == ("package_malformed", "too_many_statements")
    at_cap = verifier.verify(_padded(op, 4096), now=op.now)
    assert _failed_with(at_cap) != ("package_malformed", "too_many_statements")
    assert _failed_with(vxp.verify(_padded(op, 4097), op.metadata, op.jwks, now=op.now)) == (
        "package_malformed",
        "too_many_statements",
    )


def test_statement_cap_is_the_callers() -> None:
    op = demo_operation("succeeded")
    verifier = vxp.Verifier(op.metadata, op.jwks)
    assert verifier.verify(op.package, now=op.now, max_statements=6).valid
    assert _failed_with(verifier.verify(op.package, now=op.now, max_statements=5)) == (
        "package_malformed",
        "too_many_statements",
    )
    one_shot = vxp.verify(op.package, op.metadata, op.jwks, now=op.now, max_statements=5)
    assert _failed_with(one_shot) == ("package_malformed", "too_many_statements")


@pytest.mark.parametrize("cap", [0, -1, True, 1.5, "6", None, 2**20 + 1])
def test_statement_cap_must_be_a_sensible_integer(cap: Any) -> None:
    op = demo_operation("succeeded")
    verifier = vxp.Verifier(op.metadata, op.jwks)
    with pytest.raises(vxp.VxpUsageError, match="max_statements_invalid"):
        verifier.verify(op.package, now=op.now, max_statements=cap)
    with pytest.raises(vxp.VxpUsageError, match="max_statements_invalid"):
        vxp.verify(op.package, op.metadata, op.jwks, now=op.now, max_statements=cap)
