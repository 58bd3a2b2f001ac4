"""The fast paths of grant verification give exactly what the plain paths give.

``verify_grant`` remembers decoded tokens (``_prepare``, keyed by the exact token text),
builds ``ok`` results in one step and parses caveats through a table; base64url decoding
and signature decoding have a fast path. Each is compared here with a plain reference
(an independent copy of the straightforward code, or the uncached path), on random input.
A cached token must never leak its objects: mutating a result's ``need`` changes nothing.
"""

from __future__ import annotations

import base64
import binascii
import copy
import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import parley
from parley import _grants
from parley._caveats import CaveatError, Money, _parse_many

NOW = 1790000000
P = parley.key_from_seed(b"\x01" * 32)
A = parley.key_from_seed(b"\x02" * 32)
B = parley.key_from_seed(b"\x03" * 32)
SAFE = 2**53 - 1


# ---------------------------------------------------------------- base64url


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


def _outcome(fn: Any, *args: Any) -> tuple[str, Any]:
    try:
        return ("ok", fn(*args))
    except (ValueError, parley.ParleyError) as exc:
        return ("error", type(exc).__name__ if not isinstance(exc, parley.ParleyError) else exc)


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


@settings(max_examples=200)
@given(st.binary(min_size=64, max_size=64), st.integers(0, 85), st.sampled_from("A_-+/=é.Qw"))
def test_signature_text_check_matches_strict_decoding(raw: bytes, at: int, char: str) -> None:
    message = b"fast path"
    good = P.sign(message)
    assert parley.keys.verify_signature(P.public, message, good)
    spelled = base64.urlsafe_b64encode(raw).decode().rstrip("=")
    edited = spelled[:at] + char + spelled[at + 1 :]
    for text in (spelled, edited, good[:at] + char + good[at + 1 :]):
        try:
            decodable = len(_reference_b64(text)) == 64
        except (ValueError, binascii.Error):
            decodable = False
        result = parley.keys.verify_signature(P.public, message, text)
        if not decodable:
            assert result is False
        else:
            signature = _reference_b64(text)
            assert result is _raw_verify(signature, message)


def _raw_verify(signature: bytes, message: bytes) -> bool:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    key = Ed25519PublicKey.from_public_bytes(parley.keys.parse_public_key(P.public))
    try:
        key.verify(signature, message)
    except InvalidSignature:
        return False
    return True


# ---------------------------------------------------------------- caveats


def _reference_parse(raw: object) -> tuple[str, Any]:
    """SPEC.md 6.3 caveat shapes as a chain of plain checks: (kind, value) or raise."""
    if not isinstance(raw, dict) or len(raw) != 1:
        raise CaveatError("shape")
    ((kind, value),) = raw.items()

    def safe(v: object) -> bool:
        return type(v) is int and -SAFE <= v <= SAFE

    if kind in ("svc", "verbs", "can"):
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return kind, tuple(value)
    elif kind in ("exp", "nbf"):
        if safe(value):
            return kind, value
    elif kind in ("per", "spend"):
        if (
            isinstance(value, dict)
            and set(value) == {"max", "currency"}
            and safe(value["max"])
            and value["max"] >= 0
            and isinstance(value["currency"], str)
            and value["currency"]
        ):
            return kind, Money(value["max"], value["currency"])
    elif kind == "risk":
        if isinstance(value, str) and value in ("low", "medium", "high"):
            return kind, value
    elif kind == "only":
        if isinstance(value, str):
            return kind, value
    else:
        raise CaveatError("unknown", reason="caveat_unknown")
    raise CaveatError("malformed")


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**64), 2**64),
    st.sampled_from([0, -1, SAFE, SAFE + 1, 2**63, 1.5, "", "USD", "low", "toString", "a.x"]),
    st.text(max_size=4),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(["max", "currency", "x"]), inner, max_size=3),
    ),
    max_leaves=6,
)
_kinds = st.sampled_from(
    ["svc", "verbs", "can", "exp", "nbf", "per", "spend", "risk", "only", "toString", "x"]
)
_money = st.fixed_dictionaries(
    {"max": st.integers(-2, 30000), "currency": st.sampled_from(["USD", "EUR", ""])}
)
_good_caveats = st.one_of(
    st.builds(
        lambda k, v: {k: v},
        st.sampled_from(["svc", "verbs", "can"]),
        st.lists(
            st.sampled_from(["shop.example", "a.example", "ASK", "COMMIT", "shop.*", "*", "x"]),
            max_size=3,
        ),
    ),
    st.builds(lambda k, v: {k: v}, st.sampled_from(["exp", "nbf"]), st.integers(NOW - 9, NOW + 9)),
    st.builds(lambda k, v: {k: v}, st.sampled_from(["per", "spend"]), _money),
    st.builds(lambda v: {"risk": v}, st.sampled_from(["low", "medium", "high", "extreme"])),
    st.builds(lambda v: {"only": v}, st.sampled_from(["h", "other"])),
)
_caveats = st.one_of(
    _good_caveats, st.dictionaries(_kinds, _values, min_size=1, max_size=2), _scalars
)
# Chains of well-formed caveats with, one time in five, one caveat of any shape, so that
# every outcome of section 6.4 is reached.
_caveat_lists = st.builds(
    lambda good, bad, use_bad: [*good, bad] if use_bad else good,
    st.lists(_good_caveats, max_size=3),
    _caveats,
    st.sampled_from([False, False, False, False, True]),
)


