"""Wrong-typed arguments to every public call of :mod:`vxp` (DESIGN.md "Errors", issue 25).

Each public function of :mod:`vxp` and of its public submodules (and the methods of the
objects a caller holds: a log, a builder, a verifier, a witness, an endpoint, a replay
cache) is called with a valid baseline, then with one argument at a time replaced by a
value of the wrong type (``None``, an int, a str, bytes, a dict, a list, NaN). What comes
out is the call's value or a :class:`vxp.VxpError`, never a raw ``TypeError``,
``KeyError``, ``AttributeError`` or ``OverflowError``. Where the case says which arguments
carry protocol data, a refusal of one of them is a :class:`vxp.VxpProtocolError` and a
refusal of any other argument a :class:`vxp.VxpUsageError` (docs/spec/vxp.md §5).
"""

from __future__ import annotations

import contextlib
import copy
import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from joserfc.jwk import ECKey, OKPKey

import vxp
from vxp import checkpoints, codec, fetch, merkle, sdjwt, statements, stores, trust

WRONG: list[Any] = [None, 7, "x", b"x", {}, [], float("nan")]
WRONG_IDS = ["None", "int", "str", "bytes", "dict", "list", "nan"]

T0 = datetime(2026, 10, 22, 22, 30, 29, tzinfo=UTC)
ORIGIN = "log.example/vxp"
COMPANY = "https://co.example"


@dataclass
class Case:
    """One public call: ``make()`` returns the callable and its valid keyword arguments."""

    make: Callable[[], tuple[Callable[..., Any], dict[str, Any]]]
    protocol: frozenset[str] = field(default_factory=frozenset)
    """Arguments that carry protocol data (refused with VxpProtocolError)."""
    kinds: bool = True
    """Whether the kind of each refusal is checked too (else only: a VxpError)."""
    either: frozenset[str] = field(default_factory=frozenset)
    """Arguments for which a wrong value of another accepted type (an empty list of keys)
    is refused by a later check of the data, so either kind may name the fault."""


def _key(seed: str) -> ECKey:
    return vxp.demo_key(seed)


def _log(entries: int = 3) -> vxp.MerkleLog:
    log = vxp.MerkleLog(ORIGIN)
    log.extend([f"e{i}".encode() for i in range(entries)])
    return log


def _builder_args() -> dict[str, Any]:
    return {
        "company": COMPANY,
        "op_id": "op-1",
        "operator_key": _key("operator"),
        "company_key": _key("company"),
        "log": vxp.MerkleLog(ORIGIN),
    }


def _builder(until: str) -> vxp.OperationBuilder:
    """A builder with every step before ``until`` done."""
    b = vxp.OperationBuilder(**_builder_args())
    steps: list[tuple[str, Callable[[], object]]] = [
        ("request", lambda: b.request(channel="c", client_id="a", request={"r": 1}, now=T0)),
        (
            "terms",
            lambda: b.terms(
                capability="cap",
                terms={"x": 1},
                expires_at=T0 + timedelta(hours=1),
                read_back_terms=["x"],
                now=T0,
            ),
        ),
        ("approve", lambda: b.approve(now=T0)),
        ("execute", lambda: b.execute(release={"n": 1}, now=T0)),
        ("read_back", lambda: b.read_back(observed={"x": 1}, now=T0)),
        ("outcome", lambda: b.outcome(state="succeeded", result_summary={}, now=T0)),
    ]
    for name, run in steps:
        if name == until:
            break
        run()
    return b


def _corrigible() -> vxp.OperationBuilder:
    """A builder whose outcome (unknown, nothing read back) a correction may follow."""
    b = _builder("read_back")
    b.outcome(state="unknown", result_summary={}, now=T0)
    return b


