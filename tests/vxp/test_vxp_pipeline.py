"""The verification pipeline: one SD-JWT walker held to a plain RFC 9901 oracle, the
statement stage's failure order, and the attacks the earlier fast paths were tested with.

* SD-JWT: ``verify_sd_jwt`` against :mod:`tests.vxp.sdjwt_oracle` (an independent plain
  reading of RFC 9901 §7.1) on tokens whose payload and disclosures an attacker chose and
  the issuer key then signed, so every check after the signature runs.
* Statements: selective disclosure in and out of ``body.observed``, signatures checked
  together at the signature stage yet reported in statement order.

Private imports: ``vxp._keys._der`` and ``all_valid`` are the signature fast paths, held
here to their oracles (``cryptography``'s DER encoder, each key's own check), and
``resolve_key`` gives the private key object those fast paths take. ``vxp._jws.sign_compact``
and ``vxp._statements.sign_statement`` forge tokens and statements signed over whatever an
attacker chose, so the checks after the signature run; a user has no reason to call them.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from joserfc.jwk import ECKey, OKPKey

import vxp
from tests.vxp import demo_facts, forge
from vxp import demo_key, demo_operation
from vxp._jws import sign_compact
from vxp._keys import _der, all_valid, resolve_key
from vxp._statements import sign_statement
from vxp.codec import b64url_encode
from vxp.statements import STATEMENT_TYP, verify_statement
from vxp.trust import load_trust

from .sdjwt_oracle import claims_of


def _ex(n: int) -> int:
    """Examples per property; VXP_PROOF_FUZZ=k multiplies them for a long local run."""
    return n * int(os.environ.get("VXP_PROOF_FUZZ", "1"))


KEY = ECKey.import_key(
    {
        "kty": "EC",
        "crv": "P-256",
        "x": "MKBCTNIcKUSDii11ySs3526iDZ8AiTo7Tu6KPAqv7D4",
        "y": "4Etl6SRW2YiLUrN5vfvVHuhp7x8PxltmWWlbbM4IFyM",
        "d": "870MB6gfuTJ4HtUnUvYMyJpr5eUZNP4Bk43bVdj3eAE",
    }
)
TYP = "example+sd-jwt"
NOW = 1_800_000_000
HEADER = {"alg": "ES256", "kid": resolve_key(KEY).kid, "typ": TYP}


def _outcome(fn: Callable[[], object]) -> object:
    try:
        return ("ok", fn())
    except vxp.VxpError as exc:
        return ("error", exc.code, exc.message, exc.reason)


def _outcome(fn: Callable[[], object]) -> object:
    try:
        return ("ok", fn())
    except vxp.VxpError as exc:
        return ("error", exc.code, exc.message, exc.reason)


def _digest(encoded: str) -> str:
    return b64url_encode(hashlib.sha256(encoded.encode()).digest())


def _encode(value: object, *, spaced: bool = False) -> str:
    text = json.dumps(value, separators=(", ", ": ") if spaced else (",", ":"))
    return b64url_encode(text.encode())


NAMES = ["a", "b", "c", "_sd", "...", "_sd_alg", "exp", "nbf"]


def _containers(node: Any) -> list[Any]:
    """Every dict and list inside ``node`` (``node`` included)."""
    out = [node] if isinstance(node, dict | list) else []
    children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else []
    for child in list(children):
        out.extend(_containers(child))
    return out


def _add_digest(spot: Any, digest: object) -> None:
    if isinstance(spot, list):
        spot.append({"...": digest})
    elif isinstance(spot.get("_sd"), list):
        spot["_sd"].append(digest)
    else:
        spot["_sd"] = [digest]


def _attack(data: st.DataObject, payload: dict[str, Any], disclosures: list[str]) -> None:
    """One hostile change to a payload and its disclosure list, in place."""
    spots = _containers(payload)
    spot = data.draw(st.sampled_from(spots))
    encoded_pool = disclosures or [_encode(["s", "a", 1])]
    pick = data.draw(st.sampled_from(encoded_pool))
    kind = data.draw(
        st.sampled_from(
            [
                "duplicate_digest",
                "dots_in_object",
                "bad_decoy",
                "new_disclosure",
                "drop_disclosure",
                "repeat_disclosure",
                "malformed_disclosure",
                "sd_not_list",
                "placeholder_extra",
                "sd_alg",
                "deep",
                "times",
                "shuffle",
            ]
        )
    )
    if kind == "duplicate_digest":
        _add_digest(spot, _digest(pick))
    elif kind == "dots_in_object" and isinstance(spot, dict):
        spot["..."] = data.draw(st.sampled_from([_digest(pick), 1, "x"]))
    elif kind == "bad_decoy":
        bad = data.draw(
            st.sampled_from(
                [
                    _digest(pick)[:42],
                    _digest(pick) + "A",
                    _digest(pick)[:42] + "B",  # non-zero unused bits
                    _digest(pick)[:21] + "," + _digest(pick)[:21],
                    "a" * 43 + "," + "a" * 43,
                    7,
                    None,
                    {"...": _digest(pick)},
                ]
            )
        )
        _add_digest(spot, bad)
    elif kind == "new_disclosure":
        name = data.draw(st.sampled_from([*NAMES, None]))
        value = data.draw(st.sampled_from([1, "v", [1, {"...": "x"}], {"k": 1}, {"_sd": []}]))
        array = ["salt", value] if name is None else ["salt", name, value]
        encoded = _encode(array)
        disclosures.append(encoded)
        _add_digest(spot, _digest(encoded))
    elif kind == "drop_disclosure" and disclosures:
        disclosures.remove(pick)
    elif kind == "repeat_disclosure" and disclosures:
        disclosures.append(pick)
    elif kind == "malformed_disclosure":
        encoded = data.draw(
            st.sampled_from(
                [
                    _encode(["salt"]),
                    _encode(["salt", "a", 1, 2]),
                    _encode([1, "a", 1]),
                    _encode(["salt", 1, 1]),
                    _encode({"salt": "a"}),
                    _encode(["salt", "a", 1], spaced=True),
                    b64url_encode(b' ["salt","a",1] '),
                    b64url_encode(b"\xef\xbb\xbf" + b'["salt","a",1]'),
                    b64url_encode(b'["salt","a",NaN]'),
                    b64url_encode(b'["salt","a",{"k":1,"k":2}]'),
                    "",
                    "a",
                    "ab=c",
                ]
            )
        )
        disclosures.append(encoded)
        if data.draw(st.booleans()):
            _add_digest(spot, _digest(encoded))
    elif kind == "sd_not_list" and isinstance(spot, dict):
        spot["_sd"] = data.draw(st.sampled_from([_digest(pick), {"x": 1}, None, 3]))
    elif kind == "placeholder_extra" and isinstance(spot, list):
        spot.append({"...": _digest(pick), "b": 1})
    elif kind == "sd_alg":
        if data.draw(st.booleans()):
            payload["_sd_alg"] = data.draw(st.sampled_from(["sha-512", "SHA-256", 1]))
        else:
            payload.pop("_sd_alg", None)
            if isinstance(spot, dict):
                spot["_sd_alg"] = "sha-256"
    elif kind == "deep":
        deep: Any = 1
        for _ in range(data.draw(st.integers(min_value=60, max_value=70))):
            deep = [deep] if data.draw(st.booleans()) else {"a": deep}
        encoded = _encode(["salt", "deep", deep])
        disclosures.append(encoded)
        _add_digest(payload, _digest(encoded))
    elif kind == "times":
        payload[data.draw(st.sampled_from(["exp", "nbf", "iat"]))] = data.draw(
            st.sampled_from([NOW - 1, NOW, NOW + 1, "soon", 1.5e9, True])
        )
    elif kind == "shuffle":
        disclosures.reverse()


def _claims(data: st.DataObject) -> tuple[dict[str, Any], list[list[str | int]]]:
    """A small claims object and the paths to make selectively disclosable."""
    leaf = st.one_of(st.integers(-5, 5), st.sampled_from(["x", "", "é", "\u2028"]), st.none())
    tree = st.recursive(
        leaf,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3), st.dictionaries(st.sampled_from("abc"), inner, max_size=3)
        ),
        max_leaves=8,
    )
    claims = data.draw(st.dictionaries(st.sampled_from(["iss", "a", "b", "c"]), tree, max_size=4))
    paths: list[list[str | int]] = []

    def collect(node: Any, path: list[str | int]) -> None:
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, value in items:
            here = [*path, key]
            paths.append(here)
            if isinstance(value, dict | list):
                collect(value, here)

    collect(claims, [])
    chosen = (
        data.draw(st.lists(st.sampled_from(paths), unique_by=tuple, max_size=5)) if paths else []
    )
    return claims, chosen


def _hostile_token(data: st.DataObject) -> str:
    claims, paths = _claims(data)
    seed = iter(range(100_000))
    issued = vxp.issue_sd_jwt(
        vxp.sdjwt.mark_disclosable(claims, paths),
        KEY,
        typ=TYP,
        decoys=data.draw(st.integers(0, 2)),
        rng=lambda n: bytes([next(seed) % 256]) * n,
    )
    disclosures = [d.encoded for d in issued.disclosures]
    payload = json.loads(vxp.codec.b64url_decode(issued.jws.split(".")[1], "payload").decode())
    for _ in range(data.draw(st.integers(0, 3))):
        _attack(data, payload, disclosures)
    if data.draw(st.booleans()):
        disclosures = data.draw(st.permutations(disclosures))
    jws = sign_compact(HEADER, payload, resolve_key(KEY), deterministic=True)
    return "~".join([jws, *disclosures]) + "~"


@settings(
    max_examples=_ex(400),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_sd_jwt_walker_agrees_with_the_plain_oracle_on_hostile_signed_tokens(
    data: st.DataObject,
) -> None:
    token = _hostile_token(data)
    expected = claims_of(token, NOW)
    outcome = _outcome(lambda: vxp.verify_sd_jwt(token, KEY, typ=TYP, now=NOW))
    if outcome[0] == "error":  # type: ignore[index]
        assert expected is None, outcome
        return
    got = outcome[1]  # type: ignore[index]
    assert got.claims == expected
    # the result is the caller's own: changing it never reaches a later verification
    got.header["alg"] = "none"
    assert vxp.verify_sd_jwt(token, KEY, typ=TYP, now=NOW).header["alg"] == "ES256"


def _bound(token: str, data: st.DataObject) -> str:
    """``token`` (with a cnf key) presented with a KB-JWT whose claims may be wrong."""
    body = token
    sd_hash = b64url_encode(hashlib.sha256(body.encode()).digest())
    claims: dict[str, Any] = {"aud": "v", "iat": NOW, "nonce": "n", "sd_hash": sd_hash}
    change = data.draw(st.sampled_from(["none", "aud", "nonce", "iat", "sd_hash", "typ", "drop"]))
    header = {"alg": "ES256", "typ": "kb+jwt"}
    if change == "typ":
        header["typ"] = "jwt"
    elif change == "drop":
        claims.pop(data.draw(st.sampled_from(sorted(claims))))
    elif change != "none":
        claims[change] = data.draw(st.sampled_from(["w", NOW - 10_000, NOW + 5, "x" * 43]))
    return body + sign_compact(header, claims, resolve_key(KEY), deterministic=True)


@settings(
    max_examples=_ex(200),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_key_bound_presentations_agree_with_the_oracle(data: st.DataObject) -> None:
    claims, paths = _claims(data)
    issued = vxp.issue_sd_jwt(
        vxp.sdjwt.mark_disclosable(claims, paths), KEY, typ=TYP, holder_key=KEY
    )
    token = _bound(issued.serialize(), data)
    changed = data.draw(st.booleans())
    if changed:
        j = data.draw(st.integers(0, len(token) - 1))
        token = token[:j] + data.draw(st.sampled_from("Aa0-_.~é")) + token[j + 1 :]
    policy = vxp.KeyBinding("v", "n")
    got = _outcome(lambda: vxp.verify_sd_jwt(token, KEY, typ=TYP, now=NOW, key_binding=policy))
    if got[0] == "ok":  # type: ignore[index]
        body = token[: token.rindex("~") + 1]
        assert claims_of(body, NOW) == got[1].claims  # type: ignore[index]
        kb = got[1].key_binding  # type: ignore[index]
        assert kb["aud"] == "v"
        assert kb["nonce"] == "n"


# ---------------------------------------------------------------- VXP statements

_TRUST = load_trust(demo_operation("succeeded").metadata, demo_operation("succeeded").jwks)
_KEYS = vxp.IssuerKeys(_TRUST.keys.values())


def _statement(data: st.DataObject) -> str:
    """A statement signed with the operator key whose body may misplace disclosures."""
    personal = data.draw(
        st.dictionaries(
            st.sampled_from(["pedido", "nombre", "_sd", "..."]), st.just("v"), max_size=3
        )
    )
    body: dict[str, Any] = {"observed": {"plain": 1}, "method": "system_read_back"}
    token = sign_statement(
        seq=4,
        kind="read_back",
        signer="operator",
        prev="sha-256:" + "A" * 43,
        body=body,
        key=demo_key("operator"),
        rng=lambda n: b"\x07" * n,
        personal={k: v for k, v in personal.items() if k not in ("_sd", "...")},
    )
    jws, *disclosures, _ = token.split("~")
    payload = json.loads(vxp.codec.b64url_decode(jws.split(".")[1], "p").decode())
    change = data.draw(
        st.sampled_from(
            ["none", "none", "sd_in_body", "sd_top", "dots", "escape", "withhold", "sd_value"]
        )
    )
    if change == "sd_in_body":
        payload["body"]["_sd"] = payload["body"]["observed"].get("_sd", ["A" * 43])
    elif change == "sd_top":
        payload["_sd"] = ["A" * 43]
    elif change == "dots":
        payload["body"]["note"] = "..."
    elif change == "escape":
        payload["body"]["note"] = "\u00e9\\"
    elif change == "withhold" and disclosures:
        disclosures = disclosures[1:]
    elif change == "sd_value":
        payload["body"]["note"] = "_sd"
    new_jws = sign_compact(
        {"alg": "ES256", "kid": resolve_key(demo_key("operator")).kid, "typ": STATEMENT_TYP},
        payload,
        resolve_key(demo_key("operator")),
        deterministic=True,
    )
    return "~".join([new_jws, *disclosures]) + "~"


@settings(max_examples=_ex(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_statements_with_disclosures_verify_as_the_oracle_reads_them(data: st.DataObject) -> None:
    text = _statement(data)
    if data.draw(st.booleans()):
        j = data.draw(st.integers(0, len(text) - 1))
        text = text[:j] + data.draw(st.sampled_from("A0_-.~")) + text[j + 1 :]
    got = _outcome(lambda: verify_statement(text, _KEYS, where="s"))
    plain = claims_of(text, 1.0) if text.endswith("~") and text.count("~") >= 1 else None
    if got[0] == "ok":  # type: ignore[index]
        st_ = got[1]  # type: ignore[index]
        assert plain is not None
        assert plain["body"] == st_.body
        payload = json.loads(_payload_text(text))
        observed = payload["body"].get("observed", {})
        outside = {**payload, "body": {**payload["body"], "observed": 0}}
        assert not _names(outside) & {"_sd", "..."}
        assert st_.hidden == len(observed.get("_sd", [])) - len(st_.disclosed)
    else:
        assert got[1] in ("statement_malformed", "signature_invalid", "key_untrusted")  # type: ignore[index]


def _names(node: Any) -> set[str]:
    """Every member name anywhere in a JSON value."""
    if isinstance(node, dict):
        return set(node).union(*(_names(v) for v in node.values()))
    if isinstance(node, list):
        return set().union(*(_names(v) for v in node))
    return set()


# ---------------------------------------------------------------- the signature stage

OPS = {v: demo_operation(v) for v in ("succeeded", "reviewed", "corrected", "witnessed")}


def _forged(which: int) -> Any:
    """The draft operation with statement ``which`` carrying a signature that does not
    verify, built by the builder itself so that prev digests and the log are all intact."""
    from vxp import _keys

    real = _keys.ResolvedKey.sign
    calls = [0]

    def sign(self: Any, message: bytes, *, deterministic: bool = True) -> bytes:
        signature = real(self, message, deterministic=deterministic)
        calls[0] += 1
        if calls[0] == which + 1 and b"." in message:
            return real(self, message + b"!", deterministic=deterministic)  # another message's
        return signature

    _keys.ResolvedKey.sign = sign  # type: ignore[method-assign]
    try:
        return demo_operation("succeeded")
    finally:
        _keys.ResolvedKey.sign = real  # type: ignore[method-assign]


def _unknown_kid(statement: str) -> str:
    """The statement with a header naming a key nobody trusts (fails before the signature)."""
    header = {"alg": "ES256", "kid": "nobody", "typ": STATEMENT_TYP}
    return b64url_encode(json.dumps(header).encode()) + statement[statement.index(".") :]


def _unreferenced(statement: str) -> str:
    """The statement with one more (well-formed) disclosure that no digest references:
    its signature still verifies, its content does not."""
    extra = b64url_encode(json.dumps(["salt", "extra", 1]).encode())
    return statement + extra + "~"


@pytest.mark.parametrize("forged", [0, 2, 4, 5])
@pytest.mark.parametrize("other", [0, 1, 2, 4, 5])
@pytest.mark.parametrize("fault", ["before_signature", "after_signature"])
def test_signatures_checked_together_fail_in_statement_order(
    forged: int, other: int, fault: str
) -> None:
    """Every signature is checked at once, yet the failure is the one a statement by
    statement run reports: the first failing statement, and within a statement its header
    and key, then its signature, then its content."""
    op = _forged(forged)
    statements = list(op.package["statements"])
    if fault == "before_signature":
        statements[other] = _unknown_kid(statements[other])
        first_is_forgery = forged < other
        own = ("key_untrusted", "issuer_key_unknown")
    else:
        statements[other] = _unreferenced(statements[other])
        first_is_forgery = forged <= other
        own = ("statement_malformed", "disclosure_unreferenced")
    package = {**op.package, "statements": statements}
    verdict = vxp.verify(package, op.metadata, op.jwks, now=op.now)
    assert verdict.failure is not None
    got = (verdict.failure["code"], verdict.failure.get("reason"))
    if first_is_forgery:
        assert got == ("signature_invalid", "signature_invalid")
        assert verdict.failure["message"].startswith(f"statement {forged}:")
    else:
        assert got == own
        assert verdict.failure["message"].startswith(f"statement {other}")


@pytest.mark.parametrize("which", [0, 2, 4, 5])
def test_a_forged_signature_the_chain_cannot_see_is_refused(which: int) -> None:
    op = _forged(which)
    verdict = vxp.verify(op.package, op.metadata, op.jwks, now=op.now)
    assert verdict.failure is not None
    assert verdict.failure["code"] == "signature_invalid"
    assert verdict.failure["message"].startswith(f"statement {which}:")
    verifier = vxp.Verifier(op.metadata, op.jwks)
    assert verifier.verify(op.package, now=op.now) == verdict


def test_intact_packages_verify_the_same_one_shot_and_prepared() -> None:
    for op in OPS.values():
        verifier = vxp.Verifier(
            op.metadata, op.jwks, live_metadata=op.live["metadata"], live_jwks=op.live["jwks"]
        )
        live_log = {"checkpoint": op.live["checkpoint"], "consistency": op.live["consistency"]}
        for live in (None, op.live):
            got = vxp.verify(op.package, op.metadata, op.jwks, live=live, now=op.now)
            assert got.valid
            assert vxp.Verdict(**got.__dict__) == got  # built field for field
        prepared = verifier.verify(op.package, now=op.now, live_log=live_log)
        assert prepared == vxp.verify(op.package, op.metadata, op.jwks, live=op.live, now=op.now)


def test_a_verifier_is_read_only() -> None:
    op = OPS["succeeded"]
    verifier = vxp.Verifier(op.metadata, op.jwks)
    with pytest.raises(AttributeError):
        verifier._material = None  # type: ignore[misc]
    keys = vxp.IssuerKeys(demo_key("x"))
    with pytest.raises(AttributeError):
        keys._keys = ()  # type: ignore[misc]


def test_live_metadata_and_live_jwks_come_together() -> None:
    op = OPS["succeeded"]
    with pytest.raises(vxp.VxpError) as err:
        vxp.Verifier(op.metadata, op.jwks, live_metadata=op.metadata)
    assert err.value.code == "live_invalid"


# ---------------------------------------------------------------- small pieces


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.binary(min_size=64, max_size=64),
        st.sampled_from(
            [
                bytes(64),
                b"\x80" * 64,
                b"\x00" * 31 + b"\x80" + b"\x00" * 31 + b"\x01",
                b"\xff" * 64,
                b"\x00" * 32 + b"\x7f" * 32,
            ]
        ),
    )
)
def test_hand_built_der_is_cryptography_s(signature: bytes) -> None:
    r = int.from_bytes(signature[:32], "big")
    s = int.from_bytes(signature[32:], "big")
    assert _der(signature) == encode_dss_signature(r, s)


def test_all_valid_answers_as_each_key_would() -> None:
    es = resolve_key(KEY)
    ed = resolve_key(OKPKey.generate_key("Ed25519"))
    message = b"m"
    good_es = (es, message, es.sign(message))
    good_ed = (ed, message, ed.sign(message))
    bad_es = (es, b"other", good_es[2])
    short = (es, message, good_es[2][:63])
    cases = [[], [good_es], [good_es, good_ed], [good_es, bad_es], [bad_es], [short], [good_ed]]
    for checks in cases:
        assert all_valid(checks) is all(k.signature_valid(m, s) for k, m, s in checks)
    # a hand-made key whose alg is not its type's fails closed either way, on both paths
    import dataclasses

    for key, signature in ((ed, good_ed[2]), (es, good_es[2])):
        mislabelled = dataclasses.replace(key, alg="EdDSA" if key is es else "ES256")
        assert mislabelled.signature_valid(message, signature) is False
        assert all_valid([(mislabelled, message, signature)]) is False


def test_allow_lists_refuse_bad_ones() -> None:
    token = vxp.issue_sd_jwt({"a": 1}, KEY, typ="t").serialize()
    assert vxp.verify_sd_jwt(token, KEY, typ="t", now=NOW, algorithms=("ES256",)).claims
    for bad in [(["ES256"],), ("none",), (), ("HS256",), frozenset(), (1,)]:
        with pytest.raises(vxp.VxpUsageError) as err:
            vxp.verify_sd_jwt(token, KEY, typ="t", now=NOW, algorithms=bad)
        assert err.value.code == "algorithms_invalid"


def test_the_chain_checks_cover_every_kind() -> None:
    from vxp import _chain

    assert _chain._CHECKS.keys() == _chain.KIND_SIGNER.keys()


def test_records_by_kid_match_the_records() -> None:
    for op in OPS.values():
        trust = load_trust(op.metadata, op.jwks)
        for kid in {r.kid for r in trust.records} | {"nope"}:
            assert trust.records_for(kid) == [r for r in trust.records if r.kid == kid]


# ------------------------------------------------ review findings (regression tests)


def _payload_text(statement: str) -> str:
    return vxp.codec.b64url_decode(statement.split(".")[1], "p").decode()


def _padded(text: str) -> str:
    """The same coordinate with a leading zero byte (a non-canonical spelling)."""
    return b64url_encode(b"\0" + vxp.codec.b64url_decode(text, "x"))


@pytest.mark.parametrize("kind", ["ec_x", "ec_y", "ec_short", "okp_x", "okp_y"])
def test_only_the_canonical_spelling_of_a_key_is_a_key(kind: str) -> None:
    """One key, one spelling, one RFC 7638 thumbprint: otherwise an issuer key could pose
    as a user's key (or one key sign for two roles) under another kid."""
    ec_jwk = dict(resolve_key(demo_key("operator")).public_jwk)
    okp_jwk = dict(resolve_key(OKPKey.generate_key("Ed25519")).public_jwk)
    if kind == "ec_x":
        jwk = {**ec_jwk, "x": _padded(ec_jwk["x"])}
    elif kind == "ec_y":
        jwk = {**ec_jwk, "y": _padded(ec_jwk["y"])}
    elif kind == "ec_short":
        # a key whose x starts with a zero byte, written with that byte left out
        jwk = dict(resolve_key(_ec_key_with_leading_zero_x()).public_jwk)
        jwk["x"] = b64url_encode(vxp.codec.b64url_decode(jwk["x"], "x")[1:])
    elif kind == "okp_x":
        jwk = {**okp_jwk, "x": _padded(okp_jwk["x"])}
    else:
        jwk = {**okp_jwk, "y": okp_jwk["x"]}
    with pytest.raises(vxp.VxpError) as err:
        resolve_key(jwk)
    assert err.value.code == "key_invalid"


