"""docs/spec/vxp.md §1 encodings hold to their definitions: the checkpoint's signing input
is JCS (§4.3: ``{"type": "vxp-checkpoint/v1", ...}``), base64url and ``sha-256:`` digests
decode only their one canonical spelling, JSON numbers stay within a double."""

from __future__ import annotations

import base64
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vxp
from tests.vxp import forge
from vxp.checkpoints import Checkpoint
from vxp.codec import b64url_decode, canonical_json, decode_hash

_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~"


@pytest.mark.parametrize("origin", ["log.example/x", "a b!#~", 'q"q', "é", "a\\b", "t\tx"])
@pytest.mark.parametrize("size", [1, 7, 2**53 - 1, 2**53, 2**62])
def test_checkpoint_signing_input_is_jcs(origin: str, size: int) -> None:
    cp = Checkpoint(origin, size, os.urandom(32))
    try:
        expected: object = canonical_json({"type": "vxp-checkpoint/v1", **cp.to_json()})
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


# ---- §1 JSON: no number beyond the range of a double


def _signed(payload: bytes) -> str:
    return forge.jws(b'{"alg":"ES256"}', payload, _ISSUER) + "~"


_ISSUER = vxp.demo_key("codec issuer")


@pytest.mark.parametrize("number", [b"1e400", b"-1e400", b"1E309", b"123456789e999"])
def test_json_numbers_beyond_a_double_are_refused(number: bytes) -> None:
    """§1: Python reads 1e400 as inf, an ``exp`` that never comes: the JSON is refused."""
    token = _signed(b'{"iss": "i", "exp": ' + number + b"}")
    with pytest.raises(vxp.VxpProtocolError, match="malformed_jwt"):
        vxp.verify_sd_jwt(token, _ISSUER, typ=None, now=0)


def test_finite_floats_still_parse() -> None:
    """§1: every finite double reads as itself (subnormals and -0.0 included)."""
    token = _signed(b'{"a": 1.5e300, "b": -0.0, "c": 5e-324}')
    claims = vxp.verify_sd_jwt(token, _ISSUER, typ=None, now=0).claims
    assert claims == {"a": 1.5e300, "b": -0.0, "c": 5e-324}
    assert str(claims["b"]) == "-0.0"
