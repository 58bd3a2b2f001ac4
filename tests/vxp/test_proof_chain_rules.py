"""VXP Proof §6 chain rules (P1 to P7) and user-signed approvals: each attack that once
passed, run on the real path (real keys, real signatures, the real verifier).

Private imports: ``vxp._statements.sign_user_approval`` forges user approvals the builder
never makes (a revision of another number or JSON type, an approval replayed into another
chain), signed with a real user key, so that the verifier's check of them runs; a user has
no reason to call it.
"""

from __future__ import annotations

import copy
import hashlib
import json
from datetime import timedelta
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import ed25519
from joserfc.jwk import OKPKey

import vxp
from tests.vxp import demo_facts, forge
from tests.vxp.demo_facts import CAPABILITY, COMPANY, LOG_ORIGIN, T0, TERMS
from vxp import demo_key, demo_operation
from vxp._statements import sign_user_approval
from vxp.codec import b64url_encode
from vxp.statements import jwt_digest


def _at(seconds: float) -> Any:
    return T0 + timedelta(seconds=seconds)


def _failure(package: Any, metadata: Any, jwks: Any, *, live: Any = None, now: Any) -> Any:
    verdict = vxp.verify(package, metadata, jwks, live=live, now=now)
    assert verdict.valid is False
    assert verdict.derived_assurance == ()
    assert verdict.failure is not None
    return (verdict.failure["code"], verdict.failure.get("reason"))


def _relax(b: vxp.OperationBuilder) -> None:
    """After the user approved revision 1, revision 2 drops the approval it required."""
    b.unsafe_append(
        "terms",
        {
            "capability": CAPABILITY,
            "commitment": {"mode": "firm", "requires": []},
            "company_review_required": False,
            "expires_at": "2026-10-22T22:45:29.356Z",
            "read_back_terms": ["pedido", "despacho_nuevo"],
            "revision": 2,
            "terms_digest": vxp.statements.digest_of({**TERMS, "despacho_nuevo": "2030-01-01"}),
            "user_approval_required": False,
        },
        now=_at(1.2),
    )
    b.unsafe_append(
        "execution",
        {
            "attempt": 1,
            "capability": CAPABILITY,
            "release": vxp.statements.digest_of({"r": 1}),
            "revision": 2,
            "terms_digest": vxp.statements.digest_of({**TERMS, "despacho_nuevo": "2030-01-01"}),
        },
        now=_at(2),
    )


def test_revision_cannot_drop_a_required_approval_after_it_was_given() -> None:
    op = demo_operation("succeeded", tamper=_relax)
    assert _failure(op.package, op.metadata, op.jwks, now=op.now) == (
        "rule_violation",
        "requirement_relaxed",
    )
    builder = demo_operation("succeeded", tamper=lambda b: None).builder
    with pytest.raises(vxp.VxpError) as info:
        builder.terms(
            capability=CAPABILITY,
            terms={**TERMS, "despacho_nuevo": "2030-01-01"},
            expires_at=_at(900),
            read_back_terms=["pedido"],
            user_approval_required=False,
            now=_at(1.2),
        )
    assert info.value.reason == "requirement_relaxed"


def test_revision_cannot_drop_a_required_company_review() -> None:
    builder = demo_operation("succeeded", tamper=lambda b: None).builder
    builder.terms(
        capability=CAPABILITY,
        terms={**TERMS, "v": 2},
        expires_at=_at(900),
        read_back_terms=["pedido"],
        company_review_required=True,
        now=_at(1.2),
    )
    with pytest.raises(vxp.VxpError) as info:
        builder.terms(
            capability=CAPABILITY,
            terms={**TERMS, "v": 3},
            expires_at=_at(900),
            read_back_terms=["pedido"],
            company_review_required=False,
            now=_at(1.3),
        )
    assert info.value.reason == "requirement_relaxed"
    # Tightening is always allowed.
    builder.terms(
        capability=CAPABILITY,
        terms={**TERMS, "v": 3},
        expires_at=_at(900),
        read_back_terms=["pedido"],
        company_review_required=True,
        now=_at(1.3),
    )