def _user_signed() -> tuple[Callable[..., Any], dict[str, Any]]:
    """A builder ready for the approval, and the approval the user's device signed."""
    b = _builder("approve")
    user = OKPKey.generate_key("Ed25519")
    signing_input = statements.approval_signing_input(user, b.approval_payload())
    signature = user.private_key.sign(signing_input)
    return b.approve_with_signature, {"user_key": user, "signature": signature, "now": T0}


def _token(holder: ECKey | None = None) -> vxp.SdJwt:
    claims = {"iss": COMPANY, "n": vxp.Sd(1)}
    return vxp.issue_sd_jwt(claims, _key("company"), typ="t+sd-jwt", holder_key=holder)


def _signed() -> checkpoints.SignedCheckpoint:
    log = _log()
    return log.checkpoint(_key("log"))


def _endpoint() -> fetch.ProofEndpoint:
    agent = _key("agent")
    token = fetch.AccessToken("agent", vxp.key_thumbprint(agent), 2_000_000_000)
    return fetch.ProofEndpoint(
        base_url="https://co.example",
        tokens={"at-1": token},
        packages={"op-1": ("agent", {"v": 1})},
    )


def _dpop_headers() -> dict[str, Any]:
    proof = fetch.make_dpop_proof(
        _key("agent"),
        method="GET",
        url="https://co.example/v1/requests/op-1/proof",
        iat=int(T0.timestamp()),
        jti="j-1",
        access_token="at-1",
    )
    return {"authorization": "DPoP at-1", "dpop": proof}


@functools.cache
def _demo_once() -> vxp.DemoOperation:
    return vxp.demo_operation("succeeded")


def _demo() -> Any:
    """The demo operation's data, copied (a call under test may not change it)."""
    op = _demo_once()
    return SimpleNamespace(**{**copy.deepcopy(op.inputs()), "now": op.now})


def _records() -> list[vxp.KeyRecord]:
    return [
        vxp.KeyRecord(vxp.key_thumbprint(_key("operator")), "operator", T0, None),
        vxp.KeyRecord(vxp.key_thumbprint(_key("company")), "company", T0, None),
    ]


def _approval() -> dict[str, Any]:
    digest = statements.digest_of({"a": 1})
    return statements.approval_payload(digest, 1, digest, digest)