def _ec_key_with_leading_zero_x() -> ECKey:
    """The first P-256 key (by private scalar) whose x coordinate starts with a zero byte."""
    for scalar in range(1, 10_000):
        private = ec.derive_private_key(scalar, ec.SECP256R1())
        if private.public_key().public_numbers().x < 2**248:
            return ECKey.import_key(private)
    raise AssertionError("no such key below 10000")  # pragma: no cover


def test_the_operator_cannot_sign_as_the_user_with_a_respelled_key() -> None:
    operator = demo_key("operator")
    private = operator.as_dict(private=True)
    posing = {**private, "x": _padded(private["x"])}
    builder = vxp.OperationBuilder(
        company="https://store.example/e/x",
        op_id="r",
        operator_key=operator,
        company_key=demo_key("company"),
        log=vxp.MerkleLog("store.example/e/x/log"),
        rng=demo_facts.salts("x"),
    )
    t0 = demo_facts.T0
    builder.request(channel="vxp", client_id="https://agent.example", request={"r": 1}, now=t0)
    builder.terms(
        capability=demo_facts.CAPABILITY,
        terms={"pedido": "P-1"},
        expires_at=t0.replace(year=2030),
        read_back_terms=["pedido"],
        now=t0,
    )
    with pytest.raises(vxp.VxpError) as err:
        builder.approve_signed(user_key=posing, now=t0)
    assert err.value.code == "key_invalid"
    # and a verifier handed such an approval (signed, logged) refuses it
    forged = demo_facts.builder("respelled", approve=False)
    forge.log_user_approval(
        forged, operator, user_jwk=lambda jwk: {**jwk, "x": _padded(jwk["x"])}, now=demo_facts.at(1)
    )
    forged.execute(release={"o": 1}, now=demo_facts.at(2))
    forged.outcome(state="failed", result_summary={"e": 1}, now=demo_facts.at(4))
    package = forged.package(log_key=demo_key("log"))
    verdict = vxp.verify(package, *demo_facts.material(), now=demo_facts.at(60))
    assert verdict.failure is not None
    assert verdict.failure["reason"] == "user_signature_invalid"