def test_builder_compares_read_back_as_json_values_not_python_values() -> None:
    """True == 1 in Python: a system showing true where the terms say 1 used to match."""
    builder = demo_operation("succeeded", tamper=lambda b: None).builder
    builder.terms(
        capability=CAPABILITY,
        terms={"qty": 1, "flag": 0, "size": 2.0},
        expires_at=_at(900),
        read_back_terms=["qty", "flag", "size"],
        now=_at(1.2),
    )
    builder.approve(now=_at(1.3))
    builder.execute(release={"r": 1}, now=_at(2))
    builder.read_back(observed={"qty": True, "flag": False, "size": 2}, now=_at(3))
    assert builder.state.read_back is not None
    assert builder.state.read_back["matches_terms"] is False
    with pytest.raises(vxp.VxpError) as info:
        builder.outcome(state="succeeded", result_summary={}, now=_at(4))
    assert info.value.reason == "p5_contradiction"


def test_read_back_with_json_equal_numbers_matches() -> None:
    builder = demo_operation("succeeded", tamper=lambda b: None).builder
    builder.terms(
        capability=CAPABILITY,
        terms={"size": 2.0},
        expires_at=_at(900),
        read_back_terms=["size"],
        now=_at(1.2),
    )
    builder.approve(now=_at(1.3))
    builder.execute(release={"r": 1}, now=_at(2))
    builder.read_back(observed={"size": 2}, now=_at(3))
    assert builder.state.read_back is not None
    assert builder.state.read_back["matches_terms"] is True


def test_correction_to_expired_before_the_terms_expired_is_refused() -> None:
    def tamper(b: vxp.OperationBuilder) -> None:
        b.outcome(state="cancelled", result_summary={}, now=_at(4))
        latest = b.state.latest
        assert latest is not None
        body = {
            "corrects": 3,
            "fact_digest": vxp.statements.digest_of({"f": 1}),
            "revision": 1,
            "state": "expired",
            "terms_digest": latest.terms_digest,
        }
        b.unsafe_append("correction", body, now=_at(5))

    op = demo_operation("succeeded", tamper=tamper)
    assert _failure(op.package, op.metadata, op.jwks, now=op.now) == (
        "rule_violation",
        "expired_too_early",
    )
    builder = demo_operation("succeeded", tamper=lambda b: None).builder
    builder.outcome(state="cancelled", result_summary={}, now=_at(4))
    with pytest.raises(vxp.VxpError) as info:
        builder.correct(state="expired", fact={"f": 1}, now=_at(5))
    assert info.value.reason == "expired_too_early"
    builder.correct(state="expired", fact={"f": 1}, now=_at(901))


def _signed_approval_by(user_key: Any, *, private: bool = False):  # type: ignore[no-untyped-def]
    def tamper(b: vxp.OperationBuilder) -> None:
        b.terms(
            capability=CAPABILITY,
            terms={**TERMS, "v": 2},
            expires_at=_at(900),
            read_back_terms=["pedido"],
            now=_at(1.1),
        )
        latest = b.state.latest
        request = b.state.request
        assert latest is not None
        assert request is not None
        terms_statement = jwt_digest(b.statements[latest.seq].split("~", 1)[0])
        jwk, token = sign_user_approval(
            user_key, request["request_digest"], 2, latest.terms_digest, terms_statement
        )
        if private:
            jwk = dict(user_key.as_dict(private=True))
        body = {
            "method": "user_signed",
            "revision": 2,
            "terms_digest": latest.terms_digest,
            "user_key": jwk,
            "user_signature": token,
        }
        b.unsafe_append("user_approval", body, now=_at(1.2))
        b.execute(release={"r": 1}, now=_at(2))
        b.outcome(state="failed", result_summary={}, now=_at(4))

    return demo_operation("succeeded", tamper=tamper)


