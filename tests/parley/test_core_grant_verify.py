"""Grant verification (SPEC.md section 6.4): steps 1 to 6 against one request.

Signatures, ``prev`` links, a trusted root, the holder, then every caveat; several grants
and their precedence; an independent oracle of sections 6.3, 6.4 and 6.6; and a
:class:`parley.GrantVerifier`, which answers exactly as one-shot verification and whose
memory is its own (DESIGN.md, "Speed without hidden state").

Private imports: :class:`parley.GrantVerifier` is a fast path (it remembers decoded tokens)
held to one-shot verification, its oracle; the tests count decodings by spying on
``parley._grant_verify.decode_grant``, the only observable of that memory, and read its
private limit ``MAX_REMEMBERED_TOKEN_LENGTH``.
"""

from __future__ import annotations

import ast
import base64
import copy
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import parley
from parley import _grant_verify

from .caveat_strategies import _caveats, _good_caveats
from .orders import commit_check

A = parley.key_from_seed(b"\x02" * 32)
HASH = "3YBSE3lWje0kWnzf3PaGMr3CI3aoO1qdYRLxUkmOJVU"
NOW = 1790000000
X = parley.key_from_seed(b"\x09" * 32)
P = parley.key_from_seed(b"\x01" * 32)
OTHER = "PqsYTM44f4k6sArmFNbQ1vxLHgmkxlCyiYOcqKjy8Iw"
S = parley.key_from_seed(b"\x03" * 32)
IDENTITY = bytes([1]) + bytes(31)
_RISK = {"low": 0, "medium": 1, "high": 2}
B = parley.key_from_seed(b"\x03" * 32)
SAFE = 2**53 - 1
CTX = parley.GrantContext("shop.example", "ASK", "shop.search", NOW)
OWN_FILES = {"_schemas.py"}
OP = parley.key_from_seed(b"\x05" * 32)


def ctx(**kw: Any) -> parley.GrantContext:
    base: dict[str, Any] = {
        "service": "shop.example",
        "verb": "COMMIT",
        "capability": "shop.order",
        "now": NOW,
        "proposal": parley.ProposalFacts(HASH, parley.grants.Cost(1250, "USD"), "low"),
    }
    base.update(kw)
    return parley.GrantContext(**base)


def check(tokens: Any, holder: parley.Key = A, **kw: Any) -> parley.GrantCheck:
    return parley.verify_grant(tokens, trusted=[P.public], proof_key=holder.public, ctx=ctx(**kw))


def mint(caveats: list[Any], sub: parley.Key = A, nonce: str = "n") -> str:
    return parley.mint_grant(P, sub.public, caveats, iat=NOW, nonce=nonce)


def test_multi_grant_precedence() -> None:
    ok = mint([], nonce="ok")
    forbidden = mint([{"svc": ["other"]}], nonce="f")
    soft = mint([{"risk": "low"}], nonce="s")
    untrusted = parley.mint_grant(X, A.public, [], iat=NOW, nonce="x")
    risky = {"proposal": parley.ProposalFacts(HASH, None, "high")}
    assert check([forbidden, ok]).index == 1
    assert check([untrusted, forbidden], **risky).code == "forbidden"
    result = check([forbidden, soft, untrusted], **risky)
    assert (result.code, result.index) == ("consent_required", 1)
    assert check([untrusted, "pg1.x"]).reason == "untrusted_issuer"
    assert check([]).reason == "no_grant"
    assert check("not a list but one token").reason == "bad_token"


def test_raise_for_failure() -> None:
    passed = check(mint([]))
    assert passed.raise_for_failure() is passed  # the verified check, to read grant and caps
    token = mint([{"spend": {"max": 5000, "currency": "USD"}}], nonce="caps")
    verified = check([token]).raise_for_failure()
    assert (verified.grant, verified.principal, verified.holder) == (
        parley.decode_grant(token).id,
        P.public,
        A.public,
    )
    assert [(c.max, c.currency) for c in verified.spend_caps] == [(5000, "USD")]
    with pytest.raises(parley.ParleyError) as caught:
        check(mint([{"svc": ["x"]}])).raise_for_failure()
    assert (caught.value.code, caught.value.reason) == ("forbidden", "caveat_failed")