@pytest.mark.parametrize("typ", [["t"], {"t": 1}, 1, b"t", ""])
def test_an_odd_expected_typ_is_the_callers_typ_invalid(typ: object) -> None:
    """The ``typ`` to expect is the caller's option: not a string is a usage error."""
    token = vxp.issue_sd_jwt({"a": 1}, KEY, typ="t").serialize()
    with pytest.raises(vxp.VxpUsageError) as info:
        vxp.verify_sd_jwt(token, KEY, typ=typ, now=NOW)  # type: ignore[arg-type]
    assert info.value.code == "typ_invalid"


@pytest.mark.parametrize("depth", [58, 61, 63, 64, 65, 70])
def test_statements_nested_past_the_limit_are_refused(depth: int) -> None:
    deep: Any = 1
    for _ in range(depth):
        deep = {"a": deep}
    text = _deep_statement(deep)
    got = _outcome(lambda: verify_statement(text, _KEYS, where="s"))
    if depth + 1 > 64:  # the deepest object sits at path body.deep.a.a...: depth + 1 steps
        assert got[0:2] == ("error", "statement_malformed")  # type: ignore[index]
        assert got[3] == "claims_too_deep"  # type: ignore[index]
    else:
        assert got[0] == "ok"  # type: ignore[index]
    assert (claims_of(text, 1.0) is None) == (got[0] == "error")  # type: ignore[index]