@pytest.mark.parametrize("who", ["operator", "company", "log", "witness"])
def test_user_signed_approval_by_an_issuer_key_is_refused(who: str) -> None:
    """The operator signing "as the user" used to earn user_signed_approval."""
    op = _signed_approval_by(demo_key(who))
    assert _failure(op.package, op.metadata, op.jwks, now=op.now) == (
        "rule_violation",
        "user_key_is_issuer_key",
    )


def test_user_signed_approval_by_the_user_is_accepted_and_private_user_key_refused() -> None:
    op = _signed_approval_by(demo_key("user"))
    verdict = vxp.verify(op.package, op.metadata, op.jwks, now=op.now)
    assert verdict.valid, verdict.failure
    assert verdict.approval == "user_signed"
    op = _signed_approval_by(demo_key("user"), private=True)
    assert _failure(op.package, op.metadata, op.jwks, now=op.now) == (
        "rule_violation",
        "user_signature_invalid",
    )


def test_builder_refuses_its_own_key_as_the_users() -> None:
    builder = demo_operation("succeeded", tamper=lambda b: None).builder
    builder.terms(
        capability=CAPABILITY,
        terms={**TERMS, "v": 2},
        expires_at=_at(900),
        read_back_terms=["pedido"],
        now=_at(1.1),
    )
    with pytest.raises(vxp.VxpError) as info:
        builder.approve_signed(user_key=demo_key("operator"), now=_at(1.2))
    assert info.value.reason == "user_key_is_issuer_key"


def test_matching_read_back_hides_no_more_terms_than_it_has_digests() -> None:
    """One withheld digest can hide one term: a matching read-back missing two terms with a
    single digest (a decoy, or one personal field) was accepted as complete-but-hidden."""

    def tamper(b: vxp.OperationBuilder) -> None:
        b.execute(release={"r": 1}, now=_at(2))
        body = {
            "matches_terms": True,
            "method": "system_read_back",
            "observed": {},
            "source": "company_system",
        }
        b.unsafe_append("read_back", body, now=_at(3), personal={"receptor": "Ana"})
        b.unsafe_append(
            "outcome",
            {
                "claimed_assurance": ["issuer_key_attested", "operator_observed"],
                "result_summary_digest": vxp.statements.digest_of({}),
                "revision": 1,
                "state": "succeeded",
                "terms_digest": b.state.latest.terms_digest,  # type: ignore[union-attr]
                "third_party": [],
            },
            now=_at(4),
        )

    op = demo_operation("succeeded", tamper=tamper)
    withheld = copy.deepcopy(op.package)
    withheld["statements"][4] = withheld["statements"][4].split("~")[0] + "~"
    for package in (op.package, withheld):
        assert _failure(package, op.metadata, op.jwks, now=op.now) == (
            "rule_violation",
            "read_back_incomplete",
        )


def _replayed_user_approval(expires_at: Any) -> Any:
    """Issue the "reviewed" operation's request again, then terms revision 1 with the same
    terms object (so the same terms_digest) expiring at ``expires_at``, and replay the
    user's signed approval from the genuine operation."""
    genuine = demo_operation("reviewed")
    approval = next(s for s in genuine.builder.statements if '"user_signed"' in _payload(s))
    body = _json(_payload(approval))["body"]
    b = vxp.OperationBuilder(
        company=COMPANY,
        op_id="req_01JB7Q2X9M",
        operator_key=demo_key("operator"),
        company_key=demo_key("company"),
        log=vxp.MerkleLog(LOG_ORIGIN),
    )
    request = {
        "request_id": "req_01JB7Q2X9M",
        "capability": CAPABILITY,
        "params": {"pedido": "P-1042", "despacho_nuevo": "2026-10-28"},
    }
    b.request(
        channel="vxp", client_id="https://agent.example/agent.json", request=request, now=_at(-2)
    )
    b.terms(
        capability=CAPABILITY,
        terms=TERMS,
        expires_at=expires_at,
        read_back_terms=["pedido", "despacho_nuevo"],
        company_review_required=True,
        now=_at(0),
    )
    b.review(decision="approved", reviewer={"role": "supervisor"}, now=_at(1))
    b.unsafe_append("user_approval", body, now=_at(1.5))
    b.execute(release={"order": "P-1042"}, now=_at(2))
    b.outcome(state="failed", result_summary={}, now=_at(4))
    package = b.package(log_key=demo_key("log"))
    return vxp.verify(package, genuine.metadata, genuine.jwks, now=genuine.now)