def test_context_validation() -> None:
    with pytest.raises(parley.ParleyError):
        parley.GrantContext("s", "COMMIT", "c", NOW, proposal={"hash": "h"})  # type: ignore[arg-type]
    with pytest.raises(parley.ParleyError):
        parley.GrantContext("s", "ASK", "c", "now")  # type: ignore[arg-type]
    with pytest.raises(parley.ParleyError):
        parley.GrantContext("s", "ASK", "c", NOW, spent={"b": -1})
    with pytest.raises(parley.ParleyError):
        parley.ProposalFacts.from_json(
            {"hash": "h", "cost": {"amount": 1.5, "currency": "USD"}, "risk": "low"}
        )
    with pytest.raises(parley.ParleyError):
        parley.ProposalFacts.from_json({"hash": "h", "cost": None, "risk": "toString"})


RANDOM_TOKEN_TEXT = st.one_of(
    st.text(max_size=40),
    st.builds(lambda s: "pg1." + s, st.text(alphabet="ABCDEFabcdef0123456789-_=", max_size=60)),
    st.builds(
        lambda v: "pg1." + parley.wire.b64url_encode(json.dumps(v).encode()),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=5),
            lambda inner: (
                st.lists(inner, max_size=3)
                | st.dictionaries(
                    st.sampled_from(["p", "s", "iss", "sub", "caveats", "iat", "nonce", "prev"]),
                    inner,
                    max_size=5,
                )
            ),
            max_leaves=12,
        ),
    ),
    st.integers(),
    st.none(),
)


@settings(max_examples=300)
@given(st.lists(RANDOM_TOKEN_TEXT, max_size=3))
def test_verify_grant_never_raises_on_junk(tokens: list[Any]) -> None:
    result = check(tokens)
    assert result.ok is False
    assert result.code in ("unauthorized", "forbidden", "consent_required")


CAVEATS = st.one_of(
    st.builds(
        lambda v: {"svc": v}, st.lists(st.sampled_from(["shop.example", "a", "b"]), max_size=2)
    ),
    st.builds(
        lambda v: {"verbs": v},
        st.lists(st.sampled_from(["ASK", "INTENT", "COMMIT", "UNDO"]), max_size=3),
    ),
    st.builds(
        lambda v: {"can": v},
        st.lists(st.sampled_from(["*", "shop.*", "shop.o*", "shop.order", "bank.*"]), max_size=2),
    ),
    st.builds(lambda v: {"exp": NOW + v}, st.integers(-3, 3)),
    st.builds(lambda v: {"nbf": NOW + v}, st.integers(-3, 3)),
    st.builds(
        lambda m, c: {"per": {"max": m, "currency": c}},
        st.integers(0, 3000),
        st.sampled_from(["USD", "EUR"]),
    ),
    st.builds(
        lambda m, c: {"spend": {"max": m, "currency": c}},
        st.integers(0, 3000),
        st.sampled_from(["USD", "EUR"]),
    ),
    st.builds(lambda v: {"risk": v}, st.sampled_from(["low", "medium", "high"])),
    st.builds(lambda v: {"only": v}, st.sampled_from([HASH, OTHER])),
)


CONTEXTS = st.builds(
    lambda svc, verb, cap, dt, amount, cur, risk, h, spent: ctx(
        service=svc,
        verb=verb,
        capability=cap,
        now=NOW + dt,
        proposal=parley.ProposalFacts(
            h, None if amount is None else parley.grants.Cost(amount, cur), risk
        )
        if verb == "COMMIT"
        else None,
        spent=spent,
    ),
    st.sampled_from(["shop.example", "a", "b"]),
    st.sampled_from(["ASK", "INTENT", "COMMIT", "UNDO"]),
    st.sampled_from(["shop.order", "shop.search", "bank.pay"]),
    st.integers(-4, 4),
    st.none() | st.integers(0, 3500),
    st.sampled_from(["USD", "EUR"]),
    st.sampled_from(["low", "medium", "high"]),
    st.sampled_from([HASH, OTHER]),
    st.just({}),
)


def _raw_delegate(token: str, signer: parley.Key, sub: parley.Key, caveats: list[Any]) -> str:
    """Append a block without delegate()'s narrowing check (an attacker's own tool)."""
    grant = parley.decode_grant(token)
    payload = {"prev": grant.blocks[-1].id, "sub": sub.public, "caveats": caveats, "iat": NOW}
    block = {"p": payload, "s": signer.sign(parley.canonical(payload).encode())}
    blocks = [b.as_json() for b in grant.blocks] + [block]
    return "pg1." + parley.wire.b64url_encode(parley.canonical(blocks).encode())


