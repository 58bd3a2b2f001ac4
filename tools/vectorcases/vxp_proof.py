"""VXP Proof vectors: issuing an operation, verifying packages, fetching a proof with DPoP."""

from __future__ import annotations

import base64
import copy
import hashlib
import json
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

from cryptography.hazmat.primitives.asymmetric import ed25519

import vxp
from vectorlib import Case, Mutation, derive, flip_char, suite
from vxp import DemoOperation, demo_key, demo_operation
from vxp._chain import format_time
from vxp._chain import parse_time as vxp_parse_time
from vxp._codec import encode_hash as vxp_hash
from vxp._jws import sign_compact
from vxp._keys import resolve_key
from vxp._proof_demo import CAPABILITY, COMPANY, LOG_ORIGIN, T0, extend_log, seeded_rng
from vxp._statements import jwt_digest, sign_user_approval
from vxp.checkpoints import Checkpoint, SignedCheckpoint, cosign_checkpoint, sign_checkpoint

DRAFT_STATES = ("succeeded", "failed", "cancelled", "expired", "unknown", "corrected", "revoked")


def _t(seconds: float) -> str:
    return format_time(T0 + timedelta(seconds=seconds))


def _jwk(seed: str) -> dict[str, Any]:
    return dict(demo_key(seed).as_dict(private=True))


def _kid(seed: str) -> str:
    return vxp.key_thumbprint(demo_key(seed))


# ---------------------------------------------------------------------------- issue_operation

REQUEST = {
    "request_id": "req_01JB7Q2X9M",
    "capability": CAPABILITY,
    "params": {"pedido": "P-1042", "despacho_nuevo": "2026-10-28"},
}
TERMS = {"capability": CAPABILITY, "pedido": "P-1042", "despacho_nuevo": "2026-10-28"}


def _draft_steps() -> list[dict[str, Any]]:
    return [
        {
            "step": "request",
            "now": _t(-2),
            "channel": "vxp",
            "client_id": "https://agent.example/agent.json",
            "request": REQUEST,
        },
        {
            "step": "terms",
            "now": _t(0),
            "capability": CAPABILITY,
            "terms": TERMS,
            "expires_at": _t(900),
            "read_back_terms": ["pedido", "despacho_nuevo"],
            "user_approval_required": True,
            "company_review_required": False,
        },
        {"step": "approve", "now": _t(1)},
        {"step": "execute", "now": _t(2), "release": {"order": "P-1042", "nonce": "r-7f3a"}},
        {
            "step": "read_back",
            "now": _t(3),
            "observed": {"pedido": "P-1042", "despacho_nuevo": "2026-10-28"},
            "personal": {"receptor": "Ana Pérez"},
        },
        {
            "step": "outcome",
            "now": _t(4),
            "state": "succeeded",
            "result_summary": {"order": "P-1042"},
        },
    ]


def _issue_input(steps: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "company": COMPANY,
        "op_id": "req_01JB7Q2X9M",
        "log_origin": LOG_ORIGIN,
        "salt_seed": "vxp-demo/succeeded",
        "keys": {"operator": _jwk("operator"), "company": _jwk("company"), "log": _jwk("log")},
        "steps": steps,
    }


def _replace(steps: list[dict[str, Any]], index: int, **changes: Any) -> list[dict[str, Any]]:
    out = copy.deepcopy(steps)
    out[index].update(changes)
    return out


def _refusal(reason: str) -> dict[str, str]:
    """The builder's refusal of a step: the caller's ``step_refused``, naming the rule; a
    detached signature that does not verify is the device's data (``rule_violation``)."""
    code = "rule_violation" if reason == "user_signature_invalid" else "step_refused"
    return {"code": code, "reason": reason}


@suite(
    "vxp.issue_operation",
    description=(
        "The issuer-side builder walks one operation through its statements and seals the "
        "package, or refuses the first step that breaks a chain rule (nothing is signed)."
    ),
    notes={
        "draft-example": "the draft's example operation, issued with the demo keys",
        "refused": "the builder refuses a step that would break a rule",
    },
)
def issue_operation_cases() -> Iterator[Case]:
    steps = _draft_steps()
    yield Case(
        "draft-operation",
        _issue_input(steps),
        output={"package": demo_operation("succeeded").package},
        comment="request, terms with read_back_terms, agent-asserted approval, execution, "
        "read-back with one disclosure, outcome succeeded; equals the demo's package byte for byte",
        flags=("draft-example",),
    )
    execute = steps[3]
    refusals: list[tuple[str, str, list[dict[str, Any]], str]] = [
        (
            "second-execution",
            "a second execution after the first (P2)",
            [*steps[:4], {**execute, "now": _t(2.5)}],
            "p2_second_execution",
        ),
        (
            "execute-without-approval",
            "execution before the required user approval",
            [steps[0], steps[1], execute],
            "approval_missing",
        ),
        (
            "execute-after-expiry",
            "execution after the terms expired",
            [*steps[:3], {**execute, "now": _t(901)}],
            "terms_expired_at_execution",
        ),
        (
            "approve-after-expiry",
            "approval after the terms expired",
            [*steps[:2], {"step": "approve", "now": _t(900)}],
            "terms_expired_at_approval",
        ),
        (
            "succeeded-without-read-back",
            "outcome succeeded with no read-back of the system (P6/O7)",
            [*steps[:4], steps[5]],
            "p6_no_read_back",
        ),
        (
            "succeeded-not-readable",
            "a capability with no read_back_terms never succeeds (P6/O7)",
            [
                *_replace(steps, 1, read_back_terms=[])[:4],
                {**steps[5]},
            ],
            "p6_not_readable",
        ),
        (
            "contradiction-not-unknown",
            "a read-back that contradicts the terms, then outcome failed (P5)",
            [
                *steps[:4],
                {**steps[4], "observed": {"pedido": "P-1042", "despacho_nuevo": "2026-10-29"}},
                {**steps[5], "state": "failed"},
            ],
            "p5_contradiction",
        ),
        (
            "read-back-after-outcome",
            "a read-back after the final state (P4)",
            [*steps[:4], {**steps[5], "state": "unknown"}, {**steps[4], "now": _t(5)}],
            "p4_after_final",
        ),
        (
            "correction-before-outcome",
            "a correction before any outcome (P4)",
            [
                *steps[:4],
                {"step": "correct", "now": _t(4), "state": "failed", "fact": {"ticket": "T-1"}},
            ],
            "p4_before_outcome",
        ),
        (
            "cancelled-after-execution",
            "an executed operation is never cancelled",
            [*steps[:4], {**steps[5], "state": "cancelled"}],
            "executed_then_cancelled",
        ),
        (
            "expired-too-early",
            "outcome expired before the terms expire",
            [*steps[:2], {**steps[5], "state": "expired"}],
            "expired_too_early",
        ),
        (
            "terms-after-execution",
            "a new terms revision after the execution",
            [*steps[:4], {**steps[1], "now": _t(3), "terms": {**TERMS, "pedido": "P-1043"}}],
            "terms_after_execution",
        ),
        (
            "review-missing",
            "execution when the terms require a company review that never came",
            [*_replace(steps, 1, company_review_required=True)[:4]],
            "review_missing",
        ),
        (
            "counter-after-execution",
            "a counter-proposal after the execution",
            [*steps[:4], {"step": "counter", "now": _t(3), "proposal": {"despacho_nuevo": "x"}}],
            "counter_after_execution",
        ),
        (
            "drop-required-approval",
            "after the user approved revision 1, revision 2 drops the approval it required",
            [
                *steps[:3],
                {
                    **steps[1],
                    "now": _t(1.5),
                    "terms": {**TERMS, "despacho_nuevo": "2030-01-01"},
                    "user_approval_required": False,
                },
            ],
            "requirement_relaxed",
        ),
        (
            "correct-to-expired-too-early",
            "a correction to expired before the terms expire",
            [
                *steps[:2],
                {"step": "outcome", "now": _t(4), "state": "cancelled", "result_summary": {}},
                {"step": "correct", "now": _t(5), "state": "expired", "fact": {"t": 1}},
            ],
            "expired_too_early",
        ),
        (
            "read-back-json-types",
            "the system shows true where the terms say 1: JSON values differ, so the read-back "
            "does not match (compare JCS bytes, not host-language equality) and success is refused",
            [
                steps[0],
                {**steps[1], "terms": {"qty": 1}, "read_back_terms": ["qty"]},
                steps[2],
                steps[3],
                {"step": "read_back", "now": _t(3), "observed": {"qty": True}},
                steps[5],
            ],
            "p5_contradiction",
        ),
        (
            "user-signs-with-operator-key",
            "a user-signed approval made with the operator's own key",
            [*steps[:2], {"step": "approve_signed", "now": _t(1), "user_key": _jwk("operator")}],
            "user_key_is_issuer_key",
        ),
        (
            "user-signs-with-log-key",
            "a user-signed approval made with the log's key: signed, then refused at sealing "
            "(the log key is the issuer's, never the user's)",
            [
                *steps[:2],
                {"step": "approve_signed", "now": _t(1), "user_key": _jwk("log")},
                *steps[3:],
            ],
            "user_key_is_issuer_key",
        ),
    ]
    for name, comment, chain, reason in refusals:
        yield Case(
            f"refuse-{name}",
            _issue_input(chain),
            error=_refusal(reason),
            comment=comment,
            flags=("refused",),
        )
    yield from _detached_approval_cases(steps)