P = frozenset
CASES: dict[str, Case] = {
    # ---- vxp
    "IssuerKeys": Case(lambda: (vxp.IssuerKeys, {"keys": [_key("company")]})),
    "IssuerKeys.pick": Case(
        lambda: (
            vxp.IssuerKeys([_key("company")]).pick,
            {"kid": vxp.key_thumbprint(_key("company")), "alg": "ES256"},
        ),
        protocol=P({"kid", "alg"}),
    ),
    "KeyBinding": Case(lambda: (vxp.KeyBinding, {"aud": "a", "nonce": "n", "max_age": 300})),
    "MerkleLog": Case(lambda: (vxp.MerkleLog, {"origin": ORIGIN, "store": None})),
    "MerkleLog.append": Case(lambda: (_log().append, {"entry": b"e"})),
    "MerkleLog.extend": Case(lambda: (_log().extend, {"entries": [b"e"]})),
    "MerkleLog.entry": Case(lambda: (_log().entry, {"index": 1})),
    "MerkleLog.leaf_hash": Case(lambda: (_log().leaf_hash, {"index": 1})),
    "MerkleLog.root": Case(lambda: (_log().root, {"tree_size": 2})),
    "MerkleLog.inclusion_proof": Case(
        lambda: (_log().inclusion_proof, {"index": 1, "tree_size": 2})
    ),
    "MerkleLog.consistency_proof": Case(
        lambda: (_log().consistency_proof, {"size1": 1, "size2": 2})
    ),
    "MerkleLog.checkpoint": Case(
        lambda: (_log().checkpoint, {"log_key": _key("log"), "tree_size": 2})
    ),
    "OperationBuilder": Case(lambda: (vxp.OperationBuilder, _builder_args())),
    "OperationBuilder.use_key": Case(
        lambda: (_builder("request").use_key, {"role": "company", "key": _key("company-2")})
    ),
    "OperationBuilder.request": Case(
        lambda: (
            _builder("request").request,
            {"channel": "c", "client_id": "a", "request": {"r": 1}, "now": T0},
        )
    ),
    "OperationBuilder.terms": Case(
        lambda: (
            _builder("terms").terms,
            {
                "capability": "cap",
                "terms": {"x": 1},
                "expires_at": T0 + timedelta(hours=1),
                "read_back_terms": ["x"],
                "user_approval_required": True,
                "company_review_required": False,
                "requires": [],
                "now": T0,
            },
        )
    ),
    "OperationBuilder.counter": Case(
        lambda: (_builder("approve").counter, {"proposal": {"p": 1}, "now": T0})
    ),
    "OperationBuilder.approve": Case(lambda: (_builder("approve").approve, {"now": T0})),
    "OperationBuilder.approve_signed": Case(
        lambda: (_builder("approve").approve_signed, {"user_key": _key("user"), "now": T0})
    ),
    "OperationBuilder.approve_with_signature": Case(
        lambda: (*_user_signed(),),
        protocol=P({"signature"}),
    ),
    "OperationBuilder.review": Case(
        lambda: (
            _builder("approve").review,
            {"decision": "approved", "reviewer": {"r": 1}, "now": T0},
        )
    ),
    "OperationBuilder.execute": Case(
        lambda: (_builder("execute").execute, {"release": {"n": 1}, "now": T0})
    ),
    "OperationBuilder.read_back": Case(
        lambda: (
            _builder("read_back").read_back,
            {"observed": {"x": 1}, "personal": {"p": "q"}, "now": T0},
        )
    ),
    "OperationBuilder.outcome": Case(
        lambda: (
            _builder("outcome").outcome,
            {"state": "succeeded", "result_summary": {}, "now": T0},
        )
    ),
    "OperationBuilder.correct": Case(
        lambda: (_corrigible().correct, {"state": "failed", "fact": {}, "now": T0})
    ),
    "OperationBuilder.revoke": Case(lambda: (_builder("").revoke, {"reason": {}, "now": T0})),
    "OperationBuilder.unsafe_append": Case(
        lambda: (
            _builder("").unsafe_append,
            {
                "kind": "revocation",
                "body": {"x": 1},
                "now": T0,
                "key": None,
                "signer": None,
                "seq": None,
                "prev": True,
                "personal": None,
            },
        )
    ),
    "OperationBuilder.package": Case(
        lambda: (
            _builder("").package,
            {"log_key": _key("log"), "witnesses": [], "require_outcome": True},
        )
    ),
    "Verifier": Case(
        lambda: (vxp.Verifier, {"metadata": _demo().metadata, "jwks": _demo().jwks}),
        protocol=P({"metadata", "jwks", "live_metadata", "live_jwks"}),
    ),
    "Verifier.verify": Case(
        lambda: (
            vxp.Verifier(_demo().metadata, _demo().jwks).verify,
            {"package": _demo().package, "now": _demo().now, "leeway": 0, "max_statements": 64},
        ),
        protocol=P({"package", "live_log", "request_id", "request"}),
    ),
    "verify": Case(
        lambda: (
            vxp.verify,
            {
                "package": _demo().package,
                "metadata": _demo().metadata,
                "jwks": _demo().jwks,
                "live": None,
                "now": _demo().now,
                "request_id": None,
                "request": None,
                "leeway": 0,
                "max_statements": 64,
            },
        ),
        protocol=P({"package", "metadata", "jwks", "live", "request_id", "request"}),
    ),
    "build_jwks": Case(lambda: (vxp.build_jwks, {"keys": [_key("company")]})),
    "build_metadata": Case(
        lambda: (
            vxp.build_metadata,
            {
                "issuer": COMPANY,
                "jwks_uri": COMPANY + "/jwks.json",
                "keys": _records(),
                "custody": "operator_hosted",
                "log_origin": ORIGIN,
                "log_kid": vxp.key_thumbprint(_key("log")),
                "witnesses": [],
                "quorum": 1,
            },
        )
    ),
    "demo_key": Case(lambda: (vxp.demo_key, {"seed": "s"})),
    "demo_operation": Case(
        lambda: (vxp.demo_operation, {"variant": "failed", "custody": "operator_hosted"})
    ),
    "issue_sd_jwt": Case(
        lambda: (
            vxp.issue_sd_jwt,
            {
                "claims": {"iss": COMPANY, "n": vxp.Sd(1)},
                "issuer_key": _key("company"),
                "typ": "t+sd-jwt",
                "decoys": 0,
                "holder_key": None,
                "deterministic": True,
            },
        ),
        kinds=False,  # the claims' codes (claims_invalid, ...) are pinned by vectors
    ),
    "present_sd_jwt": Case(
        lambda: (
            vxp.present_sd_jwt,
            {
                "sd_jwt": _token(holder=_key("holder")),
                "disclose": [["n"]],
                "holder_key": _key("holder"),
                "aud": "https://verifier.example",
                "nonce": "n-1",
                "iat": 0,
                "deterministic": True,
            },
        ),
        protocol=P({"sd_jwt"}),
    ),
    "verify_sd_jwt": Case(
        lambda: (
            vxp.verify_sd_jwt,
            {
                "token": _token().serialize(),
                "issuer_keys": _key("company"),
                "typ": "t+sd-jwt",
                "now": 0,
                "algorithms": ["ES256"],
                "key_binding": None,
                "leeway": 0,
                "require_exp": False,
            },
        ),
        protocol=P({"token"}),
        either=P({"issuer_keys"}),  # [] is an empty key set: the token's key is unknown
    ),
    "key_thumbprint": Case(lambda: (vxp.key_thumbprint, {"key": _key("company")})),
    "load_schema": Case(lambda: (vxp.load_schema, {"name": vxp.schema_names()[0]})),
    "open_log_store": Case(lambda: (vxp.open_log_store, {"url": ":memory:", "origin": ORIGIN})),
    # ---- vxp.merkle: every argument is RFC 9162 tree data (docs/spec/vxp.md §5)
    "merkle.leaf_hash": Case(lambda: (merkle.leaf_hash, {"data": b"a"}), protocol=P({"data"})),
    "merkle.node_hash": Case(
        lambda: (merkle.node_hash, {"left": bytes(32), "right": bytes(32)}),
        protocol=P({"left", "right"}),
    ),
    "merkle.tree_hash": Case(
        lambda: (merkle.tree_hash, {"leaf_hashes": [bytes(32)] * 3}),
        protocol=P({"leaf_hashes"}),
    ),
    "merkle.inclusion_proof": Case(
        lambda: (merkle.inclusion_proof, {"leaf_hashes": [bytes(32)] * 3, "index": 1}),
        protocol=P({"leaf_hashes", "index", "tree_size"}),
    ),
    "merkle.consistency_proof": Case(
        lambda: (merkle.consistency_proof, {"leaf_hashes": [bytes(32)] * 3, "size1": 1}),
        protocol=P({"leaf_hashes", "size1", "size2"}),
    ),
    "merkle.root_from_proof": Case(
        lambda: (
            merkle.root_from_proof,
            {"leaf": bytes(32), "index": 0, "tree_size": 2, "proof": [bytes(32)]},
        ),
        protocol=P({"leaf", "index", "tree_size", "proof"}),
    ),
    "merkle.verify_inclusion": Case(
        lambda: (
            merkle.verify_inclusion,
            {
                "leaf": bytes(32),
                "index": 0,
                "tree_size": 2,
                "proof": [bytes(32)],
                "root": merkle.node_hash(bytes(32), bytes(32)),
            },
        ),
        protocol=P({"leaf", "index", "tree_size", "proof", "root"}),
    ),
    "merkle.verify_consistency": Case(
        lambda: (
            merkle.verify_consistency,
            {
                "size1": 1,
                "size2": 2,
                "root1": bytes(32),
                "root2": merkle.node_hash(bytes(32), bytes(32)),
                "proof": [bytes(32)],
            },
        ),
        protocol=P({"size1", "size2", "root1", "root2", "proof"}),
    ),
    # ---- vxp.checkpoints
    "checkpoints.Checkpoint.from_json": Case(
        lambda: (checkpoints.Checkpoint.from_json, {"value": _signed().checkpoint.to_json()}),
        protocol=P({"value"}),
    ),
    "checkpoints.Cosignature.from_json": Case(
        lambda: (
            checkpoints.Cosignature.from_json,
            {
                "value": checkpoints.cosign_checkpoint(_signed(), _key("w"), time=1)
                .cosignatures[0]
                .to_json()
            },
        ),
        protocol=P({"value"}),
    ),
    "checkpoints.SignedCheckpoint.from_json": Case(
        lambda: (checkpoints.SignedCheckpoint.from_json, {"value": _signed().to_json()}),
        protocol=P({"value"}),
    ),
    "checkpoints.sign_checkpoint": Case(
        lambda: (
            checkpoints.sign_checkpoint,
            {"checkpoint": _signed().checkpoint, "log_key": _key("log")},
        )
    ),
    "checkpoints.verify_checkpoint": Case(
        lambda: (
            checkpoints.verify_checkpoint,
            {"signed": _signed().to_json(), "log_key": _key("log"), "origin": ORIGIN},
        ),
        protocol=P({"signed"}),
    ),
    "checkpoints.cosign_checkpoint": Case(
        lambda: (
            checkpoints.cosign_checkpoint,
            {"signed": _signed(), "witness_key": _key("w"), "time": 1},
        ),
        protocol=P({"signed"}),  # the log's checkpoint, as the witness received it
    ),
    "checkpoints.verify_cosignatures": Case(
        lambda: (
            checkpoints.verify_cosignatures,
            {
                "signed": checkpoints.cosign_checkpoint(_signed(), _key("w"), time=1).to_json(),
                "witness_keys": [_key("w")],
                "quorum": 1,
            },
        ),
        protocol=P({"signed"}),
    ),
    "checkpoints.Witness": Case(
        lambda: (checkpoints.Witness, {"key": _key("w"), "logs": {ORIGIN: _key("log")}})
    ),
    "checkpoints.Witness.cosign": Case(
        lambda: (
            checkpoints.Witness(_key("w"), {ORIGIN: _key("log")}).cosign,
            {"signed": _signed().to_json(), "proof": [], "time": 1},
        ),
        protocol=P({"signed", "proof"}),
    ),
    # ---- vxp.sdjwt
    "sdjwt.Disclosure.create": Case(
        lambda: (sdjwt.Disclosure.create, {"salt": "c2FsdA", "name": "n", "value": 1}),
        protocol=P({"salt", "name", "value"}),  # a disclosure's members are claims data
    ),
    "sdjwt.Disclosure.parse": Case(
        lambda: (
            sdjwt.Disclosure.parse,
            {"encoded": sdjwt.Disclosure.create("c2FsdA", "n", 1).encoded},
        ),
        protocol=P({"encoded"}),
    ),
    "sdjwt.mark_disclosable": Case(
        lambda: (sdjwt.mark_disclosable, {"claims": {"a": 1}, "paths": [["a"]]}),
        protocol=P({"claims"}),
    ),
    "SdJwt.parse": Case(
        lambda: (vxp.SdJwt.parse, {"text": _token().serialize()}), protocol=P({"text"})
    ),
    # ---- vxp.statements
    "statements.approval_payload": Case(
        lambda: (
            statements.approval_payload,
            {
                "request_digest": statements.digest_of(1),
                "revision": 1,
                "terms_digest": statements.digest_of(2),
                "terms_statement": statements.digest_of(3),
            },
        ),
        protocol=P({"request_digest", "revision", "terms_digest", "terms_statement"}),
    ),
    "statements.approval_signing_input": Case(
        lambda: (
            statements.approval_signing_input,
            {"user_key": _key("user"), "payload": _approval()},
        ),
        protocol=P({"payload"}),
    ),
    "statements.derive_assurance": Case(
        lambda: (
            statements.derive_assurance,
            {"ev": statements.Evidence(True, True, True, True, False, None, False, False)},
        )
    ),
    "statements.jwt_digest": Case(
        lambda: (statements.jwt_digest, {"jws": _demo().package["statements"][0].split("~")[0]}),
        protocol=P({"jws"}),
    ),
    "statements.verify_statement": Case(
        lambda: (
            statements.verify_statement,
            {
                "statement": _demo().package["statements"][0],
                "keys": [_key("operator")],
                "where": "statement 0",
            },
        ),
        protocol=P({"statement"}),
    ),
    "DemoOperation.extend_log": Case(
        lambda: (vxp.demo_operation("failed").extend_log, {"entries": 2})
    ),
    "statements.digest_of": Case(
        lambda: (statements.digest_of, {"value": {"a": 1}}), protocol=P({"value"})
    ),
    "statements.leaf_data": Case(
        lambda: (
            statements.leaf_data,
            {"statement_digest": statements.digest_of(1), "logged_at": "2026-10-22T22:30:29.000Z"},
        ),
        protocol=P({"statement_digest", "logged_at"}),  # a log entry's members
    ),
    # ---- vxp.trust
    "KeyRecord.covers": Case(lambda: (_records()[0].covers, {"when": T0})),
    "TrustMaterial.records_for": Case(
        lambda: (
            trust.load_trust(_demo().metadata, _demo().jwks).records_for,
            {"kid": vxp.key_thumbprint(_key("operator"))},
        ),
    ),
    "trust.load_trust": Case(
        lambda: (trust.load_trust, {"metadata": _demo().metadata, "jwks": _demo().jwks}),
        protocol=P({"metadata", "jwks"}),
    ),
    "trust.retire_key": Case(
        lambda: (
            trust.retire_key,
            {
                "metadata": _demo().metadata,
                "kid": vxp.key_thumbprint(_key("company")),
                "at": T0 + timedelta(days=1),
            },
        ),
        protocol=P({"metadata"}),
    ),
    "trust.rotate_key": Case(
        lambda: (
            trust.rotate_key,
            {
                "metadata": _demo().metadata,
                "role": "company",
                "new_key": _key("company-2"),
                "at": T0 + timedelta(days=1),
            },
        ),
        protocol=P({"metadata"}),
    ),
    "trust.unpublish_key": Case(
        lambda: (
            trust.unpublish_key,
            {"metadata": _demo().metadata, "kid": vxp.key_thumbprint(_key("company"))},
        ),
        protocol=P({"metadata"}),
    ),
    # ---- vxp.stores
    "stores.open_replay_cache": Case(lambda: (stores.open_replay_cache, {"url": ":memory:"})),
    "stores.MemoryReplayCache.store_once": Case(
        lambda: (
            stores.MemoryReplayCache().store_once,
            {"key": "k", "until": 100, "now": 40},
        )
    ),
    "stores.SqliteReplayCache.store_once": Case(
        lambda: (
            stores.SqliteReplayCache(":memory:").store_once,
            {"key": "k", "until": 100, "now": 40},
        )
    ),
    "stores.SqliteLogStore": Case(
        lambda: (stores.SqliteLogStore, {"path": ":memory:", "origin": ORIGIN})
    ),
    # ---- vxp.fetch
    "fetch.make_dpop_proof": Case(
        lambda: (
            fetch.make_dpop_proof,
            {
                "key": _key("agent"),
                "method": "GET",
                "url": "https://co.example/v1/requests/op-1/proof",
                "iat": 0,
                "jti": "j",
                "access_token": "at-1",
            },
        )
    ),
    "fetch.ProofEndpoint": Case(
        lambda: (
            fetch.ProofEndpoint,
            {
                "base_url": "https://co.example",
                "tokens": {},
                "packages": {},
                "replay": None,
                "window": 60,
            },
        )
    ),
    "fetch.ProofEndpoint.handle": Case(
        lambda: (
            _endpoint().handle,
            {
                "method": "GET",
                "url": "https://co.example/v1/requests/op-1/proof",
                "headers": _dpop_headers(),
                "now": int(T0.timestamp()),
            },
        ),
        protocol=P({"method", "url", "headers"}),
    ),
    # ---- vxp.codec
    "codec.b64url_decode": Case(
        lambda: (codec.b64url_decode, {"text": "_w", "where": "w"}), protocol=P({"text"})
    ),
    "codec.b64url_encode": Case(lambda: (codec.b64url_encode, {"data": b"\xff"})),
    "codec.canonical_json": Case(
        lambda: (codec.canonical_json, {"value": {"a": 1}, "where": "w"}),
        protocol=P({"value"}),
    ),
    "codec.decode_hash": Case(
        lambda: (codec.decode_hash, {"text": statements.digest_of(1), "where": "w"}),
        protocol=P({"text"}),
    ),
    "codec.encode_hash": Case(lambda: (codec.encode_hash, {"digest": bytes(32)})),
}