@settings(max_examples=300)
@given(st.lists(CAVEATS, max_size=3), st.lists(CAVEATS, max_size=3), CONTEXTS)
def test_delegation_never_authorizes_more_than_its_parent(
    parent_caveats: list[Any], child_caveats: list[Any], context: parley.GrantContext
) -> None:
    parent = mint(parent_caveats, nonce="prop")
    child = _raw_delegate(parent, A, S, child_caveats)
    parent_result = parley.verify_grant(parent, trusted=[P.public], proof_key=A.public, ctx=context)
    child_result = parley.verify_grant(child, trusted=[P.public], proof_key=S.public, ctx=context)
    if child_result.ok:
        assert parent_result.ok
    if parent_result.code == "forbidden":
        assert child_result.code == "forbidden"


TOP = Path(__file__).resolve().parents[2]


def test_upstream_format_grants_file_matches_verify_suite() -> None:
    data = json.loads(
        (TOP / "vectors/parley/upstream-format/grants.json").read_text(encoding="utf-8")
    )
    assert len(data["cases"]) >= 26
    codes = {c["expect"].get("code") for c in data["cases"]}
    assert codes == {None, "unauthorized", "forbidden", "consent_required"}


def test_commit_without_proposal_fails_commit_caveats_hard() -> None:
    capped = mint([{"per": {"max": 10, "currency": "USD"}}], nonce="np")
    result = parley.verify_grant(
        capped,
        trusted=[P.public],
        proof_key=A.public,
        ctx=parley.GrantContext("shop.example", "COMMIT", "shop.order", NOW),
    )
    assert (result.code, result.reason) == ("forbidden", "caveat_failed")
    free = parley.verify_grant(
        mint([{"svc": ["shop.example"]}], nonce="nf"),
        trusted=[P.public],
        proof_key=A.public,
        ctx=parley.GrantContext("shop.example", "COMMIT", "shop.order", NOW),
    )
    assert free.ok


# -------------------------------- forged chains, bounds, lenient signers, an oracle


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


FORGED = _b64(IDENTITY + bytes(32))  # R = identity, S = 0: "valid" for every message


def _key_text(raw: bytes) -> str:
    return "ed25519:" + _b64(raw)


WEAK = _key_text(IDENTITY)


def test_stranger_cannot_extend_a_grant_held_by_a_small_order_key() -> None:
    # A careless (or malicious) holder delegated to the identity point. Under OpenSSL's
    # equation anyone could then append a block for themselves; the block must not verify.
    root_payload = {"iss": P.public, "sub": WEAK, "caveats": [], "iat": NOW, "nonce": "n"}
    root = {"p": root_payload, "s": P.sign(parley.canonical(root_payload).encode())}
    forged = {
        "p": {
            "prev": parley.grants.block_id(root["s"]),
            "sub": X.public,
            "caveats": [],
            "iat": NOW,
        },
        "s": FORGED,
    }
    token = "pg1." + _b64(parley.canonical([root, forged]).encode())
    ctx = parley.GrantContext("shop.example", "ASK", "shop.x", NOW)
    check = parley.verify_grant([token], trusted=[P.public], proof_key=X.public, ctx=ctx)
    assert (check.ok, check.code, check.reason) == (False, "unauthorized", "bad_signature")
    assert parley.inspect_grant(token)["signatures"] is False


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


_KEYS = [parley.key_from_seed(bytes([b]) * 32) for b in range(1, 6)]


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


# -------------------------------- a GrantVerifier answers as verify_grant


_caveat_lists = st.builds(
    lambda good, bad, use_bad: [*good, bad] if use_bad else good,
    st.lists(_good_caveats, max_size=3),
    _caveats,
    st.sampled_from([False, False, False, False, True]),
)


def _check_all(
    token: str, holder: str, ctx: parley.GrantContext
) -> tuple[list[parley.GrantCheck], parley.GrantVerifier]:
    """A fresh verifier's first and second answer, and two one-shot answers."""
    verifier = parley.GrantVerifier()
    cold = verifier.verify([token], trusted=[P.public], proof_key=holder, ctx=ctx)
    warm = verifier.verify([token], trusted=[P.public], proof_key=holder, ctx=ctx)
    plain = parley.verify_grant([token], trusted=[P.public], proof_key=holder, ctx=ctx)
    public = parley.verify_grant(token, trusted=frozenset({P.public}), proof_key=holder, ctx=ctx)
    return [cold, warm, plain, public], verifier


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


