"""Regression tests for the adversarial review of the authorization core.

Each test names the attack it stops. Findings: small-order Ed25519 keys (anyone can "sign"
for them, so a grant held by one was usable by whoever saw it); control characters from a
service's consent rewriting the principal's approval prompt, and a consent approved with no
way to check its hash against the proposal; ambiguous ``auto:`` proof targets; unbounded
grant lists; deeply nested malformed caveats copied into every error reply; reference-signed
float caveats refused as bad tokens instead of failing closed; hand-built ``Grant`` objects
leaking ``KeyError``/``IndexError``; an unchecked ``principal`` in the grant context; keys
shown for approval before being checked; symlinked key files; a principal store inside the
agent's folder; an existing shared folder (``/tmp``) re-moded to ``0700``; ``OSError``
leaking from key stores. Plus an independent oracle for SPEC.md 6.3/6.4/6.6 and a fuzz of
the public functions.
"""

from __future__ import annotations

import base64
import json
import os
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import parley
from parley._keystore import PrincipalKeyStore

NOW = 1790000000
P = parley.key_from_seed(b"\x01" * 32)
A = parley.key_from_seed(b"\x02" * 32)
X = parley.key_from_seed(b"\x09" * 32)
PRIME = 2**255 - 19
SMALL_ORDER_Y = (
    0,
    1,
    PRIME - 1,
    2707385501144840649318225287225658788936804267575313519463743609750303402022,
    55188659117513257062467267217118295137698188065244968500265048394206261417927,
)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _key_text(raw: bytes) -> str:
    return "ed25519:" + _b64(raw)


IDENTITY = bytes([1]) + bytes(31)
WEAK = _key_text(IDENTITY)
FORGED = _b64(IDENTITY + bytes(32))  # R = identity, S = 0: "valid" for every message


def _weak_encodings() -> list[bytes]:
    out = []
    for y in SMALL_ORDER_Y:
        for sign in (0, 1):
            out.append((y | (sign << 255)).to_bytes(32, "little"))
    for y in (PRIME, PRIME + 1, 2**255 - 1):  # non-canonical spellings (y >= p)
        out.append(y.to_bytes(32, "little"))
    return out


# ------------------------------------------------------------------ small-order keys


def test_identity_key_forgery_is_refused_by_verify_signature() -> None:
    for message in (b"", b"any message at all", parley.canonical({"aud": "a", "ts": 1}).encode()):
        assert parley.keys.verify_signature(WEAK, message, FORGED) is False


@pytest.mark.parametrize("raw", _weak_encodings(), ids=lambda r: r.hex()[:8] + r.hex()[-2:])
def test_small_order_and_non_canonical_keys_are_refused(raw: bytes) -> None:
    text = _key_text(raw)
    with pytest.raises(parley.ParleyError) as caught:
        parley.keys.parse_public_key(text)
    assert caught.value.reason == "bad_key"
    assert parley.keys.verify_signature(text, b"m", FORGED) is False
    with pytest.raises(parley.ParleyError):
        parley.mint_grant(P, text, [], iat=NOW, nonce="n")


def test_forged_proof_under_a_small_order_key_is_refused() -> None:
    proof = {"key": WEAK, "ts": NOW, "sig": FORGED}
    with pytest.raises(parley.ParleyError) as caught:
        parley.verify_proof(proof, aud="shop.example", verb="ASK", target="shop.x", now=NOW)
    assert (caught.value.code, caught.value.reason) == ("unauthorized", "bad_proof_signature")


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


def test_honest_keys_still_verify() -> None:
    for byte in range(1, 40):
        key = parley.key_from_seed(bytes([byte]) * 32)
        assert parley.keys.parse_public_key(key.public)
        assert parley.keys.verify_signature(key.public, b"m", key.sign(b"m"))


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


# ------------------------------------------------------------------ proof targets


def test_auto_targets_are_unambiguous() -> None:
    # 'auto:a:b:c' would be capability 'a' frame 'b:c' and capability 'a:b' frame 'c'.
    assert (
        parley.grants.proof_target("INTENT", capability="a", auto=True, frame_id="b:c")
        == "auto:a:b:c"
    )
    with pytest.raises(parley.ParleyError) as caught:
        parley.grants.proof_target("INTENT", capability="a:b", auto=True, frame_id="c")
    assert caught.value.reason == "bad_target"
    # a plain INTENT on a capability spelled like an auto target would share its proof
    with pytest.raises(parley.ParleyError):
        parley.grants.proof_target("INTENT", capability="auto:a:b")
    assert parley.grants.proof_target("ASK", capability="auto:a:b") == "auto:a:b"  # verb differs


# ------------------------------------------------------------------ principal side


@pytest.fixture
def homes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    agent, principal = tmp_path / "agent", tmp_path / "principal"
    monkeypatch.setenv("PARLEY_HOME", str(agent))
    monkeypatch.setenv("PARLEY_PRINCIPAL_HOME", str(principal))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return agent, principal


SPOOF = "Order 2 coffees\x1b[2K\r  service    shop.example\n\u202eevil\u2028\x9b31m"


