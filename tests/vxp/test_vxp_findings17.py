"""Regression tests for issue 17: each finding reproduced on the real path, then fixed."""

from __future__ import annotations

import contextlib
import hashlib
import threading
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from joserfc.jwk import ECKey

import vxp
from vxp import MerkleLog, demo_key, demo_operation
from vxp._jws import sign_compact
from vxp._keys import resolve_key
from vxp._proof_demo import CAPABILITY, COMPANY, LOG_ORIGIN, T0, seeded_rng
from vxp._statements import jwt_digest, sign_user_approval
from vxp.checkpoints import SignedCheckpoint, cosign_checkpoint, sign_checkpoint
from vxp.codec import b64url_encode

TYP = "example+sd-jwt"


def _at(seconds: float) -> Any:
    return T0 + timedelta(seconds=seconds)


def _failure(verdict: vxp.Verdict) -> tuple[str, str | None]:
    assert verdict.valid is False
    assert verdict.failure is not None
    return verdict.failure["code"], verdict.failure.get("reason")


# ------------------------------------------------------------------ 1: key memories


def _two_keys() -> tuple[dict[str, Any], dict[str, Any], ECKey]:
    key_a = demo_key("finding1-a")
    key_b = demo_key("finding1-b")
    jwk_a = dict(resolve_key(key_a).public_jwk)
    jwk_b = dict(resolve_key(key_b).public_jwk)
    return jwk_a, jwk_b, key_b


class _LyingJwk(dict):  # type: ignore[type-arg]
    """A JWK whose ``get`` answers with another key's members than its items."""

    def __init__(self, items: dict[str, Any], lie: dict[str, Any]) -> None:
        super().__init__(items)
        self._lie = lie

    def get(self, name: Any, default: Any = None) -> Any:
        return self._lie.get(name, default)


def test_lying_mapping_never_files_one_key_under_another() -> None:
    jwk_a, jwk_b, key_b = _two_keys()
    token_b = vxp.issue_sd_jwt({"iss": "x"}, key_b, typ=TYP).serialize()
    lying = _LyingJwk(jwk_b, jwk_a)  # get() says A, items say B
    with contextlib.suppress(vxp.VxpError):
        vxp.verify_sd_jwt(token_b, lying, typ=TYP, now=0)
    # whatever the lying mapping did, key A never accepts B's signature afterwards
    with pytest.raises(vxp.VxpError) as err:
        vxp.verify_sd_jwt(token_b, dict(jwk_a), typ=TYP, now=0)
    assert err.value.code in ("issuer_key_unknown", "signature_invalid")
    with pytest.raises(vxp.VxpError):
        vxp.verify_sd_jwt(token_b, vxp.IssuerKeys([dict(jwk_a)]), typ=TYP, now=0)


def test_lying_mapping_is_read_once_as_a_snapshot() -> None:
    jwk_a, jwk_b, key_b = _two_keys()
    keys = vxp.IssuerKeys([_LyingJwk(jwk_b, jwk_a)])
    # everything derived comes from one snapshot of the items: key B, consistently
    assert keys.kids == (resolve_key(jwk_b).kid,)
    token_b = vxp.issue_sd_jwt({"iss": "x"}, key_b, typ=TYP).serialize()
    assert vxp.verify_sd_jwt(token_b, keys, typ=TYP, now=0).claims == {"iss": "x"}


def test_thread_mutating_a_jwk_in_place_poisons_nothing() -> None:
    jwk_a, jwk_b, key_b = _two_keys()
    token_b = vxp.issue_sd_jwt({"iss": "x"}, key_b, typ=TYP).serialize()
    shared = dict(jwk_a)
    stop = threading.Event()

    def flip() -> None:
        while not stop.is_set():
            shared.update(jwk_b)
            shared.update(jwk_a)

    thread = threading.Thread(target=flip)
    thread.start()
    try:
        for _ in range(300):
            with contextlib.suppress(vxp.VxpError):
                vxp.verify_sd_jwt(token_b, shared, typ=TYP, now=0)
    finally:
        stop.set()
        thread.join()
    with pytest.raises(vxp.VxpError):
        vxp.verify_sd_jwt(token_b, dict(jwk_a), typ=TYP, now=0)


