"""Keys and signatures (SPEC.md section 6.1).

A public key is ``ed25519:`` and base64url of 32 bytes; small-order and non-canonical
points are refused everywhere (anyone could "sign" for them); signatures are strict
base64url of 64 bytes and not malleable; a private key never shows.
:func:`parley.keys.verify_signature` follows the verification convention: it returns the
data it verified, or raises the protocol error ``unauthorized`` (``bad_key`` for the key,
``bad_signature`` for the signature); data that is not bytes is the caller's ``bad_argument``.
"""

from __future__ import annotations

import base64
import binascii
import copy
import json
import pickle
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import parley
from parley.errors import ParleyProtocolError, ParleyUsageError

AGENT = parley.key_from_seed(b"\x02" * 32)
IDENTITY = bytes([1]) + bytes(31)
NOW = 1790000000
P = parley.key_from_seed(b"\x01" * 32)
PRIME = 2**255 - 19
A = parley.key_from_seed(b"\x02" * 32)


TOP = Path(__file__).resolve().parents[2]
REF = TOP / "vectors" / "third_party" / "parley"


def test_reference_keys() -> None:
    for case in json.loads((REF / "keys.json").read_text(encoding="utf-8")):
        key = parley.key_from_seed(parley.wire.b64url_decode(case["seed"]))
        assert key.public == case["public"]


def test_private_key_never_shows() -> None:
    seed = bytes(range(32))
    key = parley.key_from_seed(seed)
    texts = [repr(key), str(key), f"{key}", repr([key]), repr({"k": key})]
    secret_forms = (seed.hex(), parley.wire.b64url_encode(seed), repr(seed))
    for text in texts:
        assert key.public in text
        assert not any(form in text for form in secret_forms)
    exposed = [n for n in dir(key) if not n.startswith("_") and n not in ("public", "sign")]
    assert exposed == ["from_seed", "generate"], "no public way to read the private half"
    with pytest.raises(parley.ParleyError) as caught:
        pickle.dumps(key)
    assert parley.wire.b64url_encode(seed) not in str(caught.value)
    with pytest.raises(parley.ParleyError):
        copy.deepcopy(key)


@pytest.mark.parametrize("seed", [b"", b"\x01" * 31, b"\x01" * 33, "x" * 32, None])
def test_bad_seed(seed: Any) -> None:
    with pytest.raises(parley.ParleyError) as caught:
        parley.key_from_seed(seed)
    assert caught.value.reason == "bad_key"


def test_generated_keys_differ_and_sign() -> None:
    one, two = parley.generate_key(), parley.generate_key()
    assert one.public != two.public
    sig = one.sign(b"m")
    assert parley.keys.verify_signature(one.public, b"m", sig) == b"m"
    with pytest.raises(ParleyProtocolError) as caught:
        parley.keys.verify_signature(two.public, b"m", sig)
    assert (caught.value.code, caught.value.reason) == ("unauthorized", "bad_signature")


def _verifies(public: Any, data: bytes, signature: Any) -> bool:
    """Whether verify_signature passes; a failure must be the protocol error unauthorized."""
    try:
        verified = parley.keys.verify_signature(public, data, signature)
    except ParleyProtocolError as exc:
        failure: tuple[str, str | None] = (exc.code, exc.reason)
    else:
        assert verified == data
        return True
    assert failure in (("unauthorized", "bad_key"), ("unauthorized", "bad_signature"))
    return False


@pytest.mark.parametrize("data", [b"m", bytearray(b"m"), memoryview(b"m")])
def test_verify_signature_returns_the_data_it_verified_as_bytes(data: Any) -> None:
    verified = parley.keys.verify_signature(A.public, data, A.sign(b"m"))
    assert type(verified) is bytes
    assert verified == b"m"


@pytest.mark.parametrize(
    ("public", "sig"),
    [
        (None, "x"),
        ("ed25519:", "x" * 86),
        ("ed25519:" + "A" * 42, "x" * 86),
        ("ED25519:" + AGENT.public[8:], AGENT.sign(b"m")),
        (AGENT.public, None),
        (AGENT.public, AGENT.sign(b"m") + "="),
        (AGENT.public, AGENT.sign(b"m")[:-1]),
        (AGENT.public, "!" * 86),
    ],
)
def test_verify_signature_refuses_malformed_keys_and_signatures(public: Any, sig: Any) -> None:
    with pytest.raises(ParleyProtocolError) as caught:
        parley.keys.verify_signature(public, b"m", sig)
    assert caught.value.code == "unauthorized"
    bad_key = not isinstance(public, str) or not public.startswith("ed25519:") or len(public) < 51
    assert caught.value.reason == ("bad_key" if bad_key else "bad_signature")


def _released() -> memoryview:
    view = memoryview(b"m")
    view.release()
    return view


@pytest.mark.parametrize("data", ["m", None, 7, ["m"], _released()])
def test_verify_signature_data_that_is_not_bytes_is_a_usage_error(data: Any) -> None:
    with pytest.raises(ParleyUsageError) as caught:
        parley.keys.verify_signature(A.public, data, A.sign(b"m"))
    assert (caught.value.code, caught.value.reason) == ("bad_argument", "bad_argument")
    with pytest.raises(ParleyUsageError):
        A.sign(data)


def test_verify_signature_of_empty_data_succeeds_by_not_raising() -> None:
    # the verified value of empty data is b"", which is falsy: success is "did not raise"
    assert parley.keys.verify_signature(A.public, b"", A.sign(b"")) == b""
    with pytest.raises(ParleyProtocolError):
        parley.keys.verify_signature(A.public, b"", A.sign(b"m"))


