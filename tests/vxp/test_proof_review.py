"""Regression tests from the adversarial review of VXP Proof: each attack that once passed."""

from __future__ import annotations

import copy
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from joserfc.jwk import ECKey

import vxp
from vxp._checkpoint import Checkpoint, SignedCheckpoint, cosign_checkpoint, sign_checkpoint
from vxp._codec import encode_hash
from vxp._proof_demo import CAPABILITY, COMPANY, LOG_ORIGIN, T0, demo_key, demo_operation
from vxp._statements import jwt_digest, sign_user_approval
from vxp._verifier import leaf_data

TERMS = {"capability": CAPABILITY, "pedido": "P-1042", "despacho_nuevo": "2026-10-28"}


def _at(seconds: float) -> Any:
    return T0 + timedelta(seconds=seconds)


def _failure(package: Any, metadata: Any, jwks: Any, *, live: Any = None, now: Any) -> Any:
    verdict = vxp.verify(package, metadata, jwks, live=live, now=now)
    assert verdict.valid is False
    assert verdict.derived_assurance == ()
    assert verdict.failure is not None
    return (verdict.failure["code"], verdict.failure.get("reason"))


# ------------------------------------------------------------------ DPoP fetch

BASE = "https://store.example"
URL = BASE + "/v1/requests/req_1/proof"
NOW = 1_800_000_000
AGENT = "https://agent.example/agent.json"


def _endpoint() -> vxp.fetch.ProofEndpoint:
    tokens = {"tok": vxp.fetch.AccessToken(AGENT, vxp.key_thumbprint(demo_key("dpop")), NOW + 3600)}
    return vxp.fetch.ProofEndpoint(
        base_url=BASE, tokens=tokens, packages={"req_1": (AGENT, {"v": 1})}
    )


def _dpop(iat: int, jti: str = "j", url: str = URL) -> dict[str, str]:
    proof = vxp.fetch.make_dpop_proof(
        demo_key("dpop"), method="GET", url=url, iat=iat, jti=jti, access_token="tok"
    )
    return {"Authorization": "DPoP tok", "DPoP": proof}


def test_future_dated_dpop_proof_cannot_be_replayed_after_now_plus_window() -> None:
    """A proof dated window seconds ahead stays acceptable until iat + window: the jti
    memory must last that long (it used to expire at now + window, letting it replay)."""
    server = _endpoint()
    headers = _dpop(NOW + 60)
    assert server.handle(method="GET", url=URL, headers=headers, now=NOW).status == 200
    for later in (NOW + 1, NOW + 61, NOW + 100, NOW + 120):
        again = server.handle(method="GET", url=URL, headers=headers, now=later)
        assert again.status == 401, later
        assert again.body["error"] == "invalid_dpop_proof"
    # Once the proof is outside the window it is refused for its iat, and forgotten.
    late = server.handle(method="GET", url=URL, headers=headers, now=NOW + 121)
    assert late.status == 401


def test_replay_memory_purges_expired_entries() -> None:
    cache = vxp.stores.MemoryReplayCache()
    assert cache.check_and_store("a", 10, 0)
    assert not cache.check_and_store("a", 10, 10)
    assert cache.check_and_store("b", 30, 11)  # purges "a" (until 10 < now 11)
    assert cache.check_and_store("a", 40, 11)
    assert not cache.check_and_store("b", 30, 30)


@pytest.mark.parametrize("headers", [None, [("Authorization", "DPoP tok")], "DPoP tok", 5])
def test_headers_of_any_shape_get_401_not_an_exception(headers: Any) -> None:
    answer = _endpoint().handle(method="GET", url=URL, headers=headers, now=NOW)
    assert answer.status == 401


@pytest.mark.parametrize("now", ["1800000000", None, 1.5, True])
def test_bad_server_clock_is_a_vxp_error(now: Any) -> None:
    with pytest.raises(vxp.VxpError) as info:
        _endpoint().handle(method="GET", url=URL, headers=_dpop(NOW), now=now)
    assert info.value.code == "now_invalid"


