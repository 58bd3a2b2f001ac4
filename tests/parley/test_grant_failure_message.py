"""A refused grant's message describes the caveat its reason names (SPEC.md section 6.4).

When one grant fails on several caveats, the reason is chosen by priority
(``caveat_malformed`` over ``caveat_unknown`` over ``caveat_failed``), so the message, which
a service sends in its ERROR reply, must quote a caveat of that kind: not the first caveat
that failed, which may be of another kind (``the grant carries a malformed caveat
{"svc":[...]}`` for a well-formed ``svc`` that only did not match).
"""

from __future__ import annotations

from typing import Any

import pytest

import parley

NOW = 1790000000
P = parley.key_from_seed(b"\x01" * 32)
A = parley.key_from_seed(b"\x02" * 32)

FAILS = {"svc": ["bank.example"]}  # well formed; only this request is for another service
MALFORMED = {"risk": "bogus"}
UNKNOWN = {"zzz": 1}


def _forged(caveats: list[Any]) -> str:
    """A grant the principal really signed, holding caveats ``mint_grant`` would refuse."""
    payload = {"iss": P.public, "sub": A.public, "caveats": caveats, "iat": NOW, "nonce": "n"}
    blocks = [{"p": payload, "s": P.sign(parley.canonical(payload).encode())}]
    return "pg1." + parley.wire.b64url_encode(parley.canonical(blocks).encode())


def _verify(token: str) -> parley.GrantCheck:
    ctx = parley.GrantContext("shop.example", "ASK", "shop.orders", NOW)
    return parley.verify_grant([token], trusted=[P.public], proof_key=A.public, ctx=ctx)


@pytest.mark.parametrize(
    ("caveats", "reason", "named"),
    [
        ([FAILS, MALFORMED], "caveat_malformed", MALFORMED),
        ([FAILS, UNKNOWN], "caveat_unknown", UNKNOWN),
    ],
    ids=["failed-then-malformed", "failed-then-unknown"],
)
def test_the_message_quotes_a_caveat_of_the_reported_kind(
    caveats: list[Any], reason: str, named: dict[str, Any]
) -> None:
    check = _verify(_forged(caveats))
    assert (check.code, check.reason) == ("forbidden", reason)
    assert parley.canonical(named) in check.message, check.message
    assert parley.canonical(FAILS) not in check.message, check.message