def _user_ed25519() -> dict[str, Any]:
    """The user's Ed25519 key of the detached-approval vectors (private part published)."""
    seed = hashlib.sha256(b"vxp-demo-key/user-ed25519").digest()
    private = ed25519.Ed25519PrivateKey.from_private_bytes(seed)
    raw = private.public_key().public_bytes_raw()
    b64 = base64.urlsafe_b64encode
    return {
        "kty": "OKP",
        "crv": "Ed25519",
        "x": b64(raw).rstrip(b"=").decode(),
        "d": b64(private.private_bytes_raw()).rstrip(b"=").decode(),
    }


def _detached_approval_cases(steps: list[dict[str, Any]]) -> Iterator[Case]:
    """The shop logs an approval the user signed on her own device (the errand, issue 22)."""
    base = _issue_input(steps)
    builder = vxp.OperationBuilder(
        company=base["company"],
        op_id=base["op_id"],
        operator_key=demo_key("operator"),
        company_key=demo_key("company"),
        log=vxp.MerkleLog(base["log_origin"]),
        rng=seeded_rng(base["salt_seed"]),
    )
    request, terms = steps[0], steps[1]
    builder.request(
        channel=request["channel"],
        client_id=request["client_id"],
        request=request["request"],
        now=vxp_parse_time(request["now"], "now"),
    )
    builder.terms(
        capability=terms["capability"],
        terms=terms["terms"],
        expires_at=vxp_parse_time(terms["expires_at"], "expires_at"),
        read_back_terms=terms["read_back_terms"],
        now=vxp_parse_time(terms["now"], "now"),
    )
    user = resolve_key(_user_ed25519())
    payload = builder.approval_payload()
    signature = user.sign(
        vxp.statements.approval_signing_input(user.public_jwk, payload), deterministic=True
    )
    encoded = base64.urlsafe_b64encode(signature).rstrip(b"=").decode()
    approval = {
        "step": "approve_with_signature",
        "now": _t(1),
        "user_key": dict(user.public_jwk),
        "signature": encoded,
    }
    builder.approve_with_signature(
        user_key=user.public_jwk, signature=signature, now=vxp_parse_time(_t(1), "now")
    )
    execute, read_back, outcome = steps[3], steps[4], steps[5]
    builder.execute(release=execute["release"], now=vxp_parse_time(execute["now"], "now"))
    builder.read_back(
        observed=read_back["observed"],
        personal=read_back["personal"],
        now=vxp_parse_time(read_back["now"], "now"),
    )
    builder.outcome(
        state=outcome["state"],
        result_summary=outcome["result_summary"],
        now=vxp_parse_time(outcome["now"], "now"),
    )
    package = builder.package(log_key=demo_key("log"))
    verdict = vxp.verify(package, *_issue_material(), now=T0 + timedelta(seconds=60))
    assert verdict.approval == "user_signed", verdict.failure
    yield Case(
        "approve-with-signature",
        _issue_input([request, terms, approval, *steps[3:]]),
        output={"package": package},
        comment="the user signed the approval on her own device: the shop logs her public "
        "key and her Ed25519 signature over approval_signing_input(her key, approval_payload) "
        "(the JWS signing input); the package verifies as user_signed",
    )
    flipped = base64.urlsafe_b64encode(bytes([signature[0] ^ 1]) + signature[1:])
    forged = {**approval, "signature": flipped.rstrip(b"=").decode()}
    yield Case(
        "refuse-approve-with-signature-forged",
        _issue_input([request, terms, forged, *steps[3:]]),
        error=_refusal("user_signature_invalid"),
        comment="the detached signature has one bit flipped: the builder verifies it before "
        "signing anything and refuses",
        flags=("refused",),
    )


def _issue_material() -> tuple[dict[str, Any], dict[str, Any]]:
    op = demo_operation("succeeded")
    return op.metadata, op.jwks


# ---------------------------------------------------------------------------- verify_proof


def _verdict(op: DemoOperation, *, live: bool = True) -> dict[str, Any]:
    verdict = vxp.verify(
        op.package, op.metadata, op.jwks, live=op.live if live else None, now=op.now
    )
    return verdict.to_json()


def _input(op: DemoOperation, *, live: bool = True) -> dict[str, Any]:
    data = op.inputs()
    if not live:
        data["live"] = None
    return data