def _deep_statement(body_value: Any) -> str:
    payload = {
        "seq": 0,
        "kind": "request",
        "signer": "operator",
        "prev": None,
        "body": {"deep": body_value},
        "_sd_alg": "sha-256",
    }
    key = resolve_key(demo_key("operator"))
    header = {"alg": "ES256", "kid": key.kid, "typ": STATEMENT_TYP}
    return sign_compact(header, payload, key, deterministic=True) + "~"


@pytest.mark.parametrize("extra", [{"kid": 5}, {"x5c": "nope"}, {"use": 5}, {"alg": "RS256"}])
def test_a_key_answers_the_same_whatever_came_before(extra: dict[str, Any]) -> None:
    jwk = dict(resolve_key(ECKey.generate_key("P-256")).public_jwk)
    cold = _outcome(lambda: resolve_key({**jwk, **extra}).kid)
    resolve_key(jwk)
    assert _outcome(lambda: resolve_key({**jwk, **extra}).kid) == cold


def test_an_okp_key_with_a_null_y_is_refused_cold_and_warm() -> None:
    jwk = dict(resolve_key(OKPKey.generate_key("Ed25519")).public_jwk)
    cold = _outcome(lambda: resolve_key({**jwk, "y": None}).kid)
    resolve_key(jwk)
    assert _outcome(lambda: resolve_key({**jwk, "y": None}).kid) == cold
    assert cold[0] == "error"  # type: ignore[index]