class _LyingItems(dict):  # type: ignore[type-arg]
    def __init__(self, items: dict[str, Any], lie: dict[str, Any]) -> None:
        super().__init__(items)
        self._lie = lie

    def items(self) -> Any:
        return self._lie.items()

    def get(self, name: Any, default: Any = None) -> Any:
        return self._lie.get(name, default)


def test_jwks_memory_cannot_make_a_valid_package_refused() -> None:
    op = demo_operation("succeeded")
    good = vxp.verify(op.package, op.metadata, op.jwks, now=op.now)
    assert good.valid
    # a JWKS whose entries lie about their members, then the honest material again
    other = resolve_key(demo_key("finding1-other")).public_jwk
    lying_keys = [_LyingItems(k, {**other, "kid": k["kid"]}) for k in op.jwks["keys"]]
    vxp.verify(op.package, op.metadata, {"keys": lying_keys}, now=op.now)
    again = vxp.verify(op.package, op.metadata, op.jwks, now=op.now)
    assert again == good


class _LyingStr(str):
    """A string whose split answers for another string."""

    other = ""

    def split(self, *args: Any, **kwargs: Any) -> Any:
        return str.split(self.other, *args, **kwargs)


def test_a_statement_string_that_lies_is_read_as_its_own_text() -> None:
    op = demo_operation("succeeded")
    honest = op.package["statements"][5]
    jws, _, rest = honest.partition("~")
    forged = jws[:-3] + ("AAA" if jws[-3:] != "AAA" else "BBB") + "~" + rest
    lying = _LyingStr(forged)
    lying.other = honest
    package = {**op.package, "statements": [*op.package["statements"][:5], lying]}
    verdict = vxp.verify(package, op.metadata, op.jwks, now=op.now)
    assert _failure(verdict)[0] == "signature_invalid"


class _LyingInt(int):
    """An integer that says yes to every order comparison."""

    def __le__(self, other: object) -> bool:
        return True

    def __ge__(self, other: object) -> bool:
        return True


def test_a_quorum_that_lies_is_read_as_its_own_value() -> None:
    op = demo_operation("succeeded")
    log = {**op.metadata["vxp_proof"]["log"], "quorum": _LyingInt(5)}
    metadata = {**op.metadata, "vxp_proof": {**op.metadata["vxp_proof"], "log": log}}
    verdict = vxp.verify(op.package, metadata, op.jwks, now=op.now)
    assert verdict.valid
    assert verdict.logged is False  # no witness cosigned: 0 of 5
    assert "witnessed_log" not in verdict.derived_assurance


# ------------------------------------------------------------------ 2: witness time


def _recosign(signed_json: dict[str, Any], time: int) -> dict[str, Any]:
    signed = SignedCheckpoint.from_json(signed_json)
    bare = sign_checkpoint(signed.checkpoint, demo_key("log"))
    return cosign_checkpoint(bare, demo_key("witness"), time=time).to_json()


def _witnessed_with(time: int) -> Any:
    op = demo_operation("witnessed")
    package = {**op.package, "log": {**op.package["log"]}}
    package["log"]["checkpoint"] = _recosign(op.package["log"]["checkpoint"], time)
    live = {**op.live, "checkpoint": _recosign(op.live["checkpoint"], time)}
    return op, package, live


def test_witness_cosignature_before_a_statement_was_logged_fails() -> None:
    op = demo_operation("witnessed")
    assert vxp.verify(op.package, op.metadata, op.jwks, live=op.live, now=op.now).logged
    # cosigned at _at(3), the outcome logged at _at(4)
    _, package, live = _witnessed_with(int(_at(3).timestamp()))
    verdict = vxp.verify(package, op.metadata, op.jwks, now=op.now)
    assert _failure(verdict) == ("log_invalid", "witness_time")
    verdict = vxp.verify(package, op.metadata, op.jwks, live=live, now=op.now)
    assert _failure(verdict) == ("log_invalid", "witness_time")