def _spoofed_consent(principal: str) -> dict[str, Any]:
    proposal = {
        "id": "p_1\x1b[8m",
        "capability": "bank.transfer\r",
        "summary": SPOOF,
        "effects": [],
        "cost": None,
        "risk": "high",
        "undo": None,
        "expires": NOW + 600,
    }
    return parley.consent_request(proposal, service="evil.example\x07", principal=principal)


def test_consent_text_cannot_rewrite_the_approval_prompt(homes: tuple[Path, Path]) -> None:
    store = PrincipalKeyStore()
    principal = store.create("principal")
    prompts: list[str] = []
    token = store.approve(
        _spoofed_consent(principal),
        A.public,
        confirm=lambda p: prompts.append(p) or True,
        iat=NOW,
    )
    (prompt,) = prompts
    lines = prompt.split("\n")
    assert len(lines) == 6  # the service cannot add or hide a line
    assert lines[1] == "  service    evil.example\\u0007"
    bad = [c for c in prompt if c != "\n" and unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp")]
    assert bad == []
    assert "\\u001b[2K\\u000d" in prompt
    assert "\\u202eevil\\u2028\\u009b31m" in prompt
    # the grant itself still binds the exact strings of the consent
    caveats = parley.inspect_grant(token)["blocks"][0]["caveats"]
    assert {"svc": ["evil.example\x07"]} in caveats


def test_approval_checks_the_agent_key_before_prompting(homes: tuple[Path, Path]) -> None:
    store = PrincipalKeyStore()
    principal = store.create("principal")
    prompts: list[str] = []
    consent = _spoofed_consent(principal)
    for bad_agent in ("ed25519:AAAA\n  looks fine", WEAK):
        with pytest.raises(parley.ParleyError) as caught:
            store.approve(consent, bad_agent, confirm=lambda p: prompts.append(p) or True, iat=NOW)
        assert caught.value.reason == "bad_key"
        with pytest.raises(parley.ParleyError):
            store.mint(bad_agent, [], confirm=lambda p: prompts.append(p) or True, iat=NOW)
    with pytest.raises(parley.ParleyError) as caught:
        store.mint(A.public, [{"risk": "toString"}], confirm=lambda p: True, iat=NOW)
    assert caught.value.reason == "caveat_malformed"
    assert prompts == []  # nothing was shown for a request that could not be signed


def test_symlinked_key_files_are_refused(homes: tuple[Path, Path], tmp_path: Path) -> None:
    agent_home, _ = homes
    store = parley.keys.AgentKeyStore()
    store.create("real")
    link = agent_home / "keys" / "agent.json"
    os.symlink(agent_home / "keys" / "real.json", link)
    with pytest.raises(parley.ParleyError) as caught:
        store.key("agent")
    assert caught.value.reason == "key_store_permissions"
    assert store.key("real").public == store.public("real")


def test_principal_store_refuses_the_agent_folder(
    homes: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    agent_home, _ = homes
    for home in (agent_home, agent_home / "principal", agent_home.parent):
        with pytest.raises(parley.ParleyError) as caught:
            PrincipalKeyStore(home)
        assert caught.value.reason == "principal_key_isolation"
    monkeypatch.setenv("PARLEY_PRINCIPAL_HOME", str(agent_home / "p"))
    with pytest.raises(parley.ParleyError):
        PrincipalKeyStore()


def test_inspect_output_escapes_terminal_controls(
    homes: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    from parley import _cli

    token = parley.mint_grant(P, A.public, [{"can": ["shop.\x9b2J\u202e*"]}], iat=NOW, nonce="n")
    assert _cli.main(["inspect", token]) == 0
    out = capsys.readouterr().out
    assert "\x9b" not in out
    assert "\u202e" not in out
    assert "\\u009b2J\\u202e" in out


def test_key_store_io_errors_are_parley_errors(homes: tuple[Path, Path], tmp_path: Path) -> None:
    in_the_way = tmp_path / "a-file"
    in_the_way.write_text("x", encoding="utf-8")
    for home in (in_the_way, in_the_way / "below", Path("/dev/null/x")):
        with pytest.raises(parley.ParleyError) as caught:
            parley.keys.AgentKeyStore(home).create("agent")
        assert caught.value.reason == "key_store"
    with pytest.raises(parley.ParleyError) as caught:
        parley.keys.AgentKeyStore().create("agent", "not a key")  # type: ignore[arg-type]
    assert caught.value.reason == "key_store"


# ------------------------------------------------------------------ spend splitting


def test_two_proposals_under_the_cap_cannot_exceed_it_together() -> None:
    token = parley.mint_grant(
        P, A.public, [{"spend": {"max": 10000, "currency": "USD"}}], iat=NOW, nonce="n"
    )
    ledger = parley.stores.MemorySpendLedger()
    outcomes = []
    for key, digest in (("p_1", "h1"), ("p_2", "h2")):
        blocks = parley.decode_grant(token).block_ids
        facts = parley.ProposalFacts(digest, parley.grants.Cost(6000, "USD"), "low")
        ctx = parley.GrantContext(
            "s", "COMMIT", "c", NOW, proposal=facts, spent=ledger.totals(blocks, excluding=key)
        )
        check = parley.verify_grant([token], trusted=[P.public], proof_key=A.public, ctx=ctx)
        if not check.ok:
            outcomes.append(check.code)
            continue
        assert ledger.reserve(key, list(check.spend_caps), 6000, "USD")
        ledger.commit(key)
        outcomes.append("ok")
    assert outcomes == ["ok", "consent_required"]
    # the retry of the first is not refused by its own spend, and is not counted twice
    blocks = parley.decode_grant(token).block_ids
    facts = parley.ProposalFacts("h1", parley.grants.Cost(6000, "USD"), "low")
    ctx = parley.GrantContext(
        "s", "COMMIT", "c", NOW, proposal=facts, spent=ledger.totals(blocks, excluding="p_1")
    )
    check = parley.verify_grant([token], trusted=[P.public], proof_key=A.public, ctx=ctx)
    assert check.ok
    assert ledger.reserve("p_1", list(check.spend_caps), 6000, "USD") is False
    assert ledger.totals(blocks) == {blocks[0]: 6000}


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


def test_an_existing_shared_folder_is_refused_not_re_moded(
    homes: tuple[Path, Path], tmp_path: Path
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)  # noqa: S103 - like /tmp, the folder under test
    with pytest.raises(parley.ParleyError) as caught:
        parley.keys.AgentKeyStore(shared).create("agent")
    assert caught.value.reason == "key_store_permissions"
    assert shared.stat().st_mode & 0o7777 == 0o1777
    assert not (shared / "keys").exists()


def test_signatures_are_not_malleable() -> None:
    # S + L verifies under a lax verifier; the backend must refuse it (and keep refusing).
    order = 2**252 + 27742317777372353535851937790883648493
    sig = base64.urlsafe_b64decode(A.sign(b"m") + "==")
    s = int.from_bytes(sig[32:], "little") + order
    assert s < 2**256
    mauled = _b64(sig[:32] + s.to_bytes(32, "little"))
    assert parley.keys.verify_signature(A.public, b"m", mauled) is False


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


def test_approve_with_the_proposal_checks_the_hash_and_shows_the_effects(
    homes: tuple[Path, Path],
) -> None:
    store = PrincipalKeyStore()
    principal = store.create("principal")
    proposal = {
        "id": "p_1",
        "capability": "shop.order",
        "summary": "Order 2 coffees",
        "effects": [{"op": "charge", "target": "card\x1b[2K", "to": 1250}],
        "cost": {"amount": 1250, "currency": "USD"},
        "risk": "medium",
        "undo": {"window": 600},
        "expires": NOW + 600,
    }
    consent = parley.consent_request(proposal, service="shop.example", principal=principal)
    prompts: list[str] = []

    def confirm(prompt: str) -> bool:
        prompts.append(prompt)
        return True

    # a consent whose hash is not the hash of the proposal shown is refused unprompted
    swapped = {**proposal, "effects": [{"op": "charge", "target": "card", "to": 99999}]}
    with pytest.raises(parley.ParleyError) as caught:
        store.approve(consent, A.public, confirm=confirm, iat=NOW, proposal=swapped)
    assert caught.value.reason in ("consent_mismatch", "hash_mismatch")
    assert prompts == []
    token = store.approve(consent, A.public, confirm=confirm, iat=NOW, proposal=proposal)
    (prompt,) = prompts
    assert '  effect     {"op": "charge", "target": "card\\u001b[2K", "to": 1250}' in prompt
    assert '  cost       {"amount": 1250, "currency": "USD"}' in prompt
    assert "  risk       medium" in prompt
    assert {"only": consent["hash"]} in parley.inspect_grant(token)["blocks"][0]["caveats"]


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


# ------------------------------------------------------------------ fuzz: ParleyError only

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


def test_consent_for_shown_can_pin_the_principal() -> None:
    proposal = {
        "id": "p_1",
        "capability": "shop.order",
        "summary": "Order 2 coffees",
        "effects": [],
        "cost": None,
        "risk": "high",
        "undo": None,
        "expires": NOW + 600,
    }
    other = parley.key_from_seed(b"\x05" * 32).public
    request = parley.consent_request(proposal, service="shop.example", principal=other)
    with pytest.raises(parley.ParleyError) as caught:
        parley.grants.consent_for_shown(
            proposal, service="shop.example", request=request, principals=[P.public]
        )
    assert (caught.value.code, caught.value.reason) == ("conflict", "consent_mismatch")
    ok = parley.grants.consent_for_shown(
        proposal, service="shop.example", request=request, principals={P.public, other}
    )
    assert ok["principal"] == other
    assert parley.grants.consent_for_shown(proposal, service="shop.example", request=request) == ok
    with pytest.raises(parley.ParleyError):
        parley.grants.consent_for_shown(
            proposal,
            service="shop.example",
            request=request,
            principals=other,  # type: ignore[arg-type]
        )