def test_user_signature_cannot_be_moved_to_a_terms_statement_with_other_expiry() -> None:
    """The operator (holding both keys) re-issues revision 1 with the same terms_digest but
    a later expiry, and replays the user's signed approval: the user signature binds the
    exact terms statement (it used to bind only the terms_digest), so it fails."""
    control = _replayed_user_approval(_at(15 * 60))  # the very terms statement the user saw
    assert control.valid, control.failure
    assert "user_signed_approval" in control.derived_assurance
    forged = _replayed_user_approval(_at(86_400))
    assert forged.valid is False
    assert forged.failure is not None
    assert (forged.failure["code"], forged.failure["reason"]) == (
        "rule_violation",
        "user_signature_invalid",
    )


def _payload(statement: str) -> str:
    import base64

    part = statement.split("~", 1)[0].split(".")[1]
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)).decode()


def _json(text: str) -> Any:
    import json

    return json.loads(text)


def _failed_with(verdict: vxp.Verdict) -> tuple[str, str | None]:
    assert verdict.valid is False
    assert verdict.failure is not None
    return verdict.failure["code"], verdict.failure.get("reason")


def _issuer_key_as_user(seed: str) -> tuple[dict[str, Any], vxp.DemoOperation]:
    op = demo_operation("reviewed")
    b = vxp.OperationBuilder(
        company=op.builder.company,
        op_id="x",
        operator_key=demo_key("operator"),
        company_key=demo_key("company"),
        log=vxp.MerkleLog(op.builder.log.origin),
    )
    b.request(channel="vxp", client_id="https://a.example", request={"r": 1}, now=_at(-2))
    b.terms(capability="c", terms={"c": 1}, expires_at=_at(900), read_back_terms=["c"], now=_at(0))
    forge.log_user_approval(b, demo_key(seed), now=_at(1))
    b.execute(release={}, now=_at(2))
    b.read_back(observed={"c": 1}, now=_at(3))
    b.outcome(state="succeeded", result_summary={}, now=_at(4))
    return b.package(log_key=demo_key("log")), op


def test_witness_key_absent_from_the_jwks_is_still_the_issuers() -> None:
    package, op = _issuer_key_as_user("witness")
    expected = ("rule_violation", "user_key_is_issuer_key")
    assert _failed_with(vxp.verify(package, op.metadata, op.jwks, now=op.now)) == expected
    witness_kid = vxp.key_thumbprint(demo_key("witness"))
    jwks = {"keys": [k for k in op.jwks["keys"] if k["kid"] != witness_kid]}
    assert _failed_with(vxp.verify(package, op.metadata, jwks, now=op.now)) == expected
    # the same witness named only by live metadata
    saved = copy.deepcopy(op.metadata)
    saved["vxp_proof"]["log"]["witnesses"] = []
    verifier = vxp.Verifier(saved, jwks, live_metadata=op.metadata, live_jwks=jwks)
    assert _failed_with(verifier.verify(package, now=op.now)) == expected


def test_log_key_absent_from_the_jwks_is_still_the_issuers() -> None:
    package, op = _issuer_key_as_user("log")
    log_kid = vxp.key_thumbprint(demo_key("log"))
    jwks = {"keys": [k for k in op.jwks["keys"] if k["kid"] != log_kid]}
    # stage 5 (chain) comes before stage 6 (log), so the missing log key is not reached
    expected = ("rule_violation", "user_key_is_issuer_key")
    assert _failed_with(vxp.verify(package, op.metadata, jwks, now=op.now)) == expected