def test_witness_cosignature_a_day_before_the_outcome_fails() -> None:
    op = demo_operation("witnessed")
    _, package, _ = _witnessed_with(int(_at(4 - 86400).timestamp()))
    verdict = vxp.verify(package, op.metadata, op.jwks, now=op.now)
    assert _failure(verdict) == ("log_invalid", "witness_time")


def test_witness_cosignature_after_now_fails_unless_within_leeway() -> None:
    op = demo_operation("witnessed")
    later = int((op.now + timedelta(days=90)).timestamp())
    _, package, _ = _witnessed_with(later)
    verdict = vxp.verify(package, op.metadata, op.jwks, now=op.now)
    assert _failure(verdict) == ("log_invalid", "witness_time")
    ok = vxp.verify(package, op.metadata, op.jwks, now=op.now, leeway=91 * 86400)
    assert ok.valid
    assert ok.logged
    verifier = vxp.Verifier(op.metadata, op.jwks)
    assert _failure(verifier.verify(package, now=op.now, leeway=0))[1] == "witness_time"


def test_witness_cosignature_in_the_same_second_as_the_last_statement_counts() -> None:
    op = demo_operation("witnessed")
    _, package, _ = _witnessed_with(int(_at(4).timestamp()))  # truncated to the second
    assert vxp.verify(package, op.metadata, op.jwks, now=op.now).logged


def test_builder_refuses_a_witness_time_before_its_statements() -> None:
    op = demo_operation("succeeded")
    with pytest.raises(vxp.VxpError) as err:
        op.builder.package(
            log_key=demo_key("log"), witnesses=[(demo_key("witness"), int(_at(3).timestamp()))]
        )
    assert err.value.reason == "witness_time"


# ------------------------------------------------------------------ 3: KB-JWT exp / nbf


def _kb_token(extra: dict[str, Any]) -> tuple[str, ECKey]:
    issuer = demo_key("kb-issuer")
    holder = demo_key("kb-holder")
    sd = vxp.issue_sd_jwt({"iss": "x", "n": vxp.Sd(1)}, issuer, typ=TYP, holder_key=holder)
    body = vxp.present_sd_jwt(sd, disclose=None)
    sd_hash = b64url_encode(hashlib.sha256(body.encode()).digest())
    payload = {"aud": "v", "nonce": "n", "iat": 1000, "sd_hash": sd_hash, **extra}
    kb = sign_compact(
        {"alg": "ES256", "typ": "kb+jwt"}, payload, resolve_key(holder), deterministic=True
    )
    return body + kb, issuer


@pytest.mark.parametrize(
    ("extra", "now", "leeway", "code"),
    [
        ({"exp": 1000}, 1000, 0, "kb_token_expired"),
        ({"exp": 999}, 1000, 0, "kb_token_expired"),
        ({"exp": 999}, 1000, 2, None),
        ({"nbf": 1001}, 1000, 0, "kb_token_not_yet_valid"),
        ({"nbf": 1005}, 1000, 5, None),
        ({"exp": "never"}, 1000, 0, "kb_claim_invalid"),
        ({"nbf": True}, 1000, 0, "kb_claim_invalid"),
        ({"exp": 2000, "nbf": 500}, 1000, 0, None),
    ],
)
def test_kb_jwt_exp_and_nbf_are_enforced(
    extra: dict[str, Any], now: int, leeway: int, code: str | None
) -> None:
    token, issuer = _kb_token(extra)
    policy = vxp.KeyBinding(aud="v", nonce="n", leeway=leeway)
    if code is None:
        assert vxp.verify_sd_jwt(token, issuer, typ=TYP, now=now, key_binding=policy).key_binding
    else:
        with pytest.raises(vxp.VxpError) as err:
            vxp.verify_sd_jwt(token, issuer, typ=TYP, now=now, key_binding=policy)
        assert err.value.code == code


# ------------------------------------------------------------------ 4: nested _sd_alg