@pytest.mark.parametrize(
    "text", ["ed25519:abc", "x25519:" + "A" * 43, 7, "ed25519:" + "A" * 43 + "="]
)
def test_parse_public_key_refuses(text: Any) -> None:
    with pytest.raises(parley.ParleyError) as caught:
        parley.keys.parse_public_key(text)
    assert caught.value.reason == "bad_key"


# -------------------------------- small-order keys, malleability, secrecy


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


FORGED = _b64(IDENTITY + bytes(32))  # R = identity, S = 0: "valid" for every message


def _key_text(raw: bytes) -> str:
    return "ed25519:" + _b64(raw)


WEAK = _key_text(IDENTITY)


def test_identity_key_forgery_is_refused_by_verify_signature() -> None:
    for message in (b"", b"any message at all", parley.canonical({"aud": "a", "ts": 1}).encode()):
        assert not _verifies(WEAK, message, FORGED)


SMALL_ORDER_Y = (
    0,
    1,
    PRIME - 1,
    2707385501144840649318225287225658788936804267575313519463743609750303402022,
    55188659117513257062467267217118295137698188065244968500265048394206261417927,
)


def _weak_encodings() -> list[bytes]:
    out = []
    for y in SMALL_ORDER_Y:
        for sign in (0, 1):
            out.append((y | (sign << 255)).to_bytes(32, "little"))
    for y in (PRIME, PRIME + 1, 2**255 - 1):  # non-canonical spellings (y >= p)
        out.append(y.to_bytes(32, "little"))
    return out


@pytest.mark.parametrize("raw", _weak_encodings(), ids=lambda r: r.hex()[:8] + r.hex()[-2:])
def test_small_order_and_non_canonical_keys_are_refused(raw: bytes) -> None:
    text = _key_text(raw)
    with pytest.raises(parley.ParleyError) as caught:
        parley.keys.parse_public_key(text)
    assert caught.value.reason == "bad_key"
    with pytest.raises(ParleyProtocolError) as refused:
        parley.keys.verify_signature(text, b"m", FORGED)
    assert refused.value.reason == "bad_key"
    with pytest.raises(parley.ParleyError):
        parley.mint_grant(P, text, [], iat=NOW, nonce="n")


def test_honest_keys_still_verify() -> None:
    for byte in range(1, 40):
        key = parley.key_from_seed(bytes([byte]) * 32)
        assert parley.keys.parse_public_key(key.public)
        assert _verifies(key.public, b"m", key.sign(b"m"))


def test_signatures_are_not_malleable() -> None:
    # S + L verifies under a lax verifier; the backend must refuse it (and keep refusing).
    order = 2**252 + 27742317777372353535851937790883648493
    sig = base64.urlsafe_b64decode(A.sign(b"m") + "==")
    s = int.from_bytes(sig[32:], "little") + order
    assert s < 2**256
    mauled = _b64(sig[:32] + s.to_bytes(32, "little"))
    assert not _verifies(A.public, b"m", mauled)


def test_private_key_stays_out_of_logs_and_errors(caplog: pytest.LogCaptureFixture) -> None:
    import logging

    seed = bytes(range(7, 39))
    key = parley.key_from_seed(seed)
    secrets = (seed.hex(), _b64(seed), repr(seed))
    logging.getLogger("review").warning("key %s %r %s", key, key, [key])
    errors = []
    for call in (
        lambda: parley.sign_proof(key, aud="a", verb="ASK", target="t", ts=2**60),
        lambda: parley.mint_grant(key, key.public, [{"risk": "x"}], iat=NOW),
        lambda: parley.delegate("pg1.x", key, key.public, [], iat=NOW),
        lambda: key.sign("text"),  # type: ignore[arg-type]
    ):
        with pytest.raises(parley.ParleyError) as caught:
            call()
        errors.append(f"{caught.value!s} {caught.value!r} {caught.value.args}")
    for text in (caplog.text, *errors):
        assert not any(form in text for form in secrets)


# -------------------------------- signature text


def _raw_verify(signature: bytes, message: bytes) -> bool:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    key = Ed25519PublicKey.from_public_bytes(parley.keys.parse_public_key(P.public))
    try:
        key.verify(signature, message)
    except InvalidSignature:
        return False
    return True


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


@settings(max_examples=200)
@given(st.binary(min_size=64, max_size=64), st.integers(0, 85), st.sampled_from("A_-+/=é.Qw"))
def test_signature_text_check_matches_strict_decoding(raw: bytes, at: int, char: str) -> None:
    message = b"fast path"
    good = P.sign(message)
    assert _verifies(P.public, message, good)
    spelled = base64.urlsafe_b64encode(raw).decode().rstrip("=")
    edited = spelled[:at] + char + spelled[at + 1 :]
    for text in (spelled, edited, good[:at] + char + good[at + 1 :]):
        try:
            decodable = len(_reference_b64(text)) == 64
        except (ValueError, binascii.Error):
            decodable = False
        result = _verifies(P.public, message, text)
        if not decodable:
            assert result is False
        else:
            signature = _reference_b64(text)
            assert result is _raw_verify(signature, message)


# -------------------------------- no memory of keys


def test_key_parsing_is_not_remembered(monkeypatch: pytest.MonkeyPatch) -> None:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    loaded: list[bytes] = []
    real = Ed25519PublicKey.from_public_bytes

    def spy(raw: bytes) -> Any:
        loaded.append(raw)
        return real(raw)

    monkeypatch.setattr(Ed25519PublicKey, "from_public_bytes", staticmethod(spy))
    signature = A.sign(b"m")
    assert _verifies(A.public, b"m", signature)
    assert _verifies(A.public, b"m", signature)
    assert len(loaded) == 2