def _ready_for_approval() -> vxp.OperationBuilder:
    b = vxp.OperationBuilder(
        company=COMPANY,
        op_id="x",
        operator_key=demo_key("operator"),
        company_key=demo_key("company"),
        log=vxp.MerkleLog(LOG_ORIGIN),
    )
    b.request(channel="vxp", client_id="https://a.example", request={"r": 1}, now=_at(-2))
    b.terms(capability="c", terms={"c": 1}, expires_at=_at(900), read_back_terms=["c"], now=_at(0))
    return b


def _ed25519(seed: str) -> dict[str, Any]:
    """A private Ed25519 JWK derived from ``seed`` (Ana has one Ed25519 key, errand)."""
    private = ed25519.Ed25519PrivateKey.from_private_bytes(hashlib.sha256(seed.encode()).digest())
    return {
        "kty": "OKP",
        "crv": "Ed25519",
        "x": b64url_encode(private.public_key().public_bytes_raw()),
        "d": b64url_encode(private.private_bytes_raw()),
    }


def _her_device(payload: dict[str, Any], seed: str = "ana") -> tuple[dict[str, Any], bytes]:
    """Ana's own device: her private key never leaves it; it signs the bytes it rebuilt."""
    key = OKPKey.import_key(_ed25519(seed))
    public = key.as_dict(private=False)
    return public, forge.sign(key, vxp.statements.approval_signing_input(public, payload))


def test_shop_logs_an_approval_the_user_signed_on_her_own_device() -> None:
    b = _ready_for_approval()
    payload = b.approval_payload()
    state = b.state
    assert state.latest is not None
    assert state.request is not None
    assert payload == vxp.statements.approval_payload(
        state.request["request_digest"],
        1,
        state.latest.terms_digest,
        jwt_digest(b.statements[state.latest.seq].split("~", 1)[0]),
    )
    public_jwk, signature = _her_device(payload)
    assert "d" not in public_jwk
    b.approve_with_signature(user_key=public_jwk, signature=signature, now=_at(1))
    b.execute(release={}, now=_at(2))
    b.read_back(observed={"c": 1}, now=_at(3))
    b.outcome(state="succeeded", result_summary={}, now=_at(4))
    op = demo_operation("succeeded")
    verdict = vxp.verify(b.package(log_key=demo_key("log")), op.metadata, op.jwks, now=op.now)
    assert verdict.valid, verdict.failure
    assert verdict.approval == "user_signed"
    assert "user_signed_approval" in verdict.derived_assurance


def test_detached_approval_matches_the_builders_own_signing() -> None:
    """approve_signed (private key in hand) and approve_with_signature (signature from the
    device) sign the same bytes: one statement, byte for byte."""
    key = _ed25519("ana")
    a = _ready_for_approval()
    a.approve_signed(user_key=key, now=_at(1))
    b = _ready_for_approval()
    public_jwk, signature = _her_device(b.approval_payload())
    b.approve_with_signature(user_key=public_jwk, signature=signature, now=_at(1))
    pa, pb = (x.statements[-1].split("~", 1)[0].split(".")[1] for x in (a, b))
    assert pa == pb


def _refused(b: vxp.OperationBuilder, **kwargs: Any) -> tuple[str, str | None]:
    before = (b.statements, b.log.size, b.state)
    with pytest.raises(vxp.VxpError) as info:
        b.approve_with_signature(now=_at(1), **kwargs)
    assert (b.statements, b.log.size, b.state) == before  # nothing signed, nothing logged
    return info.value.code, info.value.reason


