"""The verifier's shared-work paths give exactly the results of the plain per-item checks.

``InclusionBatch`` against :func:`verify_inclusion`, ``StatementBatch`` against
:func:`verify_statement`, the checkpoint's signing input against JCS, and the strict
base64url / digest decoders' fast paths against their full paths.
"""

from __future__ import annotations

import base64
import hashlib
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import vxp
from vxp import _merkle
from vxp._checkpoint import _CHECKPOINT_TYPE, Checkpoint
from vxp._codec import b64url_decode, canonical_json, decode_hash
from vxp._metadata import load_trust
from vxp._proof_demo import demo_operation
from vxp._statements import StatementBatch, split_statement, verify_statement

_OPS = {v: demo_operation(v) for v in ("succeeded", "reviewed", "corrected", "witnessed")}


def _outcome(fn: object, *args: object) -> object:
    try:
        return ("ok", fn(*args))  # type: ignore[operator]
    except vxp.VxpError as exc:
        return ("error", exc.code, exc.message, exc.reason)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    size=st.integers(min_value=1, max_value=70),
    data=st.data(),
)
def test_inclusion_batch_matches_verify_inclusion(size: int, data: st.DataObject) -> None:
    leaves = [hashlib.sha256(i.to_bytes(4, "big")).digest() for i in range(size)]
    root = _merkle.tree_hash(leaves)
    batch = _merkle.InclusionBatch(size, root)
    order = data.draw(st.permutations(range(size)))
    for index in order:
        proof = _merkle.inclusion_proof(leaves, index)
        leaf = leaves[index]
        claimed = index
        mutation = data.draw(st.sampled_from(["none", "none", "flip", "drop", "extra", "index"]))
        if mutation == "flip" and proof:
            k = data.draw(st.integers(0, len(proof) - 1))
            proof[k] = bytes([proof[k][0] ^ 1]) + proof[k][1:]
        elif mutation == "drop" and proof:
            proof = proof[:-1]
        elif mutation == "extra":
            proof = [*proof, leaves[0]]
        elif mutation == "index":
            claimed = (index + 1) % size
        expected = _outcome(_merkle.verify_inclusion, leaf, claimed, size, proof, root)
        assert _outcome(batch.verify, leaf, claimed, proof) == expected


def test_inclusion_batch_memory_ignores_later_changes_to_a_proof_list() -> None:
    # After a walk is accepted, its caller rewrites the proof list in place into a forged
    # tail; a later walk presenting that forged tail must still be walked and refused.
    leaves = [hashlib.sha256(i.to_bytes(4, "big")).digest() for i in range(64)]
    root = _merkle.tree_hash(leaves)
    batch = _merkle.InclusionBatch(64, root)
    proof = _merkle.inclusion_proof(leaves, 0)
    batch.verify(leaves[0], 0, proof)
    forged = [bytes(32)] * len(proof)
    proof[1:] = forged[1:]  # the states after step 0 now "remember" the forged tail
    other = _merkle.inclusion_proof(leaves, 1)
    attack = [other[0], *forged[1:]]
    expected = _outcome(_merkle.verify_inclusion, leaves[1], 1, 64, attack, root)
    assert expected[0] == "error"
    assert _outcome(batch.verify, leaves[1], 1, attack) == expected


def test_inclusion_batch_treats_unusual_input_like_verify_inclusion() -> None:
    leaves = [hashlib.sha256(bytes([i])).digest() for i in range(5)]
    root = _merkle.tree_hash(leaves)
    proof = _merkle.inclusion_proof(leaves, 2)
    cases = [
        (leaves[2], -1, proof),
        (leaves[2], 5, proof),
        (leaves[2], True, proof),
        (leaves[2][:31], 2, proof),
        (leaves[2], 2, [*proof[:-1], b"x"]),
        (leaves[2], 2, tuple(proof)),
    ]
    batch = _merkle.InclusionBatch(5, root)
    for leaf, index, p in cases:
        expected = _outcome(_merkle.verify_inclusion, leaf, index, 5, p, root)
        assert _outcome(batch.verify, leaf, index, p) == expected
    bad = _merkle.InclusionBatch(5, root[:31])
    assert _outcome(bad.verify, leaves[2], 2, proof) == _outcome(
        _merkle.verify_inclusion, leaves[2], 2, 5, proof, root[:31]
    )


_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~"


def _statement_outcome(fn: object, *args: object) -> object:
    result = _outcome(fn, *args)
    if result[0] == "ok":
        st_ = result[1]  # type: ignore[index]
        return ("ok", st_)
    return result


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    variant=st.sampled_from(sorted(_OPS)),
    which=st.integers(min_value=0, max_value=20),
    where=st.integers(min_value=0, max_value=10_000),
    char=st.sampled_from(_ALPHABET),
    mutate=st.booleans(),
)
def test_statement_batch_matches_verify_statement(
    variant: str, which: int, where: int, char: str, mutate: bool
) -> None:
    op = _OPS[variant]
    trust = load_trust(op.metadata, op.jwks)
    keys = dict(trust.keys)
    statements = list(op.package["statements"])
    i = which % len(statements)
    if mutate:
        text = statements[i]
        j = where % len(text)
        statements[i] = text[:j] + char + text[j + 1 :]
    batch = StatementBatch(keys, 1.0)
    for k, raw in enumerate(statements):
        try:
            token = split_statement(raw, f"statement {k}")
        except vxp.VxpError:
            continue
        expected = _outcome(
            lambda t, w=f"statement {k}": verify_statement(t, keys, where=w, now=1.0), token
        )
        got = _outcome(batch.verify, token, f"statement {k}")
        assert got == expected
        if expected[0] == "ok":
            oracle = verify_statement(token, keys, where=f"statement {k}", now=1.0, fast=False)
            assert got[1] == oracle  # type: ignore[index]