def _signed(payload: dict[str, Any], disclosures: tuple[vxp.sdjwt.Disclosure, ...] = ()) -> str:
    key = resolve_key(demo_key("nested"))
    jws = sign_compact(
        {"alg": "ES256", "kid": key.kid, "typ": TYP}, payload, key, deterministic=True
    )
    return vxp.SdJwt(jws, disclosures).serialize()


@pytest.mark.parametrize(
    "payload",
    [
        {"_sd_alg": "sha-256", "a": {"_sd_alg": "sha-256"}},
        {"a": {"b": {"_sd_alg": "sha-256"}}},
        {"_sd_alg": "sha-256", "list": [{"_sd_alg": "sha-256"}]},
    ],
)
def test_nested_sd_alg_is_refused(payload: dict[str, Any]) -> None:
    with pytest.raises(vxp.VxpError) as err:
        vxp.verify_sd_jwt(_signed(payload), demo_key("nested"), typ=TYP, now=0)
    assert err.value.code == "sd_alg_misplaced"


def test_nested_sd_alg_inside_a_disclosure_is_refused() -> None:
    inner = vxp.sdjwt.Disclosure.create("salt", "x", {"_sd_alg": "sha-256"})
    payload = {"_sd_alg": "sha-256", "_sd": [inner.digest()]}
    with pytest.raises(vxp.VxpError) as err:
        vxp.verify_sd_jwt(_signed(payload, (inner,)), demo_key("nested"), typ=TYP, now=0)
    assert err.value.code == "sd_alg_misplaced"
    named = vxp.sdjwt.Disclosure.create("salt", "_sd_alg", "sha-256")
    payload = {"_sd_alg": "sha-256", "a": {"_sd": [named.digest()]}}
    with pytest.raises(vxp.VxpError) as err:
        vxp.verify_sd_jwt(_signed(payload, (named,)), demo_key("nested"), typ=TYP, now=0)
    assert err.value.code in ("sd_alg_misplaced", "claim_name_reserved")


def test_top_level_sd_alg_still_accepted() -> None:
    claims = vxp.verify_sd_jwt(
        _signed({"_sd_alg": "sha-256", "a": {"b": 1}}), demo_key("nested"), typ=TYP, now=0
    ).claims
    assert claims == {"a": {"b": 1}}


# ------------------------------------------------------------------ 5: builder read-back


def _builder(seed: str, *, approve: bool = True) -> vxp.OperationBuilder:
    builder = vxp.OperationBuilder(
        company=COMPANY,
        op_id="req_1",
        operator_key=demo_key("operator"),
        company_key=demo_key("company"),
        log=MerkleLog(LOG_ORIGIN),
        rng=seeded_rng(seed),
    )
    builder.request(channel="vxp", client_id="https://a.example", request={"r": 1}, now=_at(-2))
    builder.terms(
        capability=CAPABILITY,
        terms={"capability": CAPABILITY, "pedido": "P-1", "dia": "2026-10-28"},
        expires_at=_at(900),
        read_back_terms=["pedido", "dia"],
        now=_at(0),
    )
    if approve:
        builder.approve(now=_at(1))
        builder.execute(release={"o": 1}, now=_at(2))
    return builder


def _material(
    builder: vxp.OperationBuilder, package: dict[str, Any], *, witness: bool = False
) -> tuple[Any, Any]:
    records = [
        vxp.KeyRecord(resolve_key(demo_key("operator")).kid, "operator", _at(-86400), None),
        vxp.KeyRecord(resolve_key(demo_key("company")).kid, "company", _at(-86400), None),
    ]
    metadata = vxp.build_metadata(
        COMPANY,
        jwks_uri=COMPANY + "/jwks.json",
        keys=records,
        custody="operator_hosted",
        log_origin=LOG_ORIGIN,
        log_kid=resolve_key(demo_key("log")).kid,
        witnesses=[resolve_key(demo_key("witness")).kid] if witness else [],
    )
    public = [demo_key("operator"), demo_key("company"), demo_key("log")]
    jwks = vxp.build_jwks([*public, demo_key("witness")] if witness else public)
    return metadata, jwks