def test_detached_approval_that_does_not_verify_is_refused() -> None:
    b = _ready_for_approval()
    payload = b.approval_payload()
    public_jwk, signature = _her_device(payload)
    bad = ("rule_violation", "user_signature_invalid")
    flipped = bytes([signature[0] ^ 1]) + signature[1:]
    assert _refused(b, user_key=public_jwk, signature=flipped) == bad
    other_jwk, _ = _her_device(payload, seed="mallory")
    assert _refused(b, user_key=other_jwk, signature=signature) == bad
    stale = {**payload, "revision": 2}
    assert _refused(b, user_key=public_jwk, signature=_her_device(stale)[1]) == bad
    assert _refused(b, user_key=public_jwk, signature=signature[:-1]) == bad
    for not_bytes in ("AAAA", None, 3, [1, 2]):
        assert _refused(b, user_key=public_jwk, signature=not_bytes) == bad
    assert (
        _refused(b, user_key={"kty": "EC", "crv": "P-256"}, signature=signature)[0] == "key_invalid"
    )
    operator = demo_key("operator")
    public = operator.as_dict(private=False)
    assert _refused(
        b,
        user_key=public,
        signature=forge.sign(operator, vxp.statements.approval_signing_input(public, payload)),
    ) == ("step_refused", "user_key_is_issuer_key")
    # and the good one after all these refusals
    b.approve_with_signature(user_key=public_jwk, signature=signature, now=_at(1))
    assert b.state.approval is not None


def test_approval_signing_input_is_the_jws_signing_input() -> None:
    public = OKPKey.import_key(_ed25519("ana")).as_dict(private=False)
    payload = vxp.statements.approval_payload(
        "sha-256:" + "A" * 43, 1, "sha-256:" + "B" * 43, "sha-256:x"
    )
    header_b64, payload_b64 = vxp.statements.approval_signing_input(public, payload).split(b".")
    header = json.loads(base64_decode(header_b64))
    assert header == {"alg": "EdDSA", "kid": vxp.key_thumbprint(public), "typ": "vxp-approval+jwt"}
    assert json.loads(base64_decode(payload_b64)) == payload
    with pytest.raises(vxp.VxpError):
        vxp.statements.approval_signing_input(public, {"revision": 1})


def base64_decode(segment: bytes) -> bytes:
    import base64

    return base64.urlsafe_b64decode(segment + b"=" * (-len(segment) % 4))


def test_user_signature_with_boolean_revision_is_refused() -> None:
    """§6 user-signed approvals: the user's JWS is compared as JSON values, and ``true``
    is not revision ``1`` (rule_violation/user_signature_invalid)."""
    builder = demo_facts.builder("boolean", approve=False)
    # the attack: the user's JWS says revision true where the chain says 1
    forge.log_user_approval(builder, demo_key("user"), signed_revision=True, now=_at(1.5))
    builder.execute(release={"o": 1}, now=_at(2))
    builder.outcome(state="failed", result_summary={"e": 1}, now=_at(4))
    package = builder.package(log_key=demo_key("log"))
    metadata, jwks = demo_facts.material()
    verdict = vxp.verify(package, metadata, jwks, now=_at(60))
    assert verdict.failure is not None
    assert (verdict.failure["code"], verdict.failure["reason"]) == (
        "rule_violation",
        "user_signature_invalid",
    )
    # the same approval with revision 1 in the user's JWS is accepted
    honest = demo_facts.builder("boolean", approve=False)
    honest.approve_signed(user_key=demo_key("user"), now=_at(1.5))
    honest.execute(release={"o": 1}, now=_at(2))
    honest.outcome(state="failed", result_summary={"e": 1}, now=_at(4))
    package = honest.package(log_key=demo_key("log"))
    assert vxp.verify(package, metadata, jwks, now=_at(60)).approval == "user_signed"


def test_a_statement_of_an_unknown_kind_is_refused() -> None:
    """§6 (the kinds and the roles that sign them): a logged statement of a kind the draft
    does not know is statement_malformed/kind (``unsafe_append`` signs any kind)."""
    builder = demo_facts.builder("unknown-kind")
    builder.unsafe_append("no-such-kind", {"x": 1}, now=_at(2.5))
    builder.outcome(state="failed", result_summary={"e": 1}, now=_at(4))
    package = builder.package(log_key=demo_key("log"))
    verdict = vxp.verify(package, *demo_facts.material(), now=_at(60))
    assert verdict.failure is not None
    assert (verdict.failure["code"], verdict.failure["reason"]) == ("statement_malformed", "kind")