@pytest.mark.parametrize("origin", ["log.example/x", "a b!#~", 'q"q', "é", "a\\b", "t\tx"])
@pytest.mark.parametrize("size", [1, 7, 2**53 - 1, 2**53, 2**62])
def test_checkpoint_signing_input_is_jcs(origin: str, size: int) -> None:
    cp = Checkpoint(origin, size, os.urandom(32))
    try:
        expected: object = canonical_json({"type": _CHECKPOINT_TYPE, **cp.to_json()})
    except vxp.VxpError as exc:
        expected = exc.code
    try:
        got: object = cp.signing_input()
    except vxp.VxpError as exc:
        got = exc.code
    assert got == expected


def _reference_b64(text: str) -> bytes | None:
    """Strict unpadded base64url by definition: decode, then require the one encoding."""
    if any(c not in _ALPHABET[:64] for c in text) or len(text) % 4 == 1:
        return None
    data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    return data if base64.urlsafe_b64encode(data).rstrip(b"=").decode() == text else None


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=_ALPHABET[:64] + "+/= \n!é", max_size=12))
def test_b64url_decode_is_strict(text: str) -> None:
    expected = _reference_b64(text)
    try:
        got: bytes | None = b64url_decode(text, "x")
    except vxp.VxpError:
        got = None
    assert got == expected


@settings(max_examples=200, deadline=None)
@given(st.binary(min_size=32, max_size=32), st.integers(0, 42), st.sampled_from(_ALPHABET))
def test_decode_hash_fast_path_is_strict(digest: bytes, pos: int, char: str) -> None:
    text = "sha-256:" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
    assert decode_hash(text) == digest
    changed = text[: 8 + pos] + char + text[9 + pos :]
    expected = _reference_b64(changed[8:])
    try:
        got: bytes | None = decode_hash(changed)
    except vxp.VxpError:
        got = None
    assert got == (expected if expected is not None and len(expected) == 32 else None)


def _sd_token() -> tuple[str, object]:
    from joserfc.jwk import ECKey

    issuer = ECKey.import_key(
        {
            "kty": "EC",
            "crv": "P-256",
            "x": "MKBCTNIcKUSDii11ySs3526iDZ8AiTo7Tu6KPAqv7D4",
            "y": "4Etl6SRW2YiLUrN5vfvVHuhp7x8PxltmWWlbbM4IFyM",
            "d": "870MB6gfuTJ4HtUnUvYMyJpr5eUZNP4Bk43bVdj3eAE",
        }
    )
    claims = vxp.mark_disclosable(
        {
            "iss": "https://issuer.example",
            "iat": 1_700_000_000,
            "exp": 1_900_000_000,
            "given_name": "Ada",
            "address": {"street": "1 Main St", "city": "Anytown"},
            "nationalities": ["ES", "PT"],
        },
        [["given_name"], ["address"], ["address", "street"], ["nationalities", 1]],
    )
    seed = iter(range(10_000))
    token = vxp.issue_sd_jwt(
        claims,
        issuer,
        typ="example+sd-jwt",
        decoys=1,
        rng=lambda n: bytes([next(seed) % 256]) * n,
        holder_key=issuer,
    )
    return token.serialize(), issuer


_SD_TOKEN, _SD_KEY = _sd_token()


def _general_only(token: str, **kwargs: object) -> object:
    from vxp import _sdjwt

    saved = _sdjwt._verify_plain
    _sdjwt._verify_plain = lambda *a, **k: None  # type: ignore[assignment]
    try:
        return _outcome(lambda: vxp.verify_sd_jwt(token, _SD_KEY, **kwargs))  # type: ignore[arg-type]
    finally:
        _sdjwt._verify_plain = saved  # type: ignore[assignment]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    where=st.integers(min_value=0, max_value=10_000),
    char=st.sampled_from(_ALPHABET),
    drop=st.integers(min_value=0, max_value=8),
    now=st.sampled_from([1_800_000_000, 1_950_000_000, 1_600_000_000]),
)
def test_sd_jwt_one_pass_path_gives_the_general_result(
    where: int, char: str, drop: int, now: int
) -> None:
    parts = _SD_TOKEN.split("~")
    if 0 < drop < len(parts) - 1:
        parts = parts[:drop] + parts[drop + 1 :]
    token = "~".join(parts)
    j = where % len(token)
    token = token[:j] + char + token[j + 1 :]
    kwargs = {"typ": "example+sd-jwt", "now": now}
    got = _outcome(lambda: vxp.verify_sd_jwt(token, _SD_KEY, **kwargs))  # type: ignore[arg-type]
    assert got == _general_only(token, **kwargs)


def test_sd_jwt_one_pass_path_accepts_the_intact_token() -> None:
    kwargs = {"typ": "example+sd-jwt", "now": 1_800_000_000}
    got = _outcome(lambda: vxp.verify_sd_jwt(_SD_TOKEN, _SD_KEY, **kwargs))  # type: ignore[arg-type]
    assert got[0] == "ok"
    assert got == _general_only(_SD_TOKEN, **kwargs)
