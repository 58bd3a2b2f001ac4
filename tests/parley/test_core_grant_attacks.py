"""Grant verification (SPEC.md 6.2-6.4) against hostile input: hand-built ``Grant`` objects, an
unchecked context principal, unbounded grant lists, an independent oracle of 6.3/6.4/6.6,
reference-signed float money that must fail closed, and deeply nested malformed caveats that
must not reach an error reply. (Moved here from the adversarial review's regression file.)
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import parley

NOW = 1790000000
P = parley.key_from_seed(b"\x01" * 32)
A = parley.key_from_seed(b"\x02" * 32)
X = parley.key_from_seed(b"\x09" * 32)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


# ------------------------------------------------------------------ hand-built grants


@pytest.mark.parametrize(
    "grant",
    [
        parley.grants.Grant(()),
        parley.grants.Grant((parley.grants.Block({}, "x"),)),
        parley.grants.Grant(
            (parley.grants.Block({"sub": 1, "caveats": 3, "iat": 1, "iss": 2}, 5),)
        ),  # type: ignore[arg-type]
        parley.grants.Grant(("x",)),  # type: ignore[arg-type]
        parley.grants.Grant(None),  # type: ignore[arg-type]
        parley.grants.Grant((parley.grants.Block([1], "s"),)),  # type: ignore[arg-type]
    ],
)
def test_hand_built_grant_objects_raise_only_parley_error(grant: parley.grants.Grant) -> None:
    with pytest.raises(parley.ParleyError) as caught:
        parley.delegate(grant, A, X.public, [], iat=NOW)
    assert caught.value.reason == "bad_token"
    with pytest.raises(parley.ParleyError):
        parley.inspect_grant(grant)


def test_hand_built_grant_is_checked_like_its_token() -> None:
    token = parley.mint_grant(P, A.public, [{"risk": "low"}], iat=NOW, nonce="n")
    grant = parley.decode_grant(token)
    assert parley.inspect_grant(grant) == parley.inspect_grant(token)
    # a forged holder in a hand-built block does not let another key delegate
    payload = dict(grant.blocks[0].payload, sub=X.public)
    forged = parley.grants.Grant((parley.grants.Block(payload, grant.blocks[0].sig),))
    child = parley.delegate(forged, X, A.public, [], iat=NOW)
    ctx = parley.GrantContext("s", "ASK", "c", NOW)
    check = parley.verify_grant([child], trusted=[P.public], proof_key=A.public, ctx=ctx)
    assert (check.ok, check.reason) == (False, "bad_signature")


def test_grant_context_principal_must_be_a_string() -> None:
    for bad in (5, ["ed25519:x"], {"k": 1}, True):
        with pytest.raises(parley.ParleyError) as caught:
            parley.GrantContext.from_json(
                {"service": "s", "verb": "ASK", "capability": "c", "now": NOW, "principal": bad}
            )
        assert caught.value.reason == "bad_context"


def test_too_many_grants_are_refused_before_any_signature_work() -> None:
    token = parley.mint_grant(P, A.public, [], iat=NOW, nonce="n")
    ctx = parley.GrantContext("s", "ASK", "c", NOW)
    ok = parley.verify_grant([token] * 16, trusted=[P.public], proof_key=A.public, ctx=ctx)
    assert ok.ok
    many = parley.verify_grant([token] * 17, trusted=[P.public], proof_key=A.public, ctx=ctx)
    assert (many.ok, many.code, many.reason) == (False, "unauthorized", "too_many_grants")


# ------------------------------------------------------------------ an independent oracle

_KEYS = [parley.key_from_seed(bytes([b]) * 32) for b in range(1, 6)]
_RISK = {"low": 0, "medium": 1, "high": 2}


def _well_formed(c: Any) -> bool:
    if not isinstance(c, dict) or len(c) != 1:
        return False
    ((k, v),) = c.items()
    safe = 2**53 - 1
    if k in ("svc", "verbs", "can"):
        return isinstance(v, list) and all(isinstance(x, str) for x in v)
    if k in ("exp", "nbf"):
        return type(v) is int and -safe <= v <= safe
    if k in ("per", "spend"):
        return (
            isinstance(v, dict)
            and set(v) == {"max", "currency"}
            and type(v["max"]) is int
            and 0 <= v["max"] <= safe
            and isinstance(v["currency"], str)
            and v["currency"] != ""
        )
    if k == "risk":
        return isinstance(v, str) and v in _RISK
    return k == "only" and isinstance(v, str)


def _satisfied(c: dict[str, Any], block: str, ctx: dict[str, Any]) -> bool:
    ((k, v),) = c.items()
    if k in ("per", "spend", "risk", "only") and ctx["verb"] != "COMMIT":
        return True
    if k == "svc":
        return ctx["service"] in v
    if k == "verbs":
        return ctx["verb"] in v
    if k == "can":
        cap = ctx["capability"]
        return cap is not None and any(
            p in (cap, "*") or (p.endswith("*") and cap.startswith(p[:-1])) for p in v
        )
    if k == "exp":
        return ctx["now"] < v
    if k == "nbf":
        return ctx["now"] >= v
    proposal = ctx.get("proposal")
    if proposal is None:
        return False
    cost = proposal["cost"]
    if k == "per":
        return cost is None or (cost["currency"] == v["currency"] and cost["amount"] <= v["max"])
    if k == "spend":
        spent = ctx["spent"].get(block, 0)
        if cost is None:
            return spent <= v["max"]
        return cost["currency"] == v["currency"] and spent + cost["amount"] <= v["max"]
    if k == "risk":
        return _RISK[proposal["risk"]] <= _RISK[v]
    return proposal["hash"] == v


def _oracle(blocks: list[dict[str, Any]], trusted: str, holder: str, ctx: dict[str, Any]) -> str:
    """SPEC.md 6.3, 6.4 and 6.6 written out again, for correctly signed chains."""
    if blocks[0]["p"]["iss"] != trusted or blocks[-1]["p"]["sub"] != holder:
        return "unauthorized"
    hard = soft = False
    for block in blocks:
        bid = parley.grants.block_id(block["s"])
        for c in block["p"]["caveats"]:
            if not _well_formed(c):
                hard = True
            elif not _satisfied(c, bid, ctx):
                if next(iter(c)) in ("per", "spend", "risk") and ctx.get("proposal") is not None:
                    soft = True
                else:
                    hard = True
    return "forbidden" if hard else "consent_required" if soft else "ok"


_money = st.fixed_dictionaries(
    {"max": st.integers(0, 3000), "currency": st.sampled_from(["USD", "EUR"])}
)
_caveat = st.one_of(
    st.builds(lambda v: {"svc": v}, st.lists(st.sampled_from(["a.example", "s", "s.x"]))),
    st.builds(lambda v: {"verbs": v}, st.lists(st.sampled_from(["ASK", "COMMIT", "commit"]))),
    st.builds(
        lambda v: {"can": v},
        st.lists(st.sampled_from(["shop.order", "shop.*", "*", "bank.*", "shop*", "", "sh"])),
    ),
    st.builds(lambda v: {"exp": NOW + v}, st.integers(-2, 2)),
    st.builds(lambda v: {"nbf": NOW + v}, st.integers(-2, 2)),
    st.builds(lambda v: {"per": v}, _money),
    st.builds(lambda v: {"spend": v}, _money),
    st.builds(lambda v: {"risk": v}, st.sampled_from(["low", "medium", "high"])),
    st.builds(lambda v: {"only": v}, st.sampled_from(["H1", "H2"])),
    st.sampled_from(
        [
            None,
            {},
            {"risk": "toString"},
            {"svc": "s"},
            {"exp": "1"},
            {"exp": True},
            {"per": {"max": -1, "currency": "USD"}},
            {"per": {"max": 1, "currency": ""}},
            {"exp": NOW, "nbf": NOW},
            {"__proto__": []},
            {"constructor": 1},
        ]
    ),
)


@settings(max_examples=300, deadline=None)
@given(
    depth=st.integers(1, 3),
    caveats=st.lists(st.lists(_caveat, max_size=3), min_size=3, max_size=3),
    verb=st.sampled_from(["ASK", "COMMIT", "UNDO", "INTENT"]),
    service=st.sampled_from(["a.example", "s"]),
    capability=st.one_of(st.none(), st.sampled_from(["shop.order", "bank.pay", "shop", "s"])),
    now=st.integers(NOW - 2, NOW + 2),
    proposal=st.one_of(
        st.none(),
        st.fixed_dictionaries(
            {
                "hash": st.sampled_from(["H1", "H2"]),
                "cost": st.one_of(
                    st.none(),
                    st.fixed_dictionaries(
                        {
                            "amount": st.integers(0, 3000),
                            "currency": st.sampled_from(["USD", "EUR"]),
                        }
                    ),
                ),
                "risk": st.sampled_from(["low", "medium", "high"]),
            }
        ),
    ),
    spent=st.tuples(st.integers(0, 2), st.integers(0, 3000)),
    trusted_ok=st.booleans(),
    holder_ok=st.booleans(),
)
def test_verify_grant_agrees_with_an_independent_oracle(
    depth: int,
    caveats: list[list[Any]],
    verb: str,
    service: str,
    capability: str | None,
    now: int,
    proposal: dict[str, Any] | None,
    spent: tuple[int, int],
    trusted_ok: bool,
    holder_ok: bool,
) -> None:
    root = {
        "iss": P.public,
        "sub": _KEYS[1].public,
        "caveats": caveats[0],
        "iat": NOW,
        "nonce": "n",
    }
    blocks = [{"p": root, "s": P.sign(parley.canonical(root).encode())}]
    for i in range(1, depth):
        payload = {
            "prev": parley.grants.block_id(blocks[-1]["s"]),
            "sub": _KEYS[i + 1].public,
            "caveats": caveats[i],
            "iat": NOW,
        }
        blocks.append({"p": payload, "s": _KEYS[i].sign(parley.canonical(payload).encode())})
    token = "pg1." + _b64(parley.canonical(blocks).encode())
    trusted = P.public if trusted_ok else X.public
    holder = blocks[-1]["p"]["sub"] if holder_ok else X.public
    ctx: dict[str, Any] = {
        "service": service,
        "verb": verb,
        "capability": capability,
        "now": now,
        "spent": {parley.grants.block_id(blocks[min(spent[0], depth - 1)]["s"]): spent[1]},
    }
    if proposal is not None:
        ctx["proposal"] = proposal
    want = _oracle(blocks, trusted, holder, ctx)
    got = parley.verify_grant(
        [token], trusted=[trusted], proof_key=holder, ctx=parley.GrantContext.from_json(ctx)
    )
    assert ("ok" if got.ok else got.code) == want


# ------------------------------------------------------------------ reference-signed floats


@pytest.mark.parametrize(
    ("number", "js"), [(1e-7, "1e-7"), (1.5e21, "1.5e+21"), (12.5, "12.5"), (1e-6, "0.000001")]
)
def test_float_money_signed_by_javascript_fails_closed_not_as_a_bad_token(
    number: float, js: str
) -> None:
    payload = {
        "iss": P.public,
        "sub": A.public,
        "caveats": [{"per": {"max": 0, "currency": "USD"}}],
        "iat": NOW,
        "nonce": "n",
    }
    text = parley.canonical(payload).replace('"max":0', f'"max":{js}')
    blocks = '[{"p":' + text + ',"s":"' + P.sign(text.encode()) + '"}]'
    ctx = parley.GrantContext("s", "ASK", "c", NOW)
    check = parley.verify_grant(
        ["pg1." + _b64(blocks.encode())], trusted=[P.public], proof_key=A.public, ctx=ctx
    )
    assert (check.code, check.reason) == ("forbidden", "caveat_malformed")
    assert check.need == ({"per": {"currency": "USD", "max": number}},)
    # the same value in Python's spelling is another text: its signature does not verify
    python = repr(number)
    if python != js:
        other = blocks.replace(f'"max":{js}', f'"max":{python}')
        check = parley.verify_grant(
            ["pg1." + _b64(other.encode())], trusted=[P.public], proof_key=A.public, ctx=ctx
        )
        assert (check.code, check.reason) == ("unauthorized", "bad_signature")


def _signed_root(caveats: list[Any]) -> str:
    """A root grant P -> A signed over Python's sorted compact JSON (any nesting depth)."""
    payload = {"iss": P.public, "sub": A.public, "caveats": caveats, "iat": NOW, "nonce": "n"}
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "pg1." + _b64(('[{"p":' + text + ',"s":"' + P.sign(text.encode()) + '"}]').encode())


def test_deeply_nested_malformed_caveats_do_not_reach_the_reply() -> None:
    deep: Any = "x"
    for _ in range(800):
        deep = [deep]
    ctx = parley.GrantContext("s", "ASK", "c", NOW)
    check = parley.verify_grant(
        [_signed_root([{"geo": deep}])], trusted=[P.public], proof_key=A.public, ctx=ctx
    )
    assert (check.code, check.reason) == ("forbidden", "caveat_unknown")
    assert check.need == ({"nested": "too deep to show"},)
    shallow = {"geo": [[["x"]]]}
    check = parley.verify_grant(
        [_signed_root([shallow])], trusted=[P.public], proof_key=A.public, ctx=ctx
    )
    assert check.need == (shallow,)
