"""Caveats (SPEC.md section 6.3): every shape parses exactly as the section writes it.

Anything else is ``caveat_malformed`` or ``caveat_unknown`` and fails closed; the table
parser is compared with a plain chain of checks on random input.

Private imports: ``parley._caveats._parse_many`` is the fast path that parses a whole
caveat list at once (what grant verification runs); it is held here to
:func:`parley.grants.parse_caveat` applied one caveat at a time, its oracle.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings

import parley
from parley._caveats import _parse_many
from parley.grants import CaveatError, Money

from .caveat_strategies import _caveats
from .orders import commit_check

NOW = 1790000000
SAFE = 2**53 - 1
A = parley.key_from_seed(b"\x02" * 32)
P = parley.key_from_seed(b"\x01" * 32)
OP = parley.key_from_seed(b"\x05" * 32)


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


# -------------------------------- exact types fail closed


def test_risk_tostring_fails_closed() -> None:
    for value in ("toString", "constructor", "__proto__", "valueOf", "LOW", ""):
        token = parley.mint_grant(P, A.public, [], iat=NOW)
        blocks = [b.as_json() for b in parley.decode_grant(token).blocks]
        blocks[0]["p"]["caveats"] = [{"risk": value}]
        blocks[0]["s"] = P.sign(parley.canonical(blocks[0]["p"]).encode())
        forged = "pg1." + parley.wire.b64url_encode(parley.canonical(blocks).encode())
        result = commit_check(forged)
        assert (result.code, result.reason) == ("forbidden", "caveat_malformed"), value


@pytest.mark.parametrize("caveat", [None, [], "risk", 0, {"svc": None}, {"exp": None}])
def test_null_and_odd_caveats_never_raise(caveat: Any) -> None:
    payload = {"iss": P.public, "sub": A.public, "caveats": [caveat], "iat": NOW, "nonce": "n"}
    blocks = [{"p": payload, "s": P.sign(parley.canonical(payload).encode())}]
    token = "pg1." + parley.wire.b64url_encode(parley.canonical(blocks).encode())
    result = commit_check(token, verb="ASK", proposal=None)
    assert (result.code, result.reason) == ("forbidden", "caveat_malformed")
    assert result.need == (caveat,)


def test_string_caveat_is_not_a_substring_match() -> None:
    for caveat in ({"svc": "shop.example"}, {"can": "shop.order"}, {"verbs": "COMMIT"}):
        payload = {"iss": P.public, "sub": A.public, "caveats": [caveat], "iat": NOW, "nonce": "n"}
        blocks = [{"p": payload, "s": P.sign(parley.canonical(payload).encode())}]
        token = "pg1." + parley.wire.b64url_encode(parley.canonical(blocks).encode())
        assert commit_check(token).reason == "caveat_malformed"