def test_not_found_answers_are_independent_objects() -> None:
    server = _endpoint()
    url_x, url_y = BASE + "/v1/requests/x/proof", BASE + "/v1/requests/y/proof"
    first = server.handle(method="GET", url=url_x, headers=_dpop(NOW, url=url_x), now=NOW)
    first.headers["X-Leak"] = "1"
    second = server.handle(method="GET", url=url_y, headers=_dpop(NOW, "j2", url_y), now=NOW)
    assert (second.status, second.headers, second.body) == (404, {}, {"error": "request_not_found"})


# ------------------------------------------------------------------ trust material


def test_live_metadata_cutting_a_key_short_wins_even_when_live_jwks_drops_it() -> None:
    """Live metadata retires the company key before it signed; the live JWKS no longer
    carries it. Saved material used to re-validate it (live only decided when its JWKS
    held the key)."""
    op = demo_operation("succeeded")
    company_kid = vxp.key_thumbprint(demo_key("company"))
    live = copy.deepcopy(op.live)
    for record in live["metadata"]["vxp_proof"]["keys"]:
        if record["kid"] == company_kid:
            record["not_after"] = "2026-10-01T00:00:00.000Z"
    live["jwks"] = {"keys": [k for k in live["jwks"]["keys"] if k["kid"] != company_kid]}
    assert _failure(op.package, op.metadata, op.jwks, live=live, now=op.now) == (
        "key_untrusted",
        "key_not_valid_at_time",
    )


@pytest.mark.parametrize("who", ["log", "operator", "company"])
def test_issuer_keys_never_count_as_witnesses(who: str) -> None:
    """The log key (or a signing key) listed as a witness made logged: true self-asserted."""
    op = demo_operation("succeeded")
    metadata = copy.deepcopy(op.metadata)
    metadata["vxp_proof"]["log"]["witnesses"] = [vxp.key_thumbprint(demo_key(who))]
    package = copy.deepcopy(op.package)
    signed = SignedCheckpoint.from_json(package["log"]["checkpoint"])
    cosigned = cosign_checkpoint(signed, demo_key(who), time=int(op.now.timestamp()))
    package["log"]["checkpoint"] = cosigned.to_json()
    assert _failure(package, metadata, op.jwks, now=op.now) == (
        "metadata_invalid",
        "witness_not_independent",
    )
    with pytest.raises(vxp.VxpError):
        vxp.build_metadata(
            COMPANY,
            jwks_uri=COMPANY + "/jwks",
            keys=[],
            custody="operator_hosted",
            log_origin=LOG_ORIGIN,
            log_kid=vxp.key_thumbprint(demo_key("log")),
            witnesses=[vxp.key_thumbprint(demo_key("log"))],
        )


@pytest.mark.parametrize(
    "change",
    [{"alg": "ES384"}, {"alg": "RS256"}, {"use": "enc"}, {"key_ops": ["encrypt"]}],
)
def test_jwks_key_published_for_another_alg_or_use_is_refused(change: dict[str, Any]) -> None:
    op = demo_operation("succeeded")
    jwks = copy.deepcopy(op.jwks)
    for key in jwks["keys"]:
        key.update(change)
    assert _failure(op.package, op.metadata, jwks, now=op.now) == ("metadata_invalid", "jwks_use")


def test_jwks_key_on_another_curve_is_metadata_invalid() -> None:
    op = demo_operation("succeeded")
    other = ECKey.generate_key("P-384")
    jwk = {**other.as_dict(private=False), "kid": other.thumbprint()}
    jwks = {"keys": [*op.jwks["keys"], jwk]}
    assert _failure(op.package, op.metadata, jwks, now=op.now) == ("metadata_invalid", "jwks")


# ------------------------------------------------------------------ chain rules


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


# ------------------------------------------------------------------ log