def _as_init_builds(value: Any) -> None:
    """``value`` equals the instance its class's own ``__init__`` builds from its fields."""
    import dataclasses

    assert dataclasses.replace(value) == value
    assert vars(dataclasses.replace(value)) == vars(value)


def test_verdicts_and_chain_states_equal_those_built_by_their_init() -> None:
    """Verdict, ChainState and Terms are ordinary frozen dataclass instances (the
    ``object.__new__`` shortcut that once built them is gone: issue 25)."""
    for op in OPS.values():
        _as_init_builds(vxp.verify(op.package, op.metadata, op.jwks, live=op.live, now=op.now))
        state = op.builder.state  # the chain fold's last state, and its latest terms
        _as_init_builds(state)
        assert state.terms is not None
        _as_init_builds(state.terms)


@pytest.mark.parametrize(
    ("kind", "signer", "reason"),
    [
        ("terms", "operator", "signer_role"),
        ("no-such-kind", "operator", "kind"),
        ("terms", "company", None),
    ],
)
def test_one_statement_verified_alone_names_its_kinds_role(
    kind: str, signer: str, reason: str | None
) -> None:
    """vxp-proof.md §6 (a kind and the role that signs it): ``vxp.statements.verify_statement``
    refuses an unknown kind and a signer other than the kind's role; which keys the role
    holds is the caller's choice of ``keys`` (the verifier checks the listing)."""
    key = demo_key("company")
    text = sign_statement(
        seq=1,
        kind=kind,
        signer=signer,
        prev="sha-256:" + "A" * 43,
        body={"x": 1},
        key=key,
        rng=lambda n: b"\x07" * n,
    )
    if reason is None:
        assert verify_statement(text, [key]).kind == kind
        return
    with pytest.raises(vxp.VxpProtocolError) as info:
        verify_statement(text, [key])
    assert (info.value.code, info.value.reason) == ("statement_malformed", reason)
