"""Regression tests for the adversarial review of the VXP redesign (findings F1-F7).

Each test runs the reviewer's reproducer on the real path (real keys, real signatures).
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
from datetime import timedelta
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import ed25519

import vxp
from vxp._chain import format_time, parse_time
from vxp._codec import b64url_encode
from vxp._keys import resolve_key
from vxp._metadata import load_trust
from vxp._proof_demo import COMPANY, LOG_ORIGIN, T0, demo_key, demo_operation
from vxp._statements import jwt_digest, sign_user_approval


def _at(seconds: float) -> Any:
    return T0 + timedelta(seconds=seconds)


def _failure(verdict: vxp.Verdict) -> tuple[str, str | None]:
    assert verdict.valid is False
    assert verdict.failure is not None
    return verdict.failure["code"], verdict.failure.get("reason")


# ------------------------------------------------------------------ F1: live witnesses


def _last_logged(package: dict[str, Any]) -> int:
    times = [parse_time(e["logged_at"], "t") for e in package["log"]["entries"]]
    return math.floor(max(times).timestamp())


def test_live_metadata_cannot_make_a_saved_signing_key_its_witness() -> None:
    op = demo_operation("succeeded")
    operator = demo_key("operator")
    package = op.builder.package(
        log_key=demo_key("log"), witnesses=[(operator, _last_logged(op.package) + 1)]
    )
    live = copy.deepcopy(op.metadata)
    op_kid = vxp.key_thumbprint(operator)
    live["vxp_proof"]["keys"] = [k for k in live["vxp_proof"]["keys"] if k["kid"] != op_kid]
    live["vxp_proof"]["log"]["witnesses"] = [op_kid]
    with pytest.raises(vxp.VxpError) as info:
        vxp.Verifier(op.metadata, op.jwks, live_metadata=live, live_jwks=op.jwks)
    assert (info.value.code, info.value.reason) == ("live_invalid", "witness_not_independent")
    live_data = {**op.live, "metadata": live, "jwks": op.jwks}
    verdict = vxp.verify(package, op.metadata, op.jwks, live=live_data, now=op.now)
    assert _failure(verdict) == ("live_invalid", "witness_not_independent")


def test_saved_witness_listed_live_as_a_signing_key_is_refused() -> None:
    op = demo_operation("witnessed")
    witness_kid = vxp.key_thumbprint(demo_key("witness"))
    live = copy.deepcopy(op.metadata)
    live["vxp_proof"]["log"]["witnesses"] = []
    live["vxp_proof"]["keys"].append(
        {"kid": witness_kid, "role": "operator", "not_before": format_time(_at(-100)),
         "not_after": None}
    )  # fmt: skip
    with pytest.raises(vxp.VxpError) as info:
        vxp.Verifier(op.metadata, op.jwks, live_metadata=live, live_jwks=op.jwks)
    assert (info.value.code, info.value.reason) == ("live_invalid", "witness_not_independent")


def test_live_quorum_never_lowers_the_saved_quorum() -> None:
    op = demo_operation("witnessed")
    saved = copy.deepcopy(op.metadata)
    saved["vxp_proof"]["log"]["quorum"] = 2
    assert vxp.Verifier(saved, op.jwks).verify(op.package, now=op.now).logged is False
    both = vxp.Verifier(saved, op.jwks, live_metadata=op.metadata, live_jwks=op.jwks)
    verdict = both.verify(op.package, now=op.now)
    assert verdict.valid, verdict.failure
    assert verdict.logged is False
    # and the other way round: live raises the quorum, the stricter one holds
    stricter = vxp.Verifier(op.metadata, op.jwks, live_metadata=saved, live_jwks=op.jwks)
    assert stricter.verify(op.package, now=op.now).logged is False
    assert vxp.Verifier(op.metadata, op.jwks).verify(op.package, now=op.now).logged is True


def test_a_witness_counts_only_when_saved_and_live_both_recognise_it() -> None:
    op = demo_operation("witnessed")
    none_saved = copy.deepcopy(op.metadata)
    none_saved["vxp_proof"]["log"]["witnesses"] = []
    # saved material recognises no witness; live adds one: it does not count yet
    added = vxp.Verifier(none_saved, op.jwks, live_metadata=op.metadata, live_jwks=op.jwks)
    verdict = added.verify(op.package, now=op.now)
    assert verdict.valid, verdict.failure
    assert (verdict.logged, verdict.witnesses) == (False, 0)
    # live drops a witness saved material recognised: it no longer counts
    dropped = vxp.Verifier(op.metadata, op.jwks, live_metadata=none_saved, live_jwks=op.jwks)
    verdict = dropped.verify(op.package, now=op.now)
    assert (verdict.logged, verdict.witnesses) == (False, 0)
    both = vxp.Verifier(op.metadata, op.jwks, live_metadata=op.metadata, live_jwks=op.jwks)
    verdict = both.verify(op.package, now=op.now)
    assert (verdict.logged, verdict.witnesses) == (True, 1)


# ------------------------------------------------------------------ F2: P-256 coordinate >= p

_P = 2**256 - 2**224 + 2**192 + 2**96 - 1
_B = 0x5AC635D8AA3A93E7B3EBBD55769886BC651D06B0CC53B0F63BCE3C3E27D2604B


def _small_point() -> tuple[int, int]:
    x = 1
    while True:
        rhs = (x**3 - 3 * x + _B) % _P
        y = pow(rhs, (_P + 1) // 4, _P)
        if y * y % _P == rhs:
            return x, y
        x += 1


def _ec_jwk(x: int, y: int) -> dict[str, Any]:
    return {
        "kty": "EC",
        "crv": "P-256",
        "x": b64url_encode(x.to_bytes(32, "big")),
        "y": b64url_encode(y.to_bytes(32, "big")),
    }


def test_p256_coordinate_at_or_above_p_is_refused() -> None:
    x, y = _small_point()
    assert x == 5
    canonical = resolve_key(_ec_jwk(x, y))
    for respelled in (_ec_jwk(x + _P, y), _ec_jwk(x, y + _P) if y + _P < 2**256 else None):
        if respelled is None:
            continue
        with pytest.raises(vxp.VxpError) as info:
            resolve_key(respelled)
        assert info.value.code == "key_invalid"
        with pytest.raises(vxp.VxpError) as info:
            vxp.IssuerKeys([respelled])
        assert info.value.code == "key_invalid"
    jwks = {"keys": [{**_ec_jwk(x + _P, y), "kid": canonical.kid}]}
    with pytest.raises(vxp.VxpError) as info:
        load_trust(
            {
                "issuer": "https://c.example",
                "vxp_proof": {
                    "version": 1,
                    "profile": "issuer",
                    "jwks_uri": "https://c.example/j",
                    "keys": [],
                    "custody": {"company_key": "company_held"},
                    "log": {"origin": "o", "kid": canonical.kid, "witnesses": [], "quorum": 1},
                },
            },
            jwks,
        )
    assert (info.value.code, info.value.reason) == ("metadata_invalid", "jwks")


def test_verifier_refuses_a_jwks_with_a_respelled_p256_key() -> None:
    op = demo_operation("succeeded")
    x, y = _small_point()
    jwks = copy.deepcopy(op.jwks)
    respelled = _ec_jwk(x + _P, y)
    members = json.dumps(respelled, sort_keys=True, separators=(",", ":")).encode()
    kid = b64url_encode(hashlib.sha256(members).digest())  # its RFC 7638 thumbprint
    jwks["keys"].append({**respelled, "kid": kid})
    with pytest.raises(vxp.VxpError) as info:
        vxp.Verifier(op.metadata, jwks)
    assert (info.value.code, info.value.reason) == ("metadata_invalid", "jwks")
    verdict = vxp.verify(op.package, op.metadata, jwks, now=op.now)
    assert _failure(verdict) == ("metadata_invalid", "jwks")


# ------------------------------------------------------------------ F3: witness not in JWKS


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
    state = b.state
    assert state.latest is not None
    assert state.request is not None
    jwk, token = sign_user_approval(
        demo_key(seed),
        state.request["request_digest"],
        1,
        state.latest.terms_digest,
        jwt_digest(b.statements[state.latest.seq].split("~", 1)[0]),
    )
    body = {
        "method": "user_signed",
        "revision": 1,
        "terms_digest": state.latest.terms_digest,
        "user_key": jwk,
        "user_signature": token,
    }
    b.unsafe_append("user_approval", body, now=_at(1))
    b.execute(release={}, now=_at(2))
    b.read_back(observed={"c": 1}, now=_at(3))
    b.outcome(state="succeeded", result_summary={}, now=_at(4))
    return b.package(log_key=demo_key("log")), op


def test_witness_key_absent_from_the_jwks_is_still_the_issuers() -> None:
    package, op = _issuer_key_as_user("witness")
    expected = ("rule_violation", "user_key_is_issuer_key")
    assert _failure(vxp.verify(package, op.metadata, op.jwks, now=op.now)) == expected
    witness_kid = vxp.key_thumbprint(demo_key("witness"))
    jwks = {"keys": [k for k in op.jwks["keys"] if k["kid"] != witness_kid]}
    assert _failure(vxp.verify(package, op.metadata, jwks, now=op.now)) == expected
    # the same witness named only by live metadata
    saved = copy.deepcopy(op.metadata)
    saved["vxp_proof"]["log"]["witnesses"] = []
    verifier = vxp.Verifier(saved, jwks, live_metadata=op.metadata, live_jwks=jwks)
    assert _failure(verifier.verify(package, now=op.now)) == expected


def test_log_key_absent_from_the_jwks_is_still_the_issuers() -> None:
    package, op = _issuer_key_as_user("log")
    log_kid = vxp.key_thumbprint(demo_key("log"))
    jwks = {"keys": [k for k in op.jwks["keys"] if k["kid"] != log_kid]}
    # stage 5 (chain) comes before stage 6 (log), so the missing log key is not reached
    expected = ("rule_violation", "user_key_is_issuer_key")
    assert _failure(vxp.verify(package, op.metadata, jwks, now=op.now)) == expected


# ------------------------------------------------------------------ F4: builder vs verifier


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
    assert (info.value.code, info.value.reason) == ("statement_malformed", "sd_misplaced")
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
    last = _last_logged({"log": {"entries": [{"logged_at": format_time(_at(4))}]}})
    with pytest.raises(vxp.VxpError) as info:
        b.package(log_key=demo_key("log"), witnesses=[(demo_key("witness"), last)])
    assert (info.value.code, info.value.reason) == ("rule_violation", "user_key_is_issuer_key")
    # the same operation approved by the user's own key seals and verifies
    good = _approved_builder("user")
    good.read_back(observed={"c": 1}, now=_at(3))
    good.outcome(state="succeeded", result_summary={}, now=_at(4))
    package = good.package(log_key=demo_key("log"), witnesses=[(demo_key("witness"), last)])
    verdict = vxp.verify(package, op.metadata, op.jwks, now=op.now)
    assert verdict.valid, verdict.failure
    assert verdict.approval == "user_signed"


# ------------------------------------------------------------------ F5: lying containers


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
    assert _failure(verdict) == ("package_malformed", "log_entries")
    verifier = vxp.Verifier(op.metadata, op.jwks)
    assert _failure(verifier.verify(package, now=op.now)) == ("package_malformed", "log_entries")
    no_v = _LyingKeys({k: v for k, v in op.package.items() if k != "v"})
    assert _failure(verifier.verify(no_v, now=op.now)) == ("package_malformed", "members")
    assert _failure(vxp.verify(no_v, op.metadata, op.jwks, now=op.now)) == (
        "package_malformed",
        "members",
    )


# ------------------------------------------------------------------ F6: module state


def test_kind_signer_table_is_read_only() -> None:
    with pytest.raises(TypeError):
        vxp.statements.KIND_SIGNER["outcome"] = "operator"  # type: ignore[index]
    assert vxp.statements.KIND_SIGNER["outcome"] == "company"


def test_load_schema_returns_a_copy_the_caller_may_change() -> None:
    name = vxp.schema_names()[0]
    first = vxp.load_schema(name)
    expected = copy.deepcopy(first)
    first.clear()
    first["type"] = "string"
    assert vxp.load_schema(name) == expected
    assert vxp.load_schema(name) is not vxp.load_schema(name)


@pytest.mark.parametrize("name", [["x"], None, 3, b"card.json", {"a": 1}])
def test_load_schema_refuses_a_name_that_is_not_a_string(name: Any) -> None:
    with pytest.raises(vxp.VxpError) as info:
        vxp.load_schema(name)
    assert info.value.code == "schema_unknown"


# ------------------------------------------------------------------ F7: statement cap


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
    assert _failure(over) == ("package_malformed", "too_many_statements")
    at_cap = verifier.verify(_padded(op, 4096), now=op.now)
    assert _failure(at_cap) != ("package_malformed", "too_many_statements")
    assert _failure(vxp.verify(_padded(op, 4097), op.metadata, op.jwks, now=op.now)) == (
        "package_malformed",
        "too_many_statements",
    )


def test_statement_cap_is_the_callers() -> None:
    op = demo_operation("succeeded")
    verifier = vxp.Verifier(op.metadata, op.jwks)
    assert verifier.verify(op.package, now=op.now, max_statements=6).valid
    assert _failure(verifier.verify(op.package, now=op.now, max_statements=5)) == (
        "package_malformed",
        "too_many_statements",
    )
    one_shot = vxp.verify(op.package, op.metadata, op.jwks, now=op.now, max_statements=5)
    assert _failure(one_shot) == ("package_malformed", "too_many_statements")


@pytest.mark.parametrize("cap", [0, -1, True, 1.5, "6", None, 2**20 + 1])
def test_statement_cap_must_be_a_sensible_integer(cap: Any) -> None:
    op = demo_operation("succeeded")
    verifier = vxp.Verifier(op.metadata, op.jwks)
    with pytest.raises(vxp.VxpUsageError, match="max_statements_invalid"):
        verifier.verify(op.package, now=op.now, max_statements=cap)
    with pytest.raises(vxp.VxpUsageError, match="max_statements_invalid"):
        vxp.verify(op.package, op.metadata, op.jwks, now=op.now, max_statements=cap)


# ------------------------------------------------------------------ errand: a detached approval


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
    key = resolve_key(_ed25519(seed))
    signing_input = vxp.statements.approval_signing_input(key.public_jwk, payload)
    return dict(key.public_jwk), key.sign(signing_input, deterministic=True)


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
    operator = resolve_key(demo_key("operator"))
    assert _refused(
        b,
        user_key=operator.public_jwk,
        signature=operator.sign(
            vxp.statements.approval_signing_input(operator.public_jwk, payload)
        ),
    ) == ("rule_violation", "user_key_is_issuer_key")
    # and the good one after all these refusals
    b.approve_with_signature(user_key=public_jwk, signature=signature, now=_at(1))
    assert b.state.approval is not None


def test_approval_signing_input_is_the_jws_signing_input() -> None:
    key = resolve_key(_ed25519("ana"))
    payload = vxp.statements.approval_payload(
        "sha-256:" + "A" * 43, 1, "sha-256:" + "B" * 43, "sha-256:x"
    )
    header_b64, payload_b64 = vxp.statements.approval_signing_input(key.public_jwk, payload).split(
        b"."
    )
    header = json.loads(base64_decode(header_b64))
    assert header == {"alg": "EdDSA", "kid": key.kid, "typ": "vxp-approval+jwt"}
    assert json.loads(base64_decode(payload_b64)) == payload
    with pytest.raises(vxp.VxpError):
        vxp.statements.approval_signing_input(key.public_jwk, {"revision": 1})


def base64_decode(segment: bytes) -> bytes:
    import base64

    return base64.urlsafe_b64decode(segment + b"=" * (-len(segment) % 4))