def test_statements_must_sit_in_the_log_in_chain_order() -> None:
    """Re-log the draft's statements with two swapped: every proof verifies, order does not."""
    op = demo_operation("succeeded")
    package = copy.deepcopy(op.package)
    log = vxp.MerkleLog(LOG_ORIGIN)
    order = [0, 1, 3, 2, 4, 5]
    index = {}
    for i in order:
        jws = package["statements"][i].split("~", 1)[0]
        logged_at = package["log"]["entries"][i]["logged_at"]
        index[i] = log.append(leaf_data(jwt_digest(jws), logged_at))
    signed = sign_checkpoint(Checkpoint(LOG_ORIGIN, log.size, log.root()), demo_key("log"))
    package["log"]["checkpoint"] = signed.to_json()
    for i, entry in enumerate(package["log"]["entries"]):
        entry["index"] = index[i]
        entry["proof"] = [encode_hash(h) for h in log.inclusion_proof(index[i], log.size)]
    assert _failure(package, op.metadata, op.jwks, now=op.now) == ("log_invalid", "leaf_order")


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


@pytest.mark.parametrize("version", [1.0, True, "1", 2])
def test_package_version_is_the_integer_1(version: Any) -> None:
    op = demo_operation("succeeded")
    package = {**op.package, "v": version}
    assert _failure(package, op.metadata, op.jwks, now=op.now) == ("package_malformed", "version")


def test_jti_memory_survives_a_restart_with_the_sqlite_replay_cache(tmp_path: Any) -> None:
    """The in-memory cache forgets on restart (a replay inside the window then passes);
    SqliteReplayCache keeps the memory across processes and restarts."""
    path = str(tmp_path / "jti.sqlite")
    tokens = {"tok": vxp.fetch.AccessToken(AGENT, vxp.key_thumbprint(demo_key("dpop")), NOW + 3600)}
    headers = _dpop(NOW)

    def server(replay: Any) -> vxp.fetch.ProofEndpoint:
        packages = {"req_1": (AGENT, {"v": 1})}
        return vxp.fetch.ProofEndpoint(
            base_url=BASE, tokens=tokens, packages=packages, replay=replay
        )

    first = vxp.stores.SqliteReplayCache(path)
    assert server(first).handle(method="GET", url=URL, headers=headers, now=NOW).status == 200
    first.close()
    restarted = vxp.stores.SqliteReplayCache(path)
    again = server(restarted).handle(method="GET", url=URL, headers=headers, now=NOW + 30)
    assert again.status == 401
    assert restarted.check_and_store("k", NOW + 10, NOW)
    assert not restarted.check_and_store("k", NOW + 10, NOW + 10)
    assert restarted.check_and_store("k", NOW + 30, NOW + 11)  # expired entries are purged
    restarted.close()
    with pytest.raises(vxp.VxpError):
        vxp.stores.SqliteReplayCache(str(tmp_path / "missing-dir" / "x.sqlite"))


# ------------------------------------------------------------------ log attacks (coverage)


def _resigned(op: Any, *, origin: str = LOG_ORIGIN, size_delta: int = 0) -> Any:
    package = copy.deepcopy(op.package)
    cp = package["log"]["checkpoint"]["checkpoint"]
    root = vxp.codec.decode_hash(cp["root"], "root")
    signed = sign_checkpoint(
        Checkpoint(origin, cp["tree_size"] + size_delta, root), demo_key("log")
    )
    package["log"]["checkpoint"] = signed.to_json()
    return package


def test_log_attacks_fail_closed() -> None:
    op = demo_operation("succeeded")
    # A checkpoint of another log signed by the same log key.
    other = _resigned(op, origin=LOG_ORIGIN + "-b")
    assert _failure(other, op.metadata, op.jwks, now=op.now) == (
        "log_invalid",
        "checkpoint_origin_mismatch",
    )
    # The packaged tree size does not match the proofs (same root, size + 1 and - 1).
    for delta in (1, -1):
        bad = _resigned(op, size_delta=delta)
        assert _failure(bad, op.metadata, op.jwks, now=op.now) == ("log_invalid", "inclusion")
    # An inclusion proof (and index) of another statement.
    swapped = copy.deepcopy(op.package)
    entries = swapped["log"]["entries"]
    for member in ("index", "proof"):
        entries[3][member], entries[4][member] = entries[4][member], entries[3][member]
    assert _failure(swapped, op.metadata, op.jwks, now=op.now) == ("log_invalid", "inclusion")
    # A live checkpoint of another origin.
    live = copy.deepcopy(op.live)
    live["checkpoint"] = _resigned(op, origin="elsewhere")["log"]["checkpoint"]
    assert _failure(op.package, op.metadata, op.jwks, live=live, now=op.now) == (
        "log_invalid",
        "checkpoint_origin_mismatch",
    )