@pytest.fixture(autouse=True)
def _in_tmp_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A store path that is a string ("x") is a real file: made here, not in the checkout."""
    monkeypatch.chdir(tmp_path)


def _call(name: str, replace: dict[str, Any]) -> object:
    func, kwargs = CASES[name].make()
    try:
        return func(**{**kwargs, **replace})
    except vxp.VxpError as exc:
        return exc


@pytest.mark.parametrize("name", list(CASES))
def test_the_baseline_is_valid(name: str) -> None:
    """Each baseline call succeeds: a wrong argument below is the only thing wrong."""
    result = _call(name, {})
    assert not isinstance(result, vxp.VxpError), result


ARGUMENTS = [(name, arg) for name, case in CASES.items() for arg in case.make()[1]]


@pytest.mark.parametrize("wrong", WRONG, ids=WRONG_IDS)
@pytest.mark.parametrize(("name", "arg"), ARGUMENTS, ids=[f"{n}:{a}" for n, a in ARGUMENTS])
def test_a_wrong_typed_argument_gives_a_vxp_error(name: str, arg: str, wrong: Any) -> None:
    """DESIGN.md "Errors": bad input of any shape raises the package's own error (never a
    TypeError, KeyError, AttributeError or OverflowError); a refused protocol argument is
    a VxpProtocolError, any other refused argument a VxpUsageError."""
    case = CASES[name]
    func, kwargs = case.make()
    try:
        func(**{**kwargs, arg: wrong})
    except vxp.VxpError as exc:
        result = exc
    else:
        return  # accepted: the value is the call's (e.g. a label, or an empty list of keys)
    if case.kinds and type(wrong) is not type(kwargs[arg]) and arg not in case.either:
        # (a value of the baseline's own type is a wrong value, not a wrong type: the
        # check that refuses it, of the data or of the argument, names the fault)
        expected = vxp.VxpProtocolError if arg in case.protocol else vxp.VxpUsageError
        assert isinstance(result, expected), (result.code, result.message)


@pytest.mark.parametrize("wrong", WRONG, ids=WRONG_IDS)
@pytest.mark.parametrize("name", list(CASES))
def test_every_argument_wrong_at_once_gives_a_vxp_error(name: str, wrong: Any) -> None:
    """The same with every argument of the call wrong at once: the first check refuses."""
    func, kwargs = CASES[name].make()
    with contextlib.suppress(vxp.VxpError):  # (any other exception fails the test)
        func(**dict.fromkeys(kwargs, wrong))


class _FailingZone(tzinfo):
    """A tzinfo whose ``utcoffset()`` raises."""

    def utcoffset(self, dt: datetime | None) -> timedelta:
        raise RuntimeError("this zone has no offset")

    def dst(self, dt: datetime | None) -> timedelta:
        return timedelta(0)


class _TextZone(tzinfo):
    """A tzinfo whose ``utcoffset()`` returns a string."""

    def utcoffset(self, dt: datetime | None) -> Any:
        return "+05:00"

    def dst(self, dt: datetime | None) -> timedelta:
        return timedelta(0)


WRONG_TIMES: list[Any] = [
    datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=5))),
    datetime(9999, 12, 31, 23, 59, tzinfo=timezone(timedelta(hours=-5))),
    datetime(2026, 1, 1, tzinfo=_FailingZone()),
    datetime(2026, 1, 1, tzinfo=_TextZone()),
    10**30,
    -(10**30),
]
WRONG_TIME_IDS = [
    "year-1-east",
    "year-9999-west",
    "utcoffset-raises",
    "utcoffset-str",
    "1e30",
    "-1e30",
]
TIME_NAMES = {"now", "at", "time", "iat", "expires_at", "when"}
TIME_ARGUMENTS = [(n, a) for n, a in ARGUMENTS if a in TIME_NAMES]


@pytest.mark.parametrize("when", WRONG_TIMES, ids=WRONG_TIME_IDS)
@pytest.mark.parametrize(
    ("name", "arg"), TIME_ARGUMENTS, ids=[f"{n}:{a}" for n, a in TIME_ARGUMENTS]
)
def test_a_time_without_a_utc_value_is_now_invalid(name: str, arg: str, when: Any) -> None:
    """A time the caller passes (``now``, ``at``, ``time``, ``iat``, ``expires_at``) that has
    no UTC value in range (an extreme aware datetime, a failing ``tzinfo``, a number far
    beyond the epoch range) is the caller's mistake, ``now_invalid`` (docs/spec/vxp.md §5.2)."""
    result = _call(name, {arg: when})
    assert isinstance(result, vxp.VxpUsageError), result
    assert result.code == "now_invalid"