DRAFT_VERDICT: dict[str, Any] = {
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
"""The draft's verdict, field for field (written out here, not computed)."""


def _failed(code: str, reason: str | None = None) -> dict[str, Any]:
    failure = {"code": code} if reason is None else {"code": code, "reason": reason}
    return {
        "valid": False,
        "final_state": None,
        "revision": None,
        "approval": None,
        "derived_assurance": [],
        "single_root": None,
        "custody_declared": None,
        "logged": False,
        "company": None,
        "anchor": None,
        "key_source": None,
        "profile": None,
        "statements": 0,
        "log_inclusion": None,
        "tree_size": None,
        "live_tree_size": None,
        "consistency": None,
        "witnesses": 0,
        "operation": None,
        "failure": failure,
    }


def _tampered(fn: Callable[[vxp.OperationBuilder], None]) -> dict[str, Any]:
    return _input(demo_operation("succeeded", tamper=fn))


def _outcome_body(b: vxp.OperationBuilder, **changes: Any) -> dict[str, Any]:
    latest = b.state.latest
    assert latest is not None
    body: dict[str, Any] = {
        "claimed_assurance": ["issuer_key_attested"],
        "result_summary_digest": vxp.statements.digest_of({"x": 1}),
        "revision": latest.revision,
        "state": "succeeded",
        "terms_digest": latest.terms_digest,
        "third_party": [],
    }
    body.update(changes)
    return body


def _exec_body(b: vxp.OperationBuilder, **changes: Any) -> dict[str, Any]:
    latest = b.state.latest
    assert latest is not None
    body: dict[str, Any] = {
        "attempt": 1,
        "capability": CAPABILITY,
        "release": vxp.statements.digest_of({"r": 1}),
        "revision": latest.revision,
        "terms_digest": latest.terms_digest,
    }
    body.update(changes)
    return body


def _standard_rest(b: vxp.OperationBuilder) -> None:
    b.execute(release={"order": "P-1042"}, now=T0 + timedelta(seconds=2))
    b.read_back(
        observed={"pedido": "P-1042", "despacho_nuevo": "2026-10-28"}, now=T0 + timedelta(seconds=3)
    )


def _rule_cases() -> Iterator[Case]:
    s = timedelta(seconds=1)

    def p1(b: vxp.OperationBuilder) -> None:
        b.unsafe_append(
            "execution",
            _exec_body(b, terms_digest=vxp.statements.digest_of("other")),
            now=T0 + 2 * s,
        )
        b.unsafe_append("outcome", _outcome_body(b, state="unknown"), now=T0 + 4 * s)

    def p2(b: vxp.OperationBuilder) -> None:
        b.execute(release={"r": 1}, now=T0 + 2 * s)
        b.unsafe_append("execution", _exec_body(b, attempt=2), now=T0 + 3 * s)
        b.unsafe_append("outcome", _outcome_body(b, state="unknown"), now=T0 + 4 * s)

    def p3(b: vxp.OperationBuilder) -> None:
        b.execute(release={"r": 1}, now=T0 + 2 * s)

    def p4(b: vxp.OperationBuilder) -> None:
        b.execute(release={"r": 1}, now=T0 + 2 * s)
        b.outcome(state="unknown", result_summary={"t": 1}, now=T0 + 3 * s)
        b.unsafe_append(
            "read_back",
            {
                "matches_terms": True,
                "method": "system_read_back",
                "source": "company_system",
                "observed": {"pedido": "P-1042", "despacho_nuevo": "2026-10-28"},
            },
            now=T0 + 4 * s,
        )

    def p5(b: vxp.OperationBuilder) -> None:
        b.execute(release={"r": 1}, now=T0 + 2 * s)
        b.read_back(observed={"pedido": "P-1042", "despacho_nuevo": "2026-10-29"}, now=T0 + 3 * s)
        b.unsafe_append("outcome", _outcome_body(b, state="failed"), now=T0 + 4 * s)

    def p6(b: vxp.OperationBuilder) -> None:
        b.execute(release={"r": 1}, now=T0 + 2 * s)
        b.unsafe_append("outcome", _outcome_body(b), now=T0 + 4 * s)

    def o7(b: vxp.OperationBuilder) -> None:
        b.terms(
            capability=CAPABILITY,
            terms={**TERMS, "v": 2},
            expires_at=T0 + 900 * s,
            read_back_terms=[],
            now=T0 + 1.2 * s,
        )
        b.approve(now=T0 + 1.5 * s)
        b.execute(release={"r": 1}, now=T0 + 2 * s)
        b.unsafe_append("outcome", _outcome_body(b), now=T0 + 4 * s)

    def p7(b: vxp.OperationBuilder) -> None:
        b.execute(release={"r": 1}, now=T0 + 2 * s)
        claimed = ["issuer_key_attested", "operator_observed", "operator_reported_read_back"]
        b.unsafe_append(
            "outcome", _outcome_body(b, state="failed", claimed_assurance=claimed), now=T0 + 4 * s
        )

    def seq_gap(b: vxp.OperationBuilder) -> None:
        b.unsafe_append("execution", _exec_body(b), now=T0 + 2 * s, seq=4)

    def signer_field(b: vxp.OperationBuilder) -> None:
        b.unsafe_append("execution", _exec_body(b), now=T0 + 2 * s, signer="company")

    def role_key(b: vxp.OperationBuilder) -> None:
        _standard_rest(b)
        b.unsafe_append("outcome", _outcome_body(b), now=T0 + 4 * s, key=demo_key("operator"))

    def revision_jump(b: vxp.OperationBuilder) -> None:
        latest = b.state.latest
        assert latest is not None
        body = {
            "capability": CAPABILITY,
            "commitment": {"mode": "firm", "requires": []},
            "company_review_required": False,
            "expires_at": _t(900),
            "read_back_terms": ["pedido"],
            "revision": 3,
            "terms_digest": vxp.statements.digest_of({"v": 3}),
            "user_approval_required": True,
        }
        b.unsafe_append("terms", body, now=T0 + 2 * s)

    def stale_approval(b: vxp.OperationBuilder) -> None:
        first = b.state.latest
        assert first is not None
        b.terms(
            capability=CAPABILITY,
            terms={**TERMS, "v": 2},
            expires_at=T0 + 900 * s,
            read_back_terms=["pedido"],
            now=T0 + 1.2 * s,
        )
        b.unsafe_append(
            "user_approval",
            {"method": "agent_asserted", "revision": 1, "terms_digest": first.terms_digest},
            now=T0 + 1.5 * s,
        )

    def expired_exec(b: vxp.OperationBuilder) -> None:
        b.unsafe_append("execution", _exec_body(b), now=T0 + 901 * s)

    def bad_user_sig(b: vxp.OperationBuilder) -> None:
        b.terms(
            capability=CAPABILITY,
            terms={**TERMS, "v": 2},
            expires_at=T0 + 900 * s,
            read_back_terms=["pedido"],
            now=T0 + 1.1 * s,
        )
        latest = b.state.latest
        assert latest is not None
        jwk = dict(demo_key("user").as_dict(private=False))
        body = {
            "method": "user_signed",
            "revision": 2,
            "terms_digest": latest.terms_digest,
            "user_key": jwk,
            "user_signature": "eyJhbGciOiJFUzI1NiJ9.e30.AAAA",
        }
        b.unsafe_append("user_approval", body, now=T0 + 1.2 * s)

    def two_outcomes(b: vxp.OperationBuilder) -> None:
        b.execute(release={"r": 1}, now=T0 + 2 * s)
        b.outcome(state="unknown", result_summary={"t": 1}, now=T0 + 3 * s)
        b.unsafe_append("outcome", _outcome_body(b, state="failed"), now=T0 + 4 * s)

    def time_backwards(b: vxp.OperationBuilder) -> None:
        b.unsafe_append("execution", _exec_body(b), now=T0 - 5 * s)

    def relax(b: vxp.OperationBuilder) -> None:
        relaxed = vxp.statements.digest_of({**TERMS, "despacho_nuevo": "2030-01-01"})
        body = {
            "capability": CAPABILITY,
            "commitment": {"mode": "firm", "requires": []},
            "company_review_required": False,
            "expires_at": _t(900),
            "read_back_terms": ["pedido"],
            "revision": 2,
            "terms_digest": relaxed,
            "user_approval_required": False,
        }
        b.unsafe_append("terms", body, now=T0 + 1.2 * s)
        b.unsafe_append(
            "execution", _exec_body(b, revision=2, terms_digest=relaxed), now=T0 + 2 * s
        )
        b.unsafe_append(
            "outcome",
            _outcome_body(b, state="failed", revision=2, terms_digest=relaxed),
            now=T0 + 4 * s,
        )

    def expired_correction(b: vxp.OperationBuilder) -> None:
        b.outcome(state="cancelled", result_summary={"t": 1}, now=T0 + 3 * s)
        latest = b.state.latest
        assert latest is not None
        body = {
            "corrects": 3,
            "fact_digest": vxp.statements.digest_of({"f": 1}),
            "revision": 1,
            "state": "expired",
            "terms_digest": latest.terms_digest,
        }
        b.unsafe_append("correction", body, now=T0 + 4 * s)

    def operator_as_user(b: vxp.OperationBuilder) -> None:
        b.terms(
            capability=CAPABILITY,
            terms={**TERMS, "v": 2},
            expires_at=T0 + 900 * s,
            read_back_terms=["pedido"],
            now=T0 + 1.1 * s,
        )
        latest, request = b.state.latest, b.state.request
        assert latest is not None
        assert request is not None
        terms_statement = jwt_digest(b.statements[latest.seq].split("~", 1)[0])
        jwk, token = sign_user_approval(
            demo_key("operator"),
            request["request_digest"],
            2,
            latest.terms_digest,
            terms_statement,
        )
        body = {
            "method": "user_signed",
            "revision": 2,
            "terms_digest": latest.terms_digest,
            "user_key": jwk,
            "user_signature": token,
        }
        b.unsafe_append("user_approval", body, now=T0 + 1.2 * s)

    def hides_too_many(b: vxp.OperationBuilder) -> None:
        b.execute(release={"r": 1}, now=T0 + 2 * s)
        body = {
            "matches_terms": True,
            "method": "system_read_back",
            "observed": {},
            "source": "company_system",
        }
        b.unsafe_append("read_back", body, now=T0 + 3 * s, personal={"receptor": "Ana"})

    def release_not_canonical(b: vxp.OperationBuilder) -> None:
        # the same 32 bytes, its last character's two unused bits set: not the one spelling
        release = vxp.statements.digest_of({"r": 1})
        last = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
        respelled = release[:-1] + last[last.index(release[-1]) | 1]
        b.unsafe_append("execution", _exec_body(b, release=respelled), now=T0 + 2 * s)

    def attempt_two(b: vxp.OperationBuilder) -> None:
        b.unsafe_append("execution", _exec_body(b, attempt=2), now=T0 + 2 * s)
        b.unsafe_append("outcome", _outcome_body(b, state="unknown"), now=T0 + 4 * s)

    def _after_unknown_outcome(b: vxp.OperationBuilder) -> None:
        b.execute(release={"r": 1}, now=T0 + 2 * s)  # seq 3
        b.outcome(state="unknown", result_summary={"t": 1}, now=T0 + 3 * s)  # seq 4

    def correction_target(b: vxp.OperationBuilder) -> None:
        _after_unknown_outcome(b)
        latest = b.state.latest
        assert latest is not None
        body = {
            "corrects": 3,  # the execution, not the outcome (seq 4)
            "fact_digest": vxp.statements.digest_of({"f": 1}),
            "revision": 1,
            "state": "failed",
            "terms_digest": latest.terms_digest,
        }
        b.unsafe_append("correction", body, now=T0 + 5 * s)

    def revocation_target(b: vxp.OperationBuilder) -> None:
        _after_unknown_outcome(b)
        body = {"reason_digest": vxp.statements.digest_of({"r": 1}), "revokes": 3}
        b.unsafe_append("revocation", body, now=T0 + 5 * s)

    def failed_unexecuted(b: vxp.OperationBuilder) -> None:
        b.unsafe_append("outcome", _outcome_body(b, state="failed"), now=T0 + 4 * s)

    def failed_after_match(b: vxp.OperationBuilder) -> None:
        _standard_rest(b)  # an execution and a read-back that matches the terms
        b.unsafe_append("outcome", _outcome_body(b, state="failed"), now=T0 + 4 * s)

    def executed_expired(b: vxp.OperationBuilder) -> None:
        b.execute(release={"r": 1}, now=T0 + 2 * s)
        b.unsafe_append("outcome", _outcome_body(b, state="expired"), now=T0 + 4 * s)

    table: list[tuple[str, str, Callable[[vxp.OperationBuilder], None], str, str]] = [
        (
            "p1-terms-digest",
            "execution cites another terms_digest (P1)",
            p1,
            "rule_violation",
            "p1_terms_digest",
        ),
        ("p2-second-execution", "two executions (P2)", p2, "rule_violation", "p2_second_execution"),
        (
            "p3-no-outcome",
            "an executed operation with no signed outcome (P3)",
            p3,
            "rule_violation",
            "outcome_missing",
        ),
        (
            "p4-fact-after-final",
            "a read-back after the outcome (P4)",
            p4,
            "rule_violation",
            "p4_after_final",
        ),
        (
            "p5-contradiction",
            "contradicting read-back then outcome failed (P5)",
            p5,
            "rule_violation",
            "p5_contradiction",
        ),
        (
            "p6-no-read-back",
            "succeeded without a read-back (P6)",
            p6,
            "rule_violation",
            "p6_no_read_back",
        ),
        (
            "o7-not-readable",
            "succeeded on a capability that cannot be read back (O7)",
            o7,
            "rule_violation",
            "p6_not_readable",
        ),
        (
            "p7-overclaimed",
            "outcome claims a read-back assurance it does not have (P7)",
            p7,
            "assurance_overclaimed",
            None,
        ),
        ("seq-gap", "seq jumps from 2 to 4", seq_gap, "chain_broken", "seq_not_contiguous"),
        (
            "signer-field",
            "an execution naming signer company",
            signer_field,
            "chain_broken",
            "signer_role",
        ),
        (
            "role-key",
            "the outcome signed with the operator's key",
            role_key,
            "key_untrusted",
            "key_role",
        ),
        (
            "revision-jump",
            "terms revision 3 after revision 1",
            revision_jump,
            "rule_violation",
            "revision_not_increasing",
        ),
        (
            "stale-approval",
            "approval of revision 1 after revision 2 was issued",
            stale_approval,
            "rule_violation",
            "not_latest_revision",
        ),
        (
            "expired-execution",
            "execution logged after the terms expired",
            expired_exec,
            "rule_violation",
            "terms_expired_at_execution",
        ),
        (
            "bad-user-signature",
            "a user_signed approval whose signature does not verify",
            bad_user_sig,
            "rule_violation",
            "user_signature_invalid",
        ),
        ("two-outcomes", "a second outcome", two_outcomes, "rule_violation", "p4_after_final"),
        (
            "time-backwards",
            "a statement logged before its predecessor",
            time_backwards,
            "rule_violation",
            "time_backwards",
        ),
        (
            "requirement-relaxed",
            "after the user approved revision 1, revision 2 drops the required approval and is "
            "executed unapproved",
            relax,
            "rule_violation",
            "requirement_relaxed",
        ),
        (
            "correction-expired-too-early",
            "a correction to expired logged before the terms expire",
            expired_correction,
            "rule_violation",
            "expired_too_early",
        ),
        (
            "user-key-is-issuer-key",
            "a user_signed approval made with the operator's own key (a valid signature)",
            operator_as_user,
            "rule_violation",
            "user_key_is_issuer_key",
        ),
        (
            "read-back-hides-too-many",
            "a matching read-back shows neither read-back term and has one disclosure digest: "
            "one digest hides one term at most",
            hides_too_many,
            "rule_violation",
            "read_back_incomplete",
        ),
        (
            "p2-attempt",
            "the single execution says attempt 2 (P2)",
            attempt_two,
            "rule_violation",
            "p2_attempt",
        ),
        (
            "correction-target",
            "a correction that names the execution's seq, not the outcome's",
            correction_target,
            "rule_violation",
            "correction_target",
        ),
        (
            "revocation-target",
            "a revocation that names the execution's seq, not the outcome's",
            revocation_target,
            "rule_violation",
            "revocation_target",
        ),
        (
            "failed-without-execution",
            "an outcome failed with no execution",
            failed_unexecuted,
            "rule_violation",
            "failed_without_execution",
        ),
        (
            "failed-contradicts-read-back",
            "an outcome failed after a read-back that showed the approved effect",
            failed_after_match,
            "rule_violation",
            "failed_contradicts_read_back",
        ),
        (
            "executed-then-expired",
            "an executed operation whose outcome says expired",
            executed_expired,
            "rule_violation",
            "executed_then_expired",
        ),
        (
            "digest-not-canonical",
            "the execution's release digest has non-zero unused bits in its last character: "
            "a body digest is accepted in its one canonical text only",
            release_not_canonical,
            "statement_malformed",
            "body",
        ),
    ]
    for name, comment, fn, code, reason in table:
        yield Case(
            f"rule-{name}",
            _tampered(fn),
            output=_failed(code, reason),
            comment=comment,
            flags=("rule-violation",),
        )


def _statement_mutations(good: Case) -> list[Mutation]:
    op = demo_operation("succeeded")
    swapped = demo_operation(
        "succeeded",
        tamper=lambda b: (
            _standard_rest(b),
            b.unsafe_append(
                "outcome", _outcome_body(b), now=T0 + timedelta(seconds=4), key=demo_key("operator")
            ),
        )[-1],
    )

    def flip_sig(d: dict[str, Any]) -> None:
        jws = d["package"]["statements"][3].split("~")[0]
        d["package"]["statements"][3] = d["package"]["statements"][3].replace(
            jws, flip_char(jws, len(jws) - 10)
        )

    def flip_payload(d: dict[str, Any]) -> None:
        st = d["package"]["statements"][1]
        d["package"]["statements"][1] = flip_char(st, st.index(".") + 20)

    def drop(d: dict[str, Any]) -> None:
        del d["package"]["statements"][2]
        del d["package"]["log"]["entries"][2]

    def reorder(d: dict[str, Any]) -> None:
        sts, ents = d["package"]["statements"], d["package"]["log"]["entries"]
        sts[2], sts[3] = sts[3], sts[2]
        ents[2], ents[3] = ents[3], ents[2]

    def swap_signer(d: dict[str, Any]) -> None:
        d["package"] = copy.deepcopy(swapped.package)

    def withhold(d: dict[str, Any]) -> None:
        st = d["package"]["statements"][4]
        d["package"]["statements"][4] = st.split("~")[0] + "~"

    def off_by_one(d: dict[str, Any]) -> None:
        d["package"]["log"]["entries"][2]["index"] += 1

    def drop_proof_hash(d: dict[str, Any]) -> None:
        d["package"]["log"]["entries"][0]["proof"].pop()

    def truncate(d: dict[str, Any]) -> None:
        d["package"]["statements"][5] = d["package"]["statements"][5][:-30]

    def foreign_disclosure(d: dict[str, Any]) -> None:
        other = demo_operation("unknown").package["statements"][4].split("~")[1]
        d["package"]["statements"][2] += other + "~"

    def checkpoint_root(d: dict[str, Any]) -> None:
        cp = d["package"]["log"]["checkpoint"]["checkpoint"]
        cp["root"] = cp["root"][:-2] + ("A" if cp["root"][-2] != "A" else "B") + cp["root"][-1]

    def op_capability(d: dict[str, Any]) -> None:
        d["package"]["op"]["capability"] = "pedido.cancelar"

    def company(d: dict[str, Any]) -> None:
        d["package"]["company"] = "https://evil.example/e/ferreteria-demo"

    def logged_at(d: dict[str, Any]) -> None:
        d["package"]["log"]["entries"][3]["logged_at"] = _t(2.001)

    def live_fork(d: dict[str, Any]) -> None:
        other = demo_operation("unknown")
        d["live"]["checkpoint"] = other.live["checkpoint"]

    withheld = _verdict(op)
    assert withheld == DRAFT_VERDICT
    return [
        Mutation(
            "flipped-signature-byte",
            "one base64url character of statement 3's signature changed",
            flip_sig,
            output=_failed("signature_invalid", "signature_invalid"),
        ),
        Mutation(
            "flipped-payload-byte",
            "one base64url character of statement 1's payload changed",
            flip_payload,
            output=_failed("signature_invalid", "signature_invalid"),
        ),
        Mutation(
            "dropped-statement",
            "statement 2 (the approval) and its log entry removed",
            drop,
            output=_failed("chain_broken", "prev_mismatch"),
        ),
        Mutation(
            "reordered-statements",
            "statements 2 and 3 swapped with their log entries",
            reorder,
            output=_failed("chain_broken", "prev_mismatch"),
        ),
        Mutation(
            "swapped-signer",
            "the outcome is signed by the operator's key instead of the company's",
            swap_signer,
            output=_failed("key_untrusted", "key_role"),
        ),
        Mutation(
            "withheld-disclosure",
            "the holder withholds the read-back's personal disclosure: "
            "the chain and the verdict are unchanged",
            withhold,
            output=DRAFT_VERDICT,
        ),
        Mutation(
            "log-index-off-by-one",
            "statement 2's leaf index is one too high",
            off_by_one,
            output=_failed("log_invalid", "inclusion"),
        ),
        Mutation(
            "log-proof-short",
            "statement 0's inclusion proof lacks its last hash",
            drop_proof_hash,
            output=_failed("log_invalid", "inclusion"),
        ),
        Mutation(
            "truncated-statement",
            "the last 30 characters of the outcome cut off",
            truncate,
            output=_failed("statement_malformed", "missing_trailing_tilde"),
        ),
        Mutation(
            "unreferenced-disclosure",
            "a disclosure from another chain appended to statement 2",
            foreign_disclosure,
            output=_failed("statement_malformed", "disclosure_unreferenced"),
        ),
        Mutation(
            "checkpoint-root-changed",
            "the packaged checkpoint's root changed",
            checkpoint_root,
            output=_failed("log_invalid", "checkpoint_signature_invalid"),
        ),
        Mutation(
            "op-capability-changed",
            "the package op names another capability",
            op_capability,
            output=_failed("operation_mismatch"),
        ),
        Mutation(
            "company-changed",
            "the package names another company",
            company,
            output=_failed("company_mismatch"),
        ),
        Mutation(
            "logged-at-changed",
            "statement 3's logged_at moved by a millisecond",
            logged_at,
            output=_failed("log_invalid", "inclusion"),
        ),
        Mutation(
            "live-fork",
            "the live checkpoint is another tree of the same size",
            live_fork,
            output=_failed("live_inconsistent", "root_mismatch"),
        ),
    ]


def _rotation_cases() -> Iterator[Case]:
    op = demo_operation("rotated")
    base = _input(op)
    old_kid = _kid("company")
    unpublished = vxp.trust.unpublish_key(op.metadata, old_kid)
    live_jwks = {"keys": [k for k in op.jwks["keys"] if k["kid"] != old_kid]}
    both = _verdict(op)
    saved_verdict = {**both, "key_source": "issuer_metadata_saved"}
    yield Case(
        "rotation-retired-key-still-published",
        base,
        output=both,
        comment="the company key rotated mid-operation; the retired key stays published with "
        "its validity period, so live material verifies every statement",
        flags=("key-rotation",),
    )
    yield Case(
        "rotation-saved-metadata-after-unpublish",
        {**base, "live": {**base["live"], "metadata": unpublished, "jwks": live_jwks}},
        output=saved_verdict,
        comment="the retired key is no longer published live; metadata saved while it was "
        "published still verifies the terms it signed (key_source: issuer_metadata_saved)",
        flags=("key-rotation", "saved-vs-live"),
    )
    yield Case(
        "rotation-unpublished-only",
        {**base, "metadata": unpublished, "jwks": live_jwks, "live": None},
        output=_failed("key_untrusted", "issuer_key_unknown"),
        comment="with only current material the retired key is unknown: the terms cannot verify",
        flags=("key-rotation",),
    )
    early = copy.deepcopy(op.metadata)
    for entry in early["vxp_proof"]["keys"]:
        if entry["kid"] == old_kid:
            entry["not_after"] = _t(-1)
        elif entry["role"] == "company":
            entry["not_before"] = _t(-1)
    yield Case(
        "rotation-key-used-after-retirement",
        {**base, "metadata": early, "live": None},
        output=_failed("key_untrusted", "key_not_valid_at_time"),
        comment="the metadata says the old company key retired before it signed the terms",
        flags=("key-rotation",),
    )
    yield Case(
        "live-revokes-validity",
        {**base, "live": {**base["live"], "metadata": early}},
        output=_failed("key_untrusted", "key_not_valid_at_time"),
        comment="saved metadata accepts the key; live metadata says it was not then: live wins",
        flags=("key-rotation", "saved-vs-live"),
    )


def _trust_and_log_cases() -> Iterator[Case]:
    op = demo_operation("succeeded")
    base = _input(op)
    offline = _input(op, live=False)
    log_kid = _kid("log")
    self_witness = copy.deepcopy(offline)
    self_witness["metadata"]["vxp_proof"]["log"]["witnesses"] = [log_kid]
    signed = SignedCheckpoint.from_json(self_witness["package"]["log"]["checkpoint"])
    cosigned = cosign_checkpoint(signed, demo_key("log"), time=int(op.now.timestamp()))
    self_witness["package"]["log"]["checkpoint"] = cosigned.to_json()
    yield Case(
        "log-key-as-witness",
        self_witness,
        output=_failed("metadata_invalid", "witness_not_independent"),
        comment="the metadata lists the log's own key as a witness (and it cosigned): the "
        "issuer's keys never count towards logged",
        flags=("witnessed",),
    )
    wrong_alg = copy.deepcopy(offline)
    for key in wrong_alg["jwks"]["keys"]:
        key["alg"] = "ES384"
    yield Case(
        "jwks-alg-mismatch",
        wrong_alg,
        output=_failed("metadata_invalid", "jwks_use"),
        comment="the JWKS publishes the P-256 keys with alg ES384: refused, not ignored",
    )
    respelled = copy.deepcopy(offline)
    for key in respelled["jwks"]["keys"]:
        if key["kid"] == _kid("operator"):
            raw = base64.urlsafe_b64decode(key["x"] + "=")
            key["x"] = base64.urlsafe_b64encode(b"\0" + raw).rstrip(b"=").decode()
    yield Case(
        "jwks-key-not-canonical",
        respelled,
        output=_failed("metadata_invalid", "jwks"),
        comment="the JWKS spells the operator key's x with a leading zero byte: the same key "
        "under another thumbprint, never accepted (one key, one spelling, one kid)",
    )
    company_kid = _kid("company")
    cut = copy.deepcopy(base)
    for record in cut["live"]["metadata"]["vxp_proof"]["keys"]:
        if record["kid"] == company_kid:
            record["not_after"] = _t(-1)
    cut["live"]["jwks"] = {
        "keys": [k for k in cut["live"]["jwks"]["keys"] if k["kid"] != company_kid]
    }
    yield Case(
        "live-cuts-key-short-and-drops-it",
        cut,
        output=_failed("key_untrusted", "key_not_valid_at_time"),
        comment="live metadata still lists the company key but ends it before the terms; its "
        "JWKS no longer carries the key: saved material never re-validates it (live decides)",
        flags=("saved-vs-live",),
    )
    retired = copy.deepcopy(base)
    for record in retired["metadata"]["vxp_proof"]["keys"]:
        if record["kid"] == company_kid:
            record["not_after"] = _t(-1)
    yield Case(
        "live-revalidates-retired-key",
        retired,
        output=_failed("key_untrusted", "key_not_valid_at_time"),
        comment="saved metadata recorded the company key as retired before it signed the "
        "terms; live metadata lists it as active: where both list a key, both periods must "
        "cover the statement (live never re-validates a retired key)",
        flags=("saved-vs-live",),
    )
    swapped = copy.deepcopy(offline)
    package = swapped["package"]
    log = vxp.MerkleLog(LOG_ORIGIN)
    index: dict[int, int] = {}
    for i in (0, 1, 3, 2, 4, 5):
        jws = package["statements"][i].split("~", 1)[0]
        logged_at = package["log"]["entries"][i]["logged_at"]
        index[i] = log.append(vxp.statements.leaf_data(jwt_digest(jws), logged_at))
    package["log"]["checkpoint"] = sign_checkpoint(
        Checkpoint(LOG_ORIGIN, log.size, log.root()), demo_key("log")
    ).to_json()
    for i, entry in enumerate(package["log"]["entries"]):
        entry["index"] = index[i]
        entry["proof"] = [vxp_hash(h) for h in log.inclusion_proof(index[i], log.size)]
    yield Case(
        "log-leaf-order",
        swapped,
        output=_failed("log_invalid", "leaf_order"),
        comment="statements 2 and 3 were logged in the opposite order (every inclusion proof "
        "verifies): leaf indexes must increase with seq",
    )
    yield from _saved_and_live_log_cases()
    yield from _respelled_key_cases()
    at_cap = {**offline, "max_statements": len(offline["package"]["statements"])}
    yield Case(
        "statement-cap-at-size",
        at_cap,
        output=_verdict(op, live=False),
        comment="the caller caps packages at 6 statements; this one holds 6: verified",
        flags=("offline",),
    )
    yield Case(
        "statement-cap-below-size",
        {**at_cap, "max_statements": at_cap["max_statements"] - 1},
        output=_failed("package_malformed", "too_many_statements"),
        comment="the caller caps packages at 5 statements; this one holds 6: refused at "
        "stage 1, before any signature is checked (the default cap is 4,096)",
    )


def _saved_and_live_log_cases() -> Iterator[Case]:
    op = demo_operation("succeeded")
    base = _input(op)
    operator_kid = _kid("operator")
    live_witness = copy.deepcopy(base)
    live_witness["live"]["metadata"] = copy.deepcopy(op.metadata)  # not the saved object
    vp = live_witness["live"]["metadata"]["vxp_proof"]
    vp["keys"] = [k for k in vp["keys"] if k["kid"] != operator_kid]
    vp["log"]["witnesses"] = [operator_kid]
    last = max(vxp_parse_time(e["logged_at"], "t") for e in base["package"]["log"]["entries"])
    signed = SignedCheckpoint.from_json(live_witness["package"]["log"]["checkpoint"])
    cosigned = cosign_checkpoint(signed, demo_key("operator"), time=int(last.timestamp()) + 1)
    live_witness["package"]["log"]["checkpoint"] = cosigned.to_json()
    yield Case(
        "live-witness-is-saved-signing-key",
        live_witness,
        output=_failed("live_invalid", "witness_not_independent"),
        comment="live metadata unpublishes the operator key and names it as the only witness "
        "(it cosigned); saved metadata still lists it as the operator key that signed the "
        "statements: a key that signs is never a witness, across saved and live material",
        flags=("saved-vs-live", "witnessed"),
    )
    witnessed = demo_operation("witnessed")
    wbase = _input(witnessed)
    pinned = copy.deepcopy(wbase)
    pinned["metadata"] = copy.deepcopy(witnessed.metadata)  # live keeps its own quorum 1
    pinned["metadata"]["vxp_proof"]["log"]["quorum"] = 2
    pinned_verdict = vxp.verify(
        pinned["package"],
        pinned["metadata"],
        pinned["jwks"],
        live=pinned["live"],
        now=witnessed.now,
    ).to_json()
    assert pinned_verdict["valid"] is True
    assert pinned_verdict["logged"] is False
    assert "witnessed_log" not in pinned_verdict["derived_assurance"]
    yield Case(
        "live-quorum-lower-than-saved",
        pinned,
        output=pinned_verdict,
        comment="saved metadata asks for 2 witnesses, live metadata for 1; one witness "
        "cosigned: the larger quorum holds, so the package is valid but not logged",
        flags=("saved-vs-live", "witnessed"),
    )
    added = copy.deepcopy(wbase)
    added["metadata"] = copy.deepcopy(witnessed.metadata)
    added["metadata"]["vxp_proof"]["log"]["witnesses"] = []
    added_verdict = vxp.verify(
        added["package"], added["metadata"], added["jwks"], live=added["live"], now=witnessed.now
    ).to_json()
    assert added_verdict["valid"] is True
    assert (added_verdict["logged"], added_verdict["witnesses"]) == (False, 0)
    yield Case(
        "live-adds-witness",
        added,
        output=added_verdict,
        comment="only live metadata recognises the witness that cosigned: a witness counts "
        "when saved and live metadata both recognise it, so the package is not logged",
        flags=("saved-vs-live", "witnessed"),
    )

    def witness_as_user(b: vxp.OperationBuilder) -> None:
        b.terms(
            capability=CAPABILITY,
            terms={**TERMS, "v": 2},
            expires_at=T0 + timedelta(seconds=900),
            read_back_terms=["pedido"],
            now=T0 + timedelta(seconds=1.1),
        )
        latest, request = b.state.latest, b.state.request
        assert latest is not None
        assert request is not None
        terms_statement = jwt_digest(b.statements[latest.seq].split("~", 1)[0])
        jwk, token = sign_user_approval(
            demo_key("witness"), request["request_digest"], 2, latest.terms_digest, terms_statement
        )
        body = {
            "method": "user_signed",
            "revision": 2,
            "terms_digest": latest.terms_digest,
            "user_key": jwk,
            "user_signature": token,
        }
        b.unsafe_append("user_approval", body, now=T0 + timedelta(seconds=1.2))

    hidden = _tampered(witness_as_user)
    witness_kid = _kid("witness")
    for where in (hidden, hidden["live"]):
        where["jwks"] = {"keys": [k for k in where["jwks"]["keys"] if k["kid"] != witness_kid]}
    yield Case(
        "user-key-is-witness-not-in-jwks",
        hidden,
        output=_failed("rule_violation", "user_key_is_issuer_key"),
        comment="a user-signed approval by the metadata's witness, whose key no JWKS carries: "
        "every kid the metadata names (signing, log, witness) is the issuer's, never the user",
    )


def _respelled_key_cases() -> Iterator[Case]:
    op = demo_operation("succeeded")
    offline = _input(op, live=False)
    p = 2**256 - 2**224 + 2**192 + 2**96 - 1
    b = 0x5AC635D8AA3A93E7B3EBBD55769886BC651D06B0CC53B0F63BCE3C3E27D2604B
    x = 5  # the smallest x on P-256
    y = pow((x**3 - 3 * x + b) % p, (p + 1) // 4, p)
    assert y * y % p == (x**3 - 3 * x + b) % p

    def b64(n: int) -> str:
        return base64.urlsafe_b64encode(n.to_bytes(32, "big")).rstrip(b"=").decode()

    jwk = {"crv": "P-256", "kty": "EC", "x": b64(x + p), "y": b64(y)}
    members = json.dumps(jwk, sort_keys=True, separators=(",", ":")).encode()  # RFC 7638
    kid = base64.urlsafe_b64encode(hashlib.sha256(members).digest()).rstrip(b"=").decode()
    respelled = copy.deepcopy(offline)
    respelled["jwks"]["keys"].append({**jwk, "kid": kid})
    yield Case(
        "jwks-p256-coordinate-above-p",
        respelled,
        output=_failed("metadata_invalid", "jwks"),
        comment="the JWKS carries a P-256 key whose x is 5 + p (the point x = 5), with its "
        "own thumbprint as kid: a coordinate is below the field prime, or one key has two kids",
    )


@suite(
    "vxp.verify_proof",
    description=(
        "The verifier: a package with the issuer's metadata and JWKS (saved), optional live "
        "material {metadata, jwks, checkpoint, consistency} and the time; the output is the "
        "verdict (a failed one has every other field empty and failure {code, reason?})."
    ),
    notes={
        "draft-example": "the draft's example chain; the verdict is the draft's, field for field",
        "final-state": "a good package for one final state",
        "offline": "no live material: key_source saved, consistency not_checked",
        "rule-violation": "a package signed with valid keys that breaks one chain rule",
        "derived": "derived mechanically from a good case by one mutation class",
        "key-rotation": "a key rotated during or after the operation",
        "saved-vs-live": "saved metadata and live metadata disagree",
        "witnessed": "the checkpoint carries a trusted witness cosignature",
        "flipped-signature-byte": "mutation class: a changed signature byte",
        "flipped-payload-byte": "mutation class: a changed payload byte",
        "dropped-statement": "mutation class: a statement removed",
        "reordered-statements": "mutation class: two statements swapped",
        "swapped-signer": "mutation class: a statement signed by the other role's key",
        "withheld-disclosure": "mutation class: a disclosure withheld (still valid)",
        "log-index-off-by-one": "mutation class: a log leaf index off by one",
        "log-proof-short": "mutation class: an inclusion proof missing a hash",
        "truncated-statement": "mutation class: a statement cut short",
        "unreferenced-disclosure": "mutation class: a disclosure no digest references",
        "checkpoint-root-changed": "mutation class: the packaged checkpoint altered",
        "op-capability-changed": "mutation class: the package op disagrees with the chain",
        "company-changed": "mutation class: the package names another company",
        "logged-at-changed": "mutation class: a logged time altered",
        "live-fork": "mutation class: live checkpoint not consistent with the packaged one",
    },
)
def verify_proof_cases() -> Iterator[Case]:
    draft = demo_operation("succeeded")
    good = Case(
        "draft-example-live",
        _input(draft),
        output=DRAFT_VERDICT,
        comment="the draft's chain reproduced with our keys, verified live: the draft's verdict",
        flags=("draft-example",),
    )
    yield good
    yield Case(
        "draft-example-offline",
        _input(draft, live=False),
        output={
            **DRAFT_VERDICT,
            "key_source": "issuer_metadata_saved",
            "live_tree_size": None,
            "consistency": "not_checked",
        },
        comment="the same package verified offline against saved metadata",
        flags=("draft-example", "offline"),
    )
    grown = _input(draft)
    grown["live"] = extend_log(demo_operation("succeeded"), 5)
    yield Case(
        "draft-example-log-grew",
        grown,
        output={**DRAFT_VERDICT, "live_tree_size": 11},
        comment="the log grew by 5 entries since packaging; the consistency proof links the trees",
        flags=("draft-example",),
    )
    yield Case(
        "draft-example-own-request",
        {**_input(draft), "request": REQUEST, "request_id": "req_01JB7Q2X9M"},
        output=DRAFT_VERDICT,
        comment="the agent passes its own request: its digest is the signed request_digest",
        flags=("draft-example",),
    )
    yield Case(
        "someone-elses-request",
        {**_input(draft), "request": {**REQUEST, "request_id": "req_other"}},
        output=_failed("operation_mismatch"),
        comment="a package for another request (signed request_digest differs) is refused",
    )
    for state in DRAFT_STATES[1:]:
        op = demo_operation(state)
        yield Case(
            f"final-state-{state}",
            _input(op),
            output=_verdict(op),
            comment=f"a complete operation whose final state is {state}",
            flags=("final-state",),
        )
    witnessed = demo_operation("witnessed")
    yield Case(
        "witnessed-log",
        _input(witnessed),
        output={
            **DRAFT_VERDICT,
            "logged": True,
            "witnesses": 1,
            "derived_assurance": [*DRAFT_VERDICT["derived_assurance"], "witnessed_log"],
        },
        comment="a trusted witness cosigned the checkpoint: logged true",
        flags=("witnessed",),
    )
    for cid, seconds, comment in (
        (
            "witness-before-statement",
            3,
            "the witness cosigned at second 3, before the outcome was logged (4.356 s): "
            "a cosignature vouches for nothing logged after it",
        ),
        (
            "witness-after-now",
            24 * 3600,
            "the witness cosigned a day after the verification time (leeway 0)",
        ),
    ):
        data = copy.deepcopy(_input(witnessed))
        at = int((T0 + timedelta(seconds=seconds)).timestamp())
        for holder in (data["package"]["log"], data["live"]):
            bare = SignedCheckpoint.from_json(holder["checkpoint"])
            resigned = sign_checkpoint(bare.checkpoint, demo_key("log"))
            holder["checkpoint"] = cosign_checkpoint(
                resigned, demo_key("witness"), time=at
            ).to_json()
        yield Case(
            cid,
            data,
            output=_failed("log_invalid", "witness_time"),
            comment=comment,
            flags=("witnessed",),
        )
    reviewed = demo_operation("reviewed")
    yield Case(
        "user-signed-and-reviewed",
        _input(reviewed),
        output=_verdict(reviewed),
        comment="company review required and given; the user signed the approval",
        flags=("final-state",),
    )
    held = demo_operation("succeeded", custody="company_held")
    yield Case(
        "company-held-custody",
        _input(held),
        output={**DRAFT_VERDICT, "single_root": None, "custody_declared": "company_held"},
        comment="the company holds its own key: no single root",
        flags=("final-state",),
    )
    yield from _rule_cases()
    yield from _rotation_cases()
    yield from _trust_and_log_cases()
    yield from derive(good, _statement_mutations(good))


# ---------------------------------------------------------------------------- fetch_proof

BASE = "https://store.example"
URL = BASE + "/v1/requests/req_01JB7Q2X9M/proof"
NOW = 1_792_708_300


def _fetch_input(requests: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "endpoint": {
            "base_url": BASE,
            "window": 60,
            "tokens": {
                "at-agent": {
                    "client_id": "https://agent.example/agent.json",
                    "jkt": _kid("agent-dpop"),
                    "exp": NOW + 600,
                },
                "at-other": {
                    "client_id": "https://other.example/agent.json",
                    "jkt": _kid("other-dpop"),
                    "exp": NOW + 600,
                },
                "at-expired": {
                    "client_id": "https://agent.example/agent.json",
                    "jkt": _kid("agent-dpop"),
                    "exp": NOW - 1,
                },
            },
            "packages": {
                "req_01JB7Q2X9M": {
                    "owner": "https://agent.example/agent.json",
                    "package": {"v": 1, "op": {"id": "req_01JB7Q2X9M"}},
                },
            },
        },
        "requests": requests,
    }


def _req(
    *,
    token: str = "at-agent",  # noqa: S107 - a vector's access token name
    key: str = "agent-dpop",
    url: str = URL,
    htu: str | None = None,
    method: str = "GET",
    htm: str = "GET",
    iat: int = NOW,
    jti: str = "j-1",
    now: int = NOW,
    ath_token: str | None = None,
    auth: str | None = None,
) -> dict[str, Any]:
    proof = vxp.fetch.make_dpop_proof(
        demo_key(key), method=htm, url=htu or url, iat=iat, jti=jti, access_token=ath_token or token
    )
    return {
        "method": method,
        "url": url,
        "headers": {"Authorization": auth or f"DPoP {token}", "DPoP": proof},
        "now": now,
    }


def _resp(
    status: int, body: dict[str, Any], headers: dict[str, str] | None = None
) -> dict[str, Any]:
    return {"status": status, "headers": headers or {}, "body": body}


def _unauth(error: str) -> dict[str, Any]:
    return _resp(
        401, {"error": error}, {"WWW-Authenticate": f'DPoP error="{error}", algs="ES256 EdDSA"'}
    )


@suite(
    "vxp.fetch_proof",
    description=(
        "The native profile's GET /v1/requests/{request_id}/proof with a DPoP-bound token "
        "(RFC 9449): each case runs its requests in order on one endpoint (shared jti memory)."
    ),
    notes={
        "dpop": "a DPoP proof check fails: 401 invalid_dpop_proof",
        "token": "the access token fails: 401 invalid_token",
        "not-found": "the same 404 request_not_found for missing and foreign requests",
        "replay": "the second use of a DPoP proof (jti) is refused",
    },
)
def fetch_proof_cases() -> Iterator[Case]:
    ok = _resp(
        200,
        {"v": 1, "op": {"id": "req_01JB7Q2X9M"}},
        {"Content-Type": "application/json", "Cache-Control": "no-store"},
    )
    not_found = _resp(404, {"error": "request_not_found"})
    yield Case(
        "owner-fetches",
        _fetch_input([_req()]),
        output={"responses": [ok]},
        comment="the agent fetches its own request's package",
    )
    missing_url = BASE + "/v1/requests/req_missing/proof"
    yield Case(
        "missing-and-foreign-look-the-same",
        _fetch_input([_req(url=missing_url), _req(token="at-other", key="other-dpop", jti="j-2")]),
        output={"responses": [not_found, not_found]},
        comment="a missing request and someone else's get the identical 404",
        flags=("not-found",),
    )
    yield Case(
        "jti-replay",
        _fetch_input([_req(), _req()]),
        output={"responses": [ok, _unauth("invalid_dpop_proof")]},
        comment="the same DPoP proof twice: the second is refused",
        flags=("replay",),
    )
    raw_key = resolve_key(demo_key("agent-dpop"))
    raw_proof = sign_compact(
        {"alg": "ES256", "jwk": raw_key.public_jwk, "typ": "dpop+jwt"},
        {
            "htm": "GET",
            "htu": "HTTPS://Store.Example:443/v1/requests/req_01JB7Q2X9M/proof",
            "iat": NOW,
            "jti": "j-norm",
            "ath": vxp.codec.b64url_encode(hashlib.sha256(b"at-agent").digest()),
        },
        raw_key,
        deterministic=True,
    )
    normalised = _req(jti="j-norm")
    normalised["headers"]["DPoP"] = raw_proof
    yield Case(
        "htu-scheme-host-port-normalised",
        _fetch_input([normalised]),
        output={"responses": [ok]},
        comment="htu with upper-case scheme and host and the default port :443 names the same "
        "URI (RFC 3986 §6.2.2-6.2.3, RFC 9449 §4.3); the path is compared byte for byte",
    )
    ahead = _req(iat=NOW + 60, jti="j-ahead")
    yield Case(
        "jti-replay-after-now-plus-window",
        _fetch_input([ahead, {**ahead, "now": NOW + 61}, {**ahead, "now": NOW + 120}]),
        output={"responses": [ok, _unauth("invalid_dpop_proof"), _unauth("invalid_dpop_proof")]},
        comment="a proof dated window seconds ahead passes the iat window until iat + window: "
        "the jti memory lasts until max(iat, now) + window, so replays at now + 61 and "
        "now + 120 are refused",
        flags=("replay",),
    )
    bad: list[tuple[str, str, dict[str, Any], str]] = [
        ("wrong-htm", "proof made for POST", _req(htm="POST"), "dpop"),
        (
            "wrong-htu",
            "proof made for another URL",
            _req(htu=BASE + "/v1/requests/x/proof"),
            "dpop",
        ),
        ("stale-iat", "iat 61 s before now", _req(iat=NOW - 61), "dpop"),
        ("future-iat", "iat 61 s after now", _req(iat=NOW + 61), "dpop"),
        ("wrong-ath", "ath of another token", _req(ath_token="at-other"), "dpop"),
        (
            "unbound-key",
            "proof signed by a key the token is not bound to",
            _req(key="other-dpop"),
            "dpop",
        ),
        (
            "bearer-scheme",
            "Authorization: Bearer instead of DPoP",
            _req(auth="Bearer at-agent"),
            "token",
        ),
        (
            "unknown-token",
            "an access token the server never issued",
            _req(token="at-nope"),
            "token",
        ),
        ("expired-token", "an expired access token", _req(token="at-expired"), "token"),
    ]
    for name, comment, request, flag in bad:
        error = "invalid_dpop_proof" if flag == "dpop" else "invalid_token"
        yield Case(
            name,
            _fetch_input([request]),
            output={"responses": [_unauth(error)]},
            comment=comment,
            flags=(flag,),
        )