def test_witness_cosignatures_unknown_ignored_duplicates_refused() -> None:
    op = demo_operation("witnessed")
    signed = SignedCheckpoint.from_json(op.package["log"]["checkpoint"])
    stranger = cosign_checkpoint(signed, demo_key("stranger"), time=int(op.now.timestamp()))
    package = {**op.package, "log": {**op.package["log"], "checkpoint": stranger.to_json()}}
    verdict = vxp.verify(package, op.metadata, op.jwks, now=op.now)
    assert verdict.valid
    assert verdict.witnesses == 1  # the stranger is not counted
    doubled = copy.deepcopy(op.package)
    cosigs = doubled["log"]["checkpoint"]["cosignatures"]
    cosigs.append(copy.deepcopy(cosigs[0]))
    metadata = copy.deepcopy(op.metadata)
    metadata["vxp_proof"]["log"]["quorum"] = 2
    code = _failure(doubled, metadata, op.jwks, now=op.now)
    assert code[0] == "log_invalid"
    # quorum 2 with one real witness: valid, but not logged.
    single = vxp.verify(op.package, metadata, op.jwks, now=op.now)
    assert single.valid
    assert single.logged is False
    assert "witnessed_log" not in single.derived_assurance


def test_jwks_key_without_kid_is_refused() -> None:
    op = demo_operation("succeeded")
    jwks = copy.deepcopy(op.jwks)
    del jwks["keys"][0]["kid"]
    assert _failure(op.package, op.metadata, jwks, now=op.now) == ("metadata_invalid", "jwks_kid")


# ------------------------------------------------------------------ htu normalisation


def _raw_proof(htu: str, jti: str) -> dict[str, str]:
    from vxp._fetch import _ath
    from vxp._jws import sign_compact
    from vxp._keys import resolve_key

    key = resolve_key(demo_key("dpop"))
    header = {"alg": "ES256", "jwk": key.public_jwk, "typ": "dpop+jwt"}
    payload = {"htm": "GET", "htu": htu, "iat": NOW, "jti": jti, "ath": _ath("tok")}
    return {
        "Authorization": "DPoP tok",
        "DPoP": sign_compact(header, payload, key, deterministic=True),
    }


@pytest.mark.parametrize(
    ("htu", "status"),
    [
        ("https://STORE.example/v1/requests/req_1/proof", 200),
        ("HTTPS://store.example:443/v1/requests/req_1/proof", 200),
        ("https://store.example/v1/requests/req_1/proof?x=1#f", 200),
        ("https://store.example:8443/v1/requests/req_1/proof", 401),
        ("http://store.example/v1/requests/req_1/proof", 401),
        ("https://user@store.example/v1/requests/req_1/proof", 401),
        ("https://store.example/v1/requests/req_1/proof/", 401),
        ("https://store.example/v1/requests/REQ_1/proof", 401),
        ("https://store.example/v1/requests/req%5F1/proof", 401),
        ("https://store.example:99999/v1/requests/req_1/proof", 401),
        ("//store.example/v1/requests/req_1/proof", 401),
    ],
)
def test_htu_is_compared_after_scheme_and_host_normalisation_only(htu: str, status: int) -> None:
    answer = _endpoint().handle(method="GET", url=URL, headers=_raw_proof(htu, "j"), now=NOW)
    assert answer.status == status


def test_request_url_with_default_port_or_host_case_reaches_the_route() -> None:
    for i, url in enumerate(
        ("https://STORE.EXAMPLE/v1/requests/req_1/proof", BASE + ":443/v1/requests/req_1/proof")
    ):
        answer = _endpoint().handle(method="GET", url=url, headers=_dpop(NOW, f"j{i}"), now=NOW)
        assert answer.status == 200
    for url in (
        "https://evil@store.example/v1/requests/req_1/proof",
        "https://store.example:8443/v1/requests/req_1/proof",
    ):
        answer = _endpoint().handle(method="GET", url=url, headers=_dpop(NOW), now=NOW)
        assert answer.status == 404