def _signed(key: parley.Key, payload: dict[str, Any]) -> dict[str, Any]:
    """Sign like a lenient signer: unsafe integers and floats are written, not refused."""
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return {"p": payload, "s": key.sign(text.encode())}


def _token(blocks: list[dict[str, Any]]) -> str:
    text = json.dumps(blocks, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "pg1." + base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


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


def _hashable(value: object) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


@settings(max_examples=200, deadline=None)
@given(
    _caveat_lists,
    st.one_of(st.none(), _caveat_lists),
    _contexts,
    st.sampled_from([1, 2, 3, 4, 5, 6, 7, 8, 9, 0]),
)
def test_a_verifier_answers_exactly_as_one_shot_verification(
    root: list[Any], second: list[Any] | None, ctx: parley.GrantContext, holder_pick: int
) -> None:
    token = _grant(root, second)
    holder = P.public if holder_pick == 0 else (B if second is not None else A).public
    (cold, warm, plain, public), verifier = _check_all(token, holder, ctx)
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
    again = verifier.verify([token], trusted=[P.public], proof_key=holder, ctx=ctx)
    assert again == parley.verify_grant([token], trusted=[P.public], proof_key=holder, ctx=ctx)
    assert again == plain


def test_an_ok_result_equals_one_built_by_its_constructor() -> None:
    token = parley.mint_grant(
        P, A.public, [{"spend": {"max": 100, "currency": "USD"}}, {"svc": ["s"]}], iat=NOW
    )
    ctx = parley.GrantContext(
        "s", "COMMIT", "c", NOW, parley.ProposalFacts("h", parley.grants.Cost(5, "USD"), "low")
    )
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


def test_a_verifier_still_verifies_every_signature() -> None:
    good = parley.mint_grant(P, A.public, [], iat=NOW, nonce="n")
    grant = parley.decode_grant(good)
    other = parley.key_from_seed(b"\x07" * 32)
    # The same payload signed by an untrusted key: another token text, refused every time.
    forged = _token([{"p": dict(grant.blocks[0].payload), "s": other.sign(grant.blocks[0].signed)}])
    ctx = parley.GrantContext("s", "ASK", None, NOW)
    verifier = parley.GrantVerifier()
    for _ in range(3):
        assert verifier.verify(good, trusted=[P.public], proof_key=A.public, ctx=ctx).ok
        bad = verifier.verify(forged, trusted=[P.public], proof_key=A.public, ctx=ctx)
        assert bad.reason == "bad_signature"
        # trust is the caller's on every call, never remembered with the token
        gone = verifier.verify(good, trusted=[other.public], proof_key=A.public, ctx=ctx)
        assert gone.reason == "untrusted_issuer"
    # The remembered grant's payload objects are never handed out by decode_grant either.
    assert parley.decode_grant(good).blocks[0].payload is not grant.blocks[0].payload


# -------------------------------- a verifier's memory is its own (DESIGN.md)


def _minted(nonce: str) -> str:
    return parley.mint_grant(P, A.public, [{"svc": ["shop.example"]}], iat=NOW, nonce=nonce)


def _verify(verifier: parley.GrantVerifier | None, token: str) -> parley.GrantCheck:
    if verifier is None:
        return parley.verify_grant(token, trusted=[P.public], proof_key=A.public, ctx=CTX)
    return verifier.verify(token, trusted=[P.public], proof_key=A.public, ctx=CTX)


@pytest.fixture
def decodes(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every token the verification path decodes, in order."""
    seen: list[object] = []
    real = _grant_verify.decode_grant

    def spy(token: object) -> parley.grants.Grant:
        seen.append(token)
        return real(token)

    monkeypatch.setattr(_grant_verify, "decode_grant", spy)
    return seen


def test_a_fresh_verifier_decodes_a_token_another_verifier_has_seen(decodes: list[object]) -> None:
    token = _minted("fresh")
    first = parley.GrantVerifier()
    assert _verify(first, token).ok
    assert _verify(first, token).ok
    assert decodes == [token]  # the verifier that saw it decodes it once
    assert _verify(parley.GrantVerifier(), token).ok
    assert decodes == [token, token]  # a new verifier has seen nothing


def test_verify_grant_remembers_nothing_between_calls(decodes: list[object]) -> None:
    token = _minted("one-shot")
    for _ in range(3):
        assert _verify(None, token).ok
    assert decodes == [token] * 3


def test_a_verifier_remembers_the_most_recently_used_tokens_up_to_its_size(
    decodes: list[object],
) -> None:
    one, two, three = _minted("1"), _minted("2"), _minted("3")
    verifier = parley.GrantVerifier(remember=2)
    for token in (one, two, one, three):  # three pushes out two, the least recently used
        assert _verify(verifier, token).ok
    assert decodes == [one, two, three]
    assert _verify(verifier, one).ok
    assert _verify(verifier, two).ok
    assert decodes == [one, two, three, two]


def test_a_verifier_of_size_zero_and_long_tokens_are_never_remembered(
    decodes: list[object],
) -> None:
    short = _minted("zero")
    nothing = parley.GrantVerifier(remember=0)
    assert _verify(nothing, short).ok
    assert _verify(nothing, short).ok
    assert decodes == [short, short]
    long = parley.mint_grant(
        P, A.public, [{"svc": [f"s{n}.example" for n in range(300)] + ["shop.example"]}], iat=NOW
    )
    assert len(long) > _grant_verify.MAX_REMEMBERED_TOKEN_LENGTH
    verifier = parley.GrantVerifier()
    assert _verify(verifier, long).ok
    assert _verify(verifier, long).ok
    assert decodes == [short, short, long, long]


def test_a_bad_token_is_never_remembered(decodes: list[object]) -> None:
    verifier = parley.GrantVerifier()
    for _ in range(2):
        assert _verify(verifier, "pg1.e30").reason == "bad_token"
    assert decodes == ["pg1.e30", "pg1.e30"]


def _unsigned(nonce: str) -> str:
    """A well-formed token whose signature is junk (anyone can make one)."""
    payload = {"iss": P.public, "sub": A.public, "caveats": [], "iat": NOW, "nonce": nonce}
    return "pg1." + parley.wire.b64url_encode(parley.canonical([{"p": payload, "s": "x"}]).encode())


def test_only_a_chain_that_passes_steps_2_to_5_is_remembered(decodes: list[object]) -> None:
    # A flood of junk must neither occupy a verifier's memory nor push trusted grants out.
    verifier = parley.GrantVerifier(remember=4)
    good = _minted("kept")
    assert _verify(verifier, good).ok
    stranger = parley.key_from_seed(b"\x07" * 32)
    junk = [_unsigned(f"u{n}") for n in range(6)]  # step 2 fails
    junk += [parley.mint_grant(stranger, A.public, [], iat=NOW, nonce=f"s{n}") for n in range(6)]
    junk += [parley.mint_grant(P, stranger.public, [], iat=NOW, nonce=f"h{n}") for n in range(6)]
    expected = ["bad_signature"] * 6 + ["untrusted_issuer"] * 6 + ["holder_mismatch"] * 6
    for _ in range(2):
        assert [_verify(verifier, token).reason for token in junk] == expected
    assert decodes == [good, *junk, *junk]  # every junk token decoded again, each time
    assert _verify(verifier, good).ok
    assert decodes == [good, *junk, *junk]  # the trusted grant is still remembered


class _SameAsEverything(str):
    """A str subclass that claims to equal any string (a poisoned cache key)."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return True

    def __hash__(self) -> int:
        return hash(str(self))


def test_a_str_subclass_is_decoded_afresh_not_matched_against_memory() -> None:
    verifier = parley.GrantVerifier()
    good = _minted("subclass")
    assert _verify(verifier, good).ok
    other = parley.key_from_seed(b"\x07" * 32)
    forged = parley.mint_grant(other, A.public, [], iat=NOW, nonce="subclass")
    check = verifier.verify(
        _SameAsEverything(forged), trusted=[P.public], proof_key=A.public, ctx=CTX
    )
    assert (check.ok, check.reason) == (False, "untrusted_issuer")


@pytest.mark.parametrize("remember", [-1, 1.5, "256", True, None])
def test_a_verifier_refuses_a_size_that_is_not_a_count(remember: Any) -> None:
    with pytest.raises(parley.ParleyUsageError) as caught:
        parley.GrantVerifier(remember=remember)
    assert (caught.value.code, caught.value.reason) == ("bad_argument", "bad_argument")


def test_one_verifier_shared_by_threads_gives_every_thread_its_own_answer() -> None:
    tokens = [_minted(f"t{n}") for n in range(6)]
    expected = [_verify(None, t) for t in tokens]
    verifier = parley.GrantVerifier(remember=3)  # smaller than the set: constant eviction
    errors: list[BaseException] = []

    def work(offset: int) -> None:
        try:
            for n in range(60):
                index = (n + offset) % len(tokens)
                assert _verify(verifier, tokens[index]) == expected[index]
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors


def _module_memory(tree: ast.Module) -> list[str]:
    """Module-level caches in ``tree``: cache decorators, and module containers that a
    function writes into (``NAME[k] = v``, ``NAME.update(...)``, ``global NAME``)."""
    found: list[str] = []
    containers: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            value = node.value
            mutable = isinstance(value, (ast.Dict, ast.List, ast.Set)) or (
                isinstance(value, ast.Call)
                and isinstance(value.func, ast.Name)
                and value.func.id in {"dict", "list", "set", "OrderedDict", "defaultdict"}
            )
            if mutable:
                containers.update(t.id for t in targets if isinstance(t, ast.Name))
    writers = {"update", "setdefault", "append", "add", "extend", "insert", "pop", "clear"}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for deco in node.decorator_list:
                text = ast.unparse(deco)
                if "lru_cache" in text or text in {"cache", "functools.cache"}:
                    found.append(f"{node.name}: @{text}")
            for inner in ast.walk(node):
                if isinstance(inner, ast.Global):
                    found.append(f"{node.name}: global {', '.join(inner.names)}")
                targets: list[ast.expr] = []
                if isinstance(inner, (ast.Assign, ast.Delete)):
                    targets = list(inner.targets)
                elif isinstance(inner, ast.AugAssign):
                    targets = [inner.target]
                for target in targets:
                    if (
                        isinstance(target, ast.Subscript)
                        and isinstance(target.value, ast.Name)
                        and target.value.id in containers
                    ):
                        found.append(f"{node.name}: writes {target.value.id}[...]")
                if (
                    isinstance(inner, ast.Call)
                    and isinstance(inner.func, ast.Attribute)
                    and isinstance(inner.func.value, ast.Name)
                    and inner.func.value.id in containers
                    and inner.func.attr in writers
                ):
                    found.append(f"{node.name}: {inner.func.value.id}.{inner.func.attr}()")
    return found


def test_the_module_memory_check_finds_the_caches_it_looks_for() -> None:
    planted = ast.parse(
        "import functools\n_SEEN = {}\n_LOG = []\n"
        "@functools.lru_cache(maxsize=9)\ndef a(x): return x\n"
        "def b(x):\n    _SEEN[x] = 1\n    _LOG.append(x)\n"
        "def c():\n    global _N\n"
    )
    assert _module_memory(planted) == [
        "a: @functools.lru_cache(maxsize=9)",
        "b: writes _SEEN[...]",
        "b: _LOG.append()",
        "c: global _N",
    ]


SRC = Path(__file__).resolve().parents[2] / "src" / "parley"


def test_no_parley_module_keeps_process_wide_memory() -> None:
    found = {
        path.name: memory
        for path in sorted(SRC.glob("*.py"))
        if path.name not in OWN_FILES
        and (memory := _module_memory(ast.parse(path.read_text(encoding="utf-8"))))
    }
    assert found == {}
    assert all((SRC / name).exists() for name in OWN_FILES)


def test_the_service_keeps_its_own_verifier() -> None:
    one = parley.Service("a.example", name="A", trusted=[P.public])
    two = parley.Service("b.example", name="B", trusted=[P.public])
    mine: Callable[[parley.Service], object] = lambda s: [  # noqa: E731
        v for v in vars(s).values() if isinstance(v, parley.GrantVerifier)
    ]
    assert len(mine(one)) == 1
    assert len(mine(two)) == 1
    assert mine(one)[0] is not mine(two)[0]


# -------------------------------- the operation's principal


def test_grant_selection_respects_the_principal_of_the_operation() -> None:
    mine = parley.mint_grant(P, A.public, [], iat=NOW, nonce="mine")
    theirs = parley.mint_grant(OP, A.public, [], iat=NOW, nonce="theirs")
    result = commit_check([theirs, mine], verb="UNDO", proposal=None, principal=P.public)
    assert result.ok
    assert result.index == 1
    assert result.principal == P.public
    denied = commit_check([theirs], verb="UNDO", proposal=None, principal=P.public)
    assert (denied.code, denied.reason) == ("forbidden", "principal_mismatch")