def test_the_sweep_covers_every_kind_of_time_argument() -> None:
    assert {a for _, a in TIME_ARGUMENTS} == TIME_NAMES
    assert len(TIME_ARGUMENTS) > 20


@pytest.mark.parametrize("when", [*WRONG_TIMES[:4], datetime(2026, 1, 1), "2026-01-01"])
def test_a_key_record_time_without_a_utc_value_is_refused(when: Any) -> None:
    """§5.2: the times of a published key (``KeyRecord.not_before``/``not_after``) are the
    caller's, read once when the record is made: ``time_naive`` or ``now_invalid``."""
    kid = vxp.key_thumbprint(_key("operator"))
    for make in (
        lambda: vxp.KeyRecord(kid, "operator", when, None),
        lambda: vxp.KeyRecord(kid, "operator", T0, when),
    ):
        with pytest.raises(vxp.VxpUsageError) as info:
            make()
        assert info.value.code in ("now_invalid", "time_naive")


@pytest.mark.parametrize("year", [1, 9999])
def test_a_time_at_the_ends_of_the_calendar_is_written_with_four_digits(year: int) -> None:
    """RFC 3339 writes the year with four digits: year 1 is ``0001`` (§1, times)."""
    at = datetime(year, 1, 1, tzinfo=UTC) if year == 1 else datetime(year, 12, 31, tzinfo=UTC)
    records = [vxp.KeyRecord(r.kid, r.role, at, None) for r in _records()]
    metadata = _call("build_metadata", {"keys": records})
    assert isinstance(metadata, dict), metadata
    stamp = metadata["vxp_proof"]["keys"][0]["not_before"]
    assert stamp == f"{year:04d}-{at.month:02d}-{at.day:02d}T00:00:00.000Z"
