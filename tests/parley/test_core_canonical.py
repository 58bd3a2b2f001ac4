"""Canonical JSON, proposal hashes and strict base64url (SPEC.md sections 5.1, 6.1, 10).

Private imports: ``parley._canonical._encode`` is the written-out recursive encoder, the
oracle the fast path of :func:`parley.canonical` is held to.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from pathlib import Path
from typing import Any

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

import parley

TOP = Path(__file__).resolve().parents[2]
REF = TOP / "vectors" / "third_party" / "parley"
SAFE = st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1)
BMP_TEXT = st.text(alphabet=st.characters(max_codepoint=0xFFFF, exclude_categories=("Cs",)))
JSON = st.recursive(
    st.none() | st.booleans() | SAFE | BMP_TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(BMP_TEXT, inner, max_size=4),
    max_leaves=20,
)


def test_reference_canonical_cases() -> None:
    raw = (REF / "canonical.json").read_bytes()
    assert b"\x7f" in raw, "the raw U+007F of the reference file survived the copy"
    for case in json.loads(raw):
        assert parley.canonical(case["input"]) == case["canonical"], case["name"]


def test_reference_hash_cases() -> None:
    for case in json.loads((REF / "hash.json").read_text(encoding="utf-8")):
        assert parley.proposal_hash(case["proposal"]) == case["hash"], case["name"]


@settings(max_examples=150)
@given(JSON)
def test_canonical_round_trips(value: Any) -> None:
    text = parley.canonical(value)
    assert json.loads(text) == value
    assert parley.canonical(json.loads(text)) == text


@settings(max_examples=150)
@given(st.dictionaries(BMP_TEXT, JSON, max_size=6), st.randoms(use_true_random=False))
def test_canonical_is_independent_of_key_order(value: dict[str, Any], rnd: Any) -> None:
    items = list(value.items())
    rnd.shuffle(items)
    assert parley.canonical(dict(items)) == parley.canonical(value)


@settings(max_examples=150)
@given(JSON)
def test_canonical_equals_jcs_for_bmp_keys(value: Any) -> None:
    # DESIGN.md: Parley's form coincides with RFC 8785 for the data it allows.
    assert parley.canonical(value).encode("utf-8") == rfc8785.dumps(value)


def test_astral_keys_sort_by_code_point_not_utf16() -> None:
    value = {"\U0001f600": 1, "\ue000": 2}
    assert parley.canonical(value) == '{"\ue000":2,"\U0001f600":1}'
    assert rfc8785.dumps(value).decode() != parley.canonical(value)


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (1.5, "not_integer"),
        (float("nan"), "not_integer"),
        (float("inf"), "not_integer"),
        (1.0, "not_integer"),
        (2**53, "unsafe_integer"),
        (-(2**53), "unsafe_integer"),
        (2**63, "unsafe_integer"),
        ("\ud800", "not_canonical"),
        ({1: "a"}, "not_canonical"),
        ({("a",): 1}, "not_canonical"),
        (b"bytes", "not_canonical"),
        ({"a": {1, 2}}, "not_canonical"),
        (object(), "not_canonical"),
    ],
)
def test_canonical_refuses(value: Any, reason: str) -> None:
    with pytest.raises(parley.ParleyError) as caught:
        parley.canonical(value)
    assert caught.value.reason == reason


def test_canonical_refuses_deep_nesting_without_recursion_error() -> None:
    value: Any = []
    for _ in range(2000):
        value = [value]
    with pytest.raises(parley.ParleyError):
        parley.canonical(value)


def test_bool_is_not_an_integer() -> None:
    assert parley.canonical([True, 1]) == "[true,1]"


def test_proposal_hash_ignores_data_and_hash_only() -> None:
    proposal = {"id": "p", "summary": "s", "cost": None, "data": {"x": 1.5}, "hash": "h"}
    base = parley.proposal_hash(proposal)
    assert parley.proposal_hash({**proposal, "data": None, "hash": "other"}) == base
    for field, value in (("summary", "t"), ("cost", {"amount": 1, "currency": "USD"})):
        assert parley.proposal_hash({**proposal, field: value}) != base


@pytest.mark.parametrize("value", [None, [], "p", 3])
def test_proposal_hash_refuses_non_objects(value: Any) -> None:
    with pytest.raises(parley.ParleyError):
        parley.proposal_hash(value)


# ----------------------------------------------------------------- base64url


@settings(max_examples=200)
@given(st.binary(max_size=80))
def test_b64url_round_trip(data: bytes) -> None:
    text = parley.wire.b64url_encode(data)
    assert "=" not in text
    assert parley.wire.b64url_decode(text) == data


@settings(max_examples=300)
@given(
    st.text(
        alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_=+/ ", max_size=12
    )
)
def test_b64url_accepts_exactly_one_spelling(text: str) -> None:
    try:
        data = parley.wire.b64url_decode(text)
    except parley.ParleyError as exc:
        reason = exc.reason
        data = None
    if data is None:
        assert reason == "bad_base64url"
    else:
        assert parley.wire.b64url_encode(data) == text


@pytest.mark.parametrize("text", ["AQ==", "AR", "AQ I", "+/8", "A", "AQID\n"])
def test_b64url_refuses_what_python_accepts(text: str) -> None:
    try:
        lenient: bytes | None = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        lenient = None
    with pytest.raises(parley.ParleyError) as caught:
        parley.wire.b64url_decode(text)
    assert caught.value.reason == "bad_base64url"
    if text in ("AR", "AQ=="):
        assert lenient is not None, "Python's decoder is lenient here; ours is not"


@pytest.mark.parametrize("value", [None, 12, b"AQ"])
def test_b64url_refuses_non_strings(value: Any) -> None:
    with pytest.raises(parley.ParleyError):
        parley.wire.b64url_decode(value)


FULL_TEXT = st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=8)
ANY_JSON = st.recursive(
    st.none() | st.booleans() | SAFE | FULL_TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(FULL_TEXT, inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=200)
@given(ANY_JSON)
def test_fast_path_equals_the_written_out_encoder(value: Any) -> None:
    from parley._canonical import _encode

    out: list[str] = []
    _encode(value, "$", 0, out)
    assert parley.canonical(value) == "".join(out)


# -------------------------------- base64url against a plain decoder


def _reference_b64(text: object) -> bytes:
    """The straightforward strict decoder: regex, length, trailing bits, then decode."""
    if not isinstance(text, str) or re.fullmatch(r"[A-Za-z0-9_-]*", text) is None:
        raise ValueError("alphabet")
    rest = len(text) % 4
    if rest == 1:
        raise ValueError("length")
    if (rest == 2 and text[-1] not in "AQgw") or (rest == 3 and text[-1] not in "AEIMQUYcgkosw048"):
        raise ValueError("trailing bits")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@settings(max_examples=400)
@given(
    st.one_of(
        st.text(alphabet="AQgwEIM-_z09+/= \n\té\x00", max_size=14),
        st.binary(max_size=12).map(lambda b: base64.urlsafe_b64encode(b).decode().rstrip("=")),
    )
)
def test_b64url_decode_accepts_exactly_what_the_reference_accepts(text: str) -> None:
    try:
        expected: bytes | None = _reference_b64(text)
    except (ValueError, binascii.Error):
        expected = None
    if expected is None:
        with pytest.raises(parley.ParleyError) as caught:
            parley.wire.b64url_decode(text)
        assert caught.value.reason == "bad_base64url"
    else:
        assert parley.wire.b64url_decode(text) == expected