def test_builder_read_back_with_a_nested_disclosable_member_verifies() -> None:
    builder = _builder("nested-personal")
    builder.read_back(
        observed={"pedido": "P-1", "dia": "2026-10-28"},
        personal={"receptor": {"nombre": vxp.Sd("Ana"), "doc": "X"}},
        now=_at(3),
    )
    builder.outcome(state="succeeded", result_summary={"ok": 1}, now=_at(4))
    package = builder.package(log_key=demo_key("log"))
    metadata, jwks = _material(builder, package)
    verdict = vxp.verify(package, metadata, jwks, now=_at(60))
    assert verdict.valid, verdict.failure
    assert "operator_reported_read_back" in verdict.derived_assurance


_RESERVED = ("_sd", "...", "_sd_alg")
_json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text(max_size=4))


def _personal_values() -> st.SearchStrategy[Any]:
    return st.recursive(
        _json_leaf,
        lambda inner: st.one_of(
            st.lists(st.one_of(inner, inner.map(vxp.Sd)), max_size=3),
            st.dictionaries(
                st.text(min_size=1, max_size=3).filter(
                    lambda s: s not in ("_sd", "...", "_sd_alg")
                ),
                st.one_of(inner, inner.map(vxp.Sd)),
                max_size=3,
            ),
        ),
        max_leaves=6,
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    personal=st.dictionaries(
        st.sampled_from(["receptor", "nota", "pedido", "x"]), _personal_values(), max_size=3
    ),
    extra=st.dictionaries(st.sampled_from(["extra", "nota", "y"]), _personal_values(), max_size=2),
    show_dia=st.sampled_from(["2026-10-28", "2026-10-29", None]),
    final=st.sampled_from(["succeeded", "failed", "unknown", "none"]),
    approver=st.sampled_from(["agent", "user", "witness", "log", "operator", "company"]),
)
def test_every_package_the_builder_makes_verifies(
    personal: dict[str, Any],
    extra: dict[str, Any],
    show_dia: str | None,
    final: str,
    approver: str,
) -> None:
    """Whatever the builder signs and seals, the verifier accepts: read-backs whose observed
    members nest disclosable values anywhere (review F4a), user-signed approvals by any key,
    the issuer's log and witness keys included (review F4b)."""
    builder = _builder("property", approve=False)
    observed: dict[str, Any] = {"pedido": "P-1", **extra}
    if show_dia is not None:
        observed["dia"] = show_dia
    personal = {k: v for k, v in personal.items() if k not in observed}
    try:
        if approver == "agent":
            builder.approve(now=_at(1))
        else:
            builder.approve_signed(user_key=demo_key(approver), now=_at(1))
        builder.execute(release={"o": 1}, now=_at(2))
        if final != "none":
            builder.read_back(observed=observed, personal=personal, now=_at(3))
        state = "unknown" if final == "none" else final
        builder.outcome(state=state, result_summary={"s": state}, now=_at(4))
        witness_time = int(_at(5).timestamp())
        package = builder.package(
            log_key=demo_key("log"), witnesses=[(demo_key("witness"), witness_time)]
        )
    except vxp.VxpError:
        return  # the builder refused to sign or seal: nothing was issued
    metadata, jwks = _material(builder, package, witness=True)
    verdict = vxp.verify(package, metadata, jwks, now=_at(60))
    assert verdict.valid, verdict.failure
    assert verdict.logged


# ------------------------------------------------------------------ 6: booleans


