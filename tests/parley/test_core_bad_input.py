"""Bad input of any shape raises ParleyError only, never KeyError/TypeError/AttributeError."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import parley

NOW = 1790000000
P = parley.key_from_seed(b"\x01" * 32)
A = parley.key_from_seed(b"\x02" * 32)
X = parley.key_from_seed(b"\x09" * 32)
KEY = parley.key_from_seed(b"\x02" * 32)
TOKEN = parley.mint_grant(KEY, KEY.public, [], iat=NOW, nonce="n")
CTX = parley.GrantContext("s", "ASK", "c", NOW)
JUNK: list[Any] = [None, 0, -1, 1.5, True, "", "x", b"x", [], [None], {}, {"a": None}, object()]

CALLS: dict[str, Callable[[Any], Any]] = {
    "canonical": parley.canonical,
    "proposal_hash": parley.proposal_hash,
    "b64url_decode": parley.wire.b64url_decode,
    "b64url_encode": parley.wire.b64url_encode,
    "key_from_seed": parley.key_from_seed,
    "parse_public_key": parley.keys.parse_public_key,
    "parse_caveat": parley.grants.parse_caveat,
    "effective_caveats": lambda v: parley.grants.effective_caveats([v]),
    "sign": KEY.sign,
    "proof_target": lambda v: parley.grants.proof_target(v, capability=v, proposal_hash=v),
    "sign_proof": lambda v: parley.sign_proof(KEY, aud=v, verb="ASK", target="c", ts=v),
    "sign_proof_key": lambda v: parley.sign_proof(v, aud="a", verb="ASK", target="c", ts=NOW),
    "verify_proof": lambda v: parley.verify_proof(v, aud="a", verb="ASK", target="c", now=NOW),
    "verify_proof_now": lambda v: parley.verify_proof(
        {"key": KEY.public, "ts": NOW, "sig": "x"}, aud=v, verb=v, target=v, now=v
    ),
    "decode_grant": parley.decode_grant,
    "inspect_grant": parley.inspect_grant,
    "mint_grant_caveats": lambda v: parley.mint_grant(KEY, KEY.public, v, iat=NOW),
    "mint_grant_sub": lambda v: parley.mint_grant(KEY, v, [], iat=NOW),
    "mint_grant_iat": lambda v: parley.mint_grant(KEY, KEY.public, [], iat=v),
    "mint_grant_issuer": lambda v: parley.mint_grant(v, KEY.public, [], iat=NOW),
    "delegate": lambda v: parley.delegate(v, KEY, KEY.public, [], iat=NOW),
    "delegate_caveats": lambda v: parley.delegate(TOKEN, KEY, KEY.public, v, iat=NOW),
    "delegate_holder": lambda v: parley.delegate(TOKEN, v, KEY.public, [], iat=NOW),
    "verify_grant_trusted": lambda v: parley.verify_grant([TOKEN], trusted=v, proof_key=v, ctx=CTX),
    "verify_grant_ctx": lambda v: parley.verify_grant([TOKEN], trusted=[], proof_key=None, ctx=v),
    "grant_context": lambda v: parley.GrantContext(v, v, v, v),
    "grant_context_json": parley.GrantContext.from_json,
    "proposal_facts": parley.ProposalFacts.from_json,
    "consent_request": lambda v: parley.consent_request(v, service="s", principal=KEY.public),
    "consent_request_principal": lambda v: parley.consent_request({}, service=v, principal=v),
    "consent_caveats": parley.grants.consent_caveats,
    "consent_for_shown": lambda v: parley.grants.consent_for_shown(v, service="s", request=v),
    "mint_consent_grant": lambda v: parley.mint_consent_grant(KEY, v, KEY.public, iat=NOW),
    "ledger_reserve": lambda v: parley.stores.MemorySpendLedger().reserve(v, v, v, v),
    "ledger_commit": lambda v: parley.stores.MemorySpendLedger().commit(v),
    "ledger_release": lambda v: parley.stores.MemorySpendLedger().release(v),
    "ledger_totals": lambda v: parley.stores.MemorySpendLedger().totals(v, excluding=v),
    "agent_key_store": parley.keys.AgentKeyStore,
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_bad_input_raises_only_parley_error(name: str) -> None:
    call = CALLS[name]
    problems = []
    for value in JUNK:
        try:
            call(value)
        except parley.ParleyError as exc:
            if not exc.code or not str(exc):
                problems.append(f"{name}({value!r}): an error without code or sentence")
        except Exception as exc:
            problems.append(f"{name}({value!r}) raised {type(exc).__name__}: {exc}")
    assert problems == []


def test_verify_grant_turns_every_token_shape_into_a_result() -> None:
    for value in JUNK:
        result = parley.verify_grant([value], trusted=[KEY.public], proof_key=KEY.public, ctx=CTX)
        assert result.ok is False
        assert (result.code, result.reason) == ("unauthorized", "bad_token")


# -------------------------------- any JSON value


A = parley.key_from_seed(b"\x02" * 32)
P = parley.key_from_seed(b"\x01" * 32)
X = parley.key_from_seed(b"\x09" * 32)
_TOKEN = parley.mint_grant(P, A.public, [], iat=NOW, nonce="n")


_CALLS: dict[str, Any] = {
    "canonical": parley.canonical,
    "proposal_hash": parley.proposal_hash,
    "parse_caveat": parley.grants.parse_caveat,
    "decode_grant": parley.decode_grant,
    "inspect_grant": parley.inspect_grant,
    "grant_object": lambda v: parley.inspect_grant(
        parley.grants.Grant((parley.grants.Block(v, v),))
    ),
    "grant_blocks": lambda v: parley.delegate(parley.grants.Grant(v), A, X.public, [], iat=NOW),
    "mint": lambda v: parley.mint_grant(P, A.public, v, iat=NOW),
    "delegate": lambda v: parley.delegate(_TOKEN, A, X.public, v, iat=NOW),
    "verify_proof": lambda v: parley.verify_proof(v, aud="a", verb="ASK", target="t", now=NOW),
    "verify_grant": lambda v: parley.verify_grant(
        v, trusted=[P.public], proof_key=A.public, ctx=parley.GrantContext("s", "ASK", "c", NOW)
    ),
    "context": lambda v: parley.GrantContext.from_json(
        {"service": "s", "verb": "COMMIT", "capability": "c", "now": NOW, "proposal": v}
    ),
    "context_principal": lambda v: parley.GrantContext.from_json(
        {"service": "s", "verb": "ASK", "capability": "c", "now": NOW, "principal": v}
    ),
    "consent_caveats": parley.grants.consent_caveats,
    "consent_for_shown": lambda v: parley.grants.consent_for_shown(v, service="s", request=v),
    "reserve": lambda v: parley.stores.MemorySpendLedger().reserve("k", v, 1, "USD"),
    "proof_target": lambda v: parley.grants.proof_target(
        "INTENT", capability=v, auto=True, frame_id=v
    ),
}


_json = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**70), 2**70),
        st.floats(allow_nan=True),
        st.text(max_size=6),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.text(max_size=4), inner, max_size=3),
        st.tuples(inner),
        st.binary(max_size=3),
    ),
    max_leaves=10,
)


@pytest.mark.parametrize("name", sorted(_CALLS))
@settings(max_examples=60, deadline=None)
@given(value=_json)
def test_public_functions_raise_only_parley_error_on_any_json(name: str, value: Any) -> None:
    error: parley.ParleyError | None = None
    try:
        _CALLS[name](value)
    except parley.ParleyError as exc:  # anything else fails the test
        error = exc
    if error is not None:
        assert error.code
        assert str(error)