def test_dpop_helper_never_signs_userinfo_into_htu() -> None:
    with pytest.raises(vxp.VxpError):
        vxp.fetch.make_dpop_proof(
            demo_key("dpop"), method="GET", url="https://u:pw@store.example/x", iat=NOW, jti="j"
        )
    for bad in ("http://", "https://store.example/?a=1", "https://store.example/p", "ftp://x"):
        with pytest.raises(vxp.VxpError):
            vxp.fetch.ProofEndpoint(base_url=bad, tokens={}, packages={})


def test_live_metadata_never_revalidates_a_key_saved_metadata_retired() -> None:
    """Saved metadata says the company key retired before it signed; live metadata lists
    it as active: live used to decide alone and re-validated it."""
    op = demo_operation("succeeded")
    company_kid = vxp.key_thumbprint(demo_key("company"))
    saved = copy.deepcopy(op.metadata)
    for record in saved["vxp_proof"]["keys"]:
        if record["kid"] == company_kid:
            record["not_after"] = "2026-10-01T00:00:00.000Z"
    assert _failure(op.package, saved, op.jwks, live=op.live, now=op.now) == (
        "key_untrusted",
        "key_not_valid_at_time",
    )


def test_key_used_before_its_validity_starts_is_refused() -> None:
    op = demo_operation("succeeded")
    company_kid = vxp.key_thumbprint(demo_key("company"))
    late = copy.deepcopy(op.metadata)
    for record in late["vxp_proof"]["keys"]:
        if record["kid"] == company_kid:
            record["not_before"] = "2026-10-22T22:30:29.357Z"  # 1 ms after the terms
    assert _failure(op.package, late, op.jwks, now=op.now) == (
        "key_untrusted",
        "key_not_valid_at_time",
    )
    at_start = copy.deepcopy(op.metadata)
    for record in at_start["vxp_proof"]["keys"]:
        if record["kid"] == company_kid:
            record["not_before"] = "2026-10-22T22:30:29.356Z"  # exactly the terms' time
    assert vxp.verify(op.package, at_start, op.jwks, now=op.now).valid


# ------------------------------------------------------------------ robustness (fuzz)


_FUZZ_OP = demo_operation("witnessed")
_WORDS = st.sampled_from(
    ["operator", "company", "EC", "OKP", "P-256", "Ed25519", "ES256", "sig", "https://x", "A"]
)
_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-2, 2**64) | st.text(max_size=6) | _WORDS,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(_WORDS | st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=8,
)


def _all_paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(doc, dict):
        for key, value in doc.items():
            out += _all_paths(value, (*prefix, key))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            out += _all_paths(value, (*prefix, i))
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(target=st.sampled_from(["metadata", "jwks"]), data=st.data(), value=_VALUES)
def test_trust_material_of_any_shape_gives_a_failure_code(
    target: str, data: Any, value: Any
) -> None:
    docs = {"metadata": _FUZZ_OP.metadata, "jwks": _FUZZ_OP.jwks}
    doc = copy.deepcopy(docs[target])
    path = data.draw(st.sampled_from(_all_paths(doc)))
    if path:
        node = doc
        for step in path[:-1]:
            node = node[step]
        node[path[-1]] = value
    else:
        doc = value
    docs[target] = doc
    for live in (None, {**_FUZZ_OP.live, target: doc}):
        verdict = vxp.verify(
            _FUZZ_OP.package, docs["metadata"], docs["jwks"], live=live, now=_FUZZ_OP.now
        )
        if not verdict.valid:
            assert verdict.failure is not None
            assert verdict.derived_assurance == ()


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    method=_VALUES,
    url=st.sampled_from([URL, "https://[::1/x", "https://a:b/x"]) | _VALUES,
    headers=_VALUES,
)
def test_fetch_requests_of_any_shape_get_an_http_answer(
    method: Any, url: Any, headers: Any
) -> None:
    answer = _endpoint().handle(method=method, url=url, headers=headers, now=NOW)
    assert answer.status in (401, 404, 405)