@settings(max_examples=600)
@given(_caveats)
def test_parse_caveat_matches_the_reference(raw: object) -> None:
    try:
        expected: Any = _reference_parse(raw)
    except CaveatError as exc:
        expected = exc.reason
    if isinstance(expected, str):
        with pytest.raises(CaveatError) as caught:
            parley.grants.parse_caveat(raw)
        assert caught.value.reason == expected
        with pytest.raises(CaveatError) as again:
            _parse_many([{"risk": "low"}, raw])
        assert again.value.message == caught.value.message
        return
    got = parley.grants.parse_caveat(raw)
    assert _parse_many([raw, raw]) == (got, got)
    assert type(got) is parley.grants.Caveat
    assert tuple(got) == expected
    assert got == parley.grants.Caveat(*expected)
    if isinstance(got.value, tuple) and got.kind in ("per", "spend"):
        assert type(got.value) is Money


# ---------------------------------------------------------------- verify_grant


def _token(blocks: list[dict[str, Any]]) -> str:
    text = json.dumps(blocks, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "pg1." + base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def _signed(key: parley.Key, payload: dict[str, Any]) -> dict[str, Any]:
    """Sign like a lenient signer: unsafe integers and floats are written, not refused."""
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return {"p": payload, "s": key.sign(text.encode())}


def _grant(root: list[Any], second: list[Any] | None) -> str:
    """A root grant P -> A with ``root`` caveats, then A -> B with ``second`` if given.

    Caveats are written as given (malformed ones included), so the token is what a
    careless or hostile signer could produce.
    """
    payload = {"iss": P.public, "sub": A.public, "caveats": root, "iat": NOW, "nonce": "n"}
    blocks = [_signed(P, payload)]
    if second is not None:
        prev = parley.grants.block_id(blocks[0]["s"])
        blocks.append(_signed(A, {"prev": prev, "sub": B.public, "caveats": second, "iat": NOW}))
    return _token(blocks)


_contexts = st.builds(
    lambda verb, cap, now, cost, risk, hash_, spent, principal: parley.GrantContext(
        "shop.example",
        verb,
        cap,
        now,
        None
        if cost is False
        else parley.ProposalFacts(hash_, None if cost is None else parley.grants.Cost(*cost), risk),
        spent,
        principal,
    ),
    st.sampled_from(["ASK", "COMMIT", "UNDO"]),
    st.sampled_from(["shop.order", "x", None]),
    st.integers(NOW - 9, NOW + 9),
    st.one_of(
        st.just(False),
        st.none(),
        st.tuples(st.integers(0, 30000), st.sampled_from(["USD", "EUR"])),
    ),
    st.sampled_from(["low", "medium", "high"]),
    st.sampled_from(["h", "other"]),
    st.dictionaries(st.just("x"), st.integers(0, 10), max_size=1),
    st.sampled_from([None, None, None, P.public, A.public]),
)


def _check_all(token: str, holder: str, ctx: parley.GrantContext) -> list[parley.GrantCheck]:
    trusted = frozenset({P.public})
    _grants._prepare.cache_clear()
    cold = _grants._check_one(token, trusted, holder, ctx, 0)
    warm = _grants._check_one(token, trusted, holder, ctx, 0)
    plain = _grants._check_plain(token, trusted, holder, ctx, 0)
    public = parley.verify_grant([token], trusted=[P.public], proof_key=holder, ctx=ctx)
    return [cold, warm, plain, public]


@settings(max_examples=200, deadline=None)
@given(
    _caveat_lists,
    st.one_of(st.none(), _caveat_lists),
    _contexts,
    st.sampled_from([1, 2, 3, 4, 5, 6, 7, 8, 9, 0]),
)
def test_cached_verification_equals_the_plain_path(
    root: list[Any], second: list[Any] | None, ctx: parley.GrantContext, holder_pick: int
) -> None:
    token = _grant(root, second)
    holder = P.public if holder_pick == 0 else (B if second is not None else A).public
    cold, warm, plain, public = _check_all(token, holder, ctx)
    assert cold == warm == plain == public
    assert repr(cold) == repr(plain)
    assert hash(cold) == hash(plain) if _hashable(cold) else True
    # A caller that mutates what a result shows changes nothing for the next call.
    for shown in warm.need:
        if isinstance(shown, dict):
            shown.clear()
            shown["svc"] = ["evil.example"]
        elif isinstance(shown, list):
            shown.append("*")
    again = _grants._check_one(token, frozenset({P.public}), holder, ctx, 0)
    assert again == _grants._check_plain(token, frozenset({P.public}), holder, ctx, 0)
    assert again == plain


def _hashable(value: object) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def test_ok_result_built_in_one_step_equals_a_constructed_one() -> None:
    token = parley.mint_grant(
        P, A.public, [{"spend": {"max": 100, "currency": "USD"}}, {"svc": ["s"]}], iat=NOW
    )
    ctx = parley.GrantContext(
        "s", "COMMIT", "c", NOW, parley.ProposalFacts("h", parley.grants.Cost(5, "USD"), "low")
    )
    _grants._prepare.cache_clear()
    fast = parley.verify_grant(token, trusted=[P.public], proof_key=A.public, ctx=ctx)
    grant = parley.decode_grant(token)
    built = parley.GrantCheck(
        True,
        message="authorized",
        grant=grant.id,
        blocks=grant.block_ids,
        principal=P.public,
        holder=A.public,
        index=0,
        spend_caps=(parley.grants.SpendCap(grant.id, 100, "USD"),),
    )
    assert fast == built
    assert repr(fast) == repr(built)
    assert hash(fast) == hash(built)
    assert type(fast) is parley.GrantCheck
    assert fast.as_json() == built.as_json()
    with pytest.raises(AttributeError):
        fast.ok = False  # type: ignore[misc]
    assert copy.deepcopy(fast) == fast


def test_the_cache_still_verifies_every_signature() -> None:
    good = parley.mint_grant(P, A.public, [], iat=NOW, nonce="n")
    grant = parley.decode_grant(good)
    other = parley.key_from_seed(b"\x07" * 32)
    # The same payload signed by an untrusted key: another token text, refused every time.
    forged = _token([{"p": dict(grant.blocks[0].payload), "s": other.sign(grant.blocks[0].signed)}])
    ctx = parley.GrantContext("s", "ASK", None, NOW)
    for _ in range(3):
        assert parley.verify_grant(good, trusted=[P.public], proof_key=A.public, ctx=ctx).ok
        bad = parley.verify_grant(forged, trusted=[P.public], proof_key=A.public, ctx=ctx)
        assert bad.reason == "bad_signature"
    # The cached grant's payload objects are never handed out by decode_grant either.
    assert parley.decode_grant(good).blocks[0].payload is not grant.blocks[0].payload
    assert _grants._prepare.cache_info().currsize >= 1


def test_long_tokens_are_not_remembered() -> None:
    caveats = [{"can": [f"capability.{n}" for n in range(300)]}]
    token = parley.mint_grant(P, A.public, caveats, iat=NOW, nonce="long")
    assert len(token) > _grants.MAX_CACHED_TOKEN_LENGTH
    ctx = parley.GrantContext("s", "ASK", "capability.7", NOW)
    _grants._prepare.cache_clear()
    assert parley.verify_grant(token, trusted=[P.public], proof_key=A.public, ctx=ctx).ok
    assert _grants._prepare.cache_info().currsize == 0


@settings(max_examples=150)
@given(st.lists(_caveats, max_size=3), st.sampled_from([" ", "\n", ""]), st.booleans())
def test_decoded_payload_text_is_the_canonical_text(
    caveats: list[Any], space: str, reorder: bool
) -> None:
    payload = {"iss": P.public, "sub": A.public, "caveats": caveats, "iat": NOW, "nonce": "n"}
    try:
        signed = parley.canonical(payload).encode()
    except parley.ParleyError:
        return  # a float or huge integer: covered by the lenient-signer tests
    token = _token([_signed(P, payload)])
    grant = parley.decode_grant(token)
    assert grant.blocks[0].signed == signed
    text = base64.urlsafe_b64decode(token[4:] + "==").decode()
    respelled = text.replace('{"p":', '{"p":' + space, 1)
    if reorder:
        respelled = respelled.replace('"iat":', '"iat" :', 1)
    if respelled != text:
        again = "pg1." + base64.urlsafe_b64encode(respelled.encode()).decode().rstrip("=")
        with pytest.raises(parley.ParleyError) as caught:
            parley.decode_grant(again)
        assert caught.value.reason == "bad_token"