def test_user_signature_with_boolean_revision_is_refused() -> None:
    builder = _builder("boolean", approve=False)
    state = builder.state
    assert state.latest is not None
    assert state.request is not None
    terms_statement = jwt_digest(builder.statements[state.latest.seq].split("~", 1)[0])
    jwk, token = sign_user_approval(
        demo_key("user"),
        state.request["request_digest"],
        True,  # type: ignore[arg-type]  # the attack: true where the chain says 1
        state.latest.terms_digest,
        terms_statement,
    )
    body = {
        "method": "user_signed",
        "revision": 1,
        "terms_digest": state.latest.terms_digest,
        "user_key": jwk,
        "user_signature": token,
    }
    builder.unsafe_append("user_approval", body, now=_at(1.5))
    builder.execute(release={"o": 1}, now=_at(2))
    builder.outcome(state="failed", result_summary={"e": 1}, now=_at(4))
    package = builder.package(log_key=demo_key("log"))
    metadata, jwks = _material(builder, package)
    verdict = vxp.verify(package, metadata, jwks, now=_at(60))
    assert _failure(verdict) == ("rule_violation", "user_signature_invalid")
    # the same approval with revision 1 in the user's JWS is accepted
    honest = _builder("boolean", approve=False)
    honest.approve_signed(user_key=demo_key("user"), now=_at(1.5))
    honest.execute(release={"o": 1}, now=_at(2))
    honest.outcome(state="failed", result_summary={"e": 1}, now=_at(4))
    package = honest.package(log_key=demo_key("log"))
    assert vxp.verify(package, metadata, jwks, now=_at(60)).approval == "user_signed"


@pytest.mark.parametrize("version", [True, 1.5, "1", None])
def test_metadata_version_boolean_is_refused(version: Any) -> None:
    op = demo_operation("succeeded")
    metadata = {**op.metadata, "vxp_proof": {**op.metadata["vxp_proof"], "version": version}}
    verdict = vxp.verify(op.package, metadata, op.jwks, now=op.now)
    assert _failure(verdict) == ("metadata_invalid", "version")
    with pytest.raises(vxp.VxpError):
        vxp.Verifier(metadata, op.jwks)


def test_metadata_version_one_point_zero_compares_by_value() -> None:
    op = demo_operation("succeeded")
    metadata = {**op.metadata, "vxp_proof": {**op.metadata["vxp_proof"], "version": 1.0}}
    assert vxp.verify(op.package, metadata, op.jwks, now=op.now).valid


# ------------------------------------------------------------------ 7: DPoP

BASE = "https://store.example"
URL = BASE + "/v1/requests/req_1/proof"
NOW = 1_800_000_000
AGENT = "https://agent.example/agent.json"


def _endpoint(packages: dict[str, Any]) -> vxp.fetch.ProofEndpoint:
    tokens = {"tok": vxp.fetch.AccessToken(AGENT, vxp.key_thumbprint(demo_key("dpop")), NOW + 3600)}
    return vxp.fetch.ProofEndpoint(base_url=BASE, tokens=tokens, packages=packages)


def _headers(scheme: str, jti: str) -> dict[str, str]:
    proof = vxp.fetch.make_dpop_proof(
        demo_key("dpop"), method="GET", url=URL, iat=NOW, jti=jti, access_token="tok"
    )
    return {"Authorization": f"{scheme} tok", "DPoP": proof}


@pytest.mark.parametrize("scheme", ["DPoP", "dpop", "DPOP", "dPoP"])
def test_dpop_scheme_is_case_insensitive(scheme: str) -> None:
    server = _endpoint({"req_1": (AGENT, {"v": 1})})
    answer = server.handle(method="GET", url=URL, headers=_headers(scheme, "j-" + scheme), now=NOW)
    assert answer.status == 200, answer.body


@pytest.mark.parametrize("scheme", ["Bearer", "DPoPx", "DPo"])
def test_other_schemes_are_still_refused(scheme: str) -> None:
    server = _endpoint({"req_1": (AGENT, {"v": 1})})
    answer = server.handle(method="GET", url=URL, headers=_headers(scheme, "j"), now=NOW)
    assert answer.status == 401


def test_fetched_body_is_a_deep_copy() -> None:
    package = {"v": 1, "log": {"entries": [{"index": 0}]}, "statements": ["a~"]}
    server = _endpoint({"req_1": (AGENT, package)})
    first = server.handle(method="GET", url=URL, headers=_headers("DPoP", "j1"), now=NOW)
    first.body["log"]["entries"][0]["index"] = 99
    first.body["statements"].append("evil~")
    second = server.handle(method="GET", url=URL, headers=_headers("DPoP", "j2"), now=NOW)
    assert second.body == {"v": 1, "log": {"entries": [{"index": 0}]}, "statements": ["a~"]}
    assert package["log"]["entries"][0]["index"] == 0
