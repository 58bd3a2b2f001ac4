"""Lens byte-exact with the reference (issue 21): each test holds one finding.

Expectations are the reference's behaviour as SPEC.md section 9.2 and NOTES.md state it, and
as JavaScript evaluates the template (truthiness, UTF-16 strings).
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import parley

from .fit_oracle import PLACEHOLDER, fit_oracle
from .runtime_harness import AGENT, PRINCIPAL, SERVICE_ID, grant, load_shop

SHOP = load_shop()
NOW = 1_790_000_000


def effect_line(effect: dict[str, Any]) -> str:
    """The Lens line of ``effect`` in a PROPOSALS reply (the line under the summary)."""
    proposal = {
        "id": "p_1",
        "capability": "c",
        "summary": "s",
        "effects": [effect],
        "cost": None,
        "risk": "low",
        "undo": None,
        "expires": NOW,
        "hash": "h",
    }
    lines = parley.lens.lens({"kind": "PROPOSALS", "proposals": [proposal]}).splitlines()
    assert lines[1] == "[p_1] s"
    return lines[2].removeprefix("  ")


def u16_len(text: str) -> int:
    """The length of ``text`` in UTF-16 code units (a JavaScript string's length)."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


# -------------------------------- finding 2: effect `field`


@pytest.mark.parametrize("field", ["", None, 0, 0.0, False])
def test_an_effect_field_that_is_not_truthy_is_not_rendered(field: Any) -> None:
    effect = {"op": "update", "target": "event/e42", "field": field, "from": 1, "to": 2}
    assert effect_line(effect) == "~ update event/e42: 1 → 2"


@pytest.mark.parametrize(
    ("field", "shown"), [("start", "start"), (1, "1"), (True, "true"), ("-", "-"), (" ", " ")]
)
def test_a_truthy_effect_field_is_rendered(field: Any, shown: str) -> None:
    effect = {"op": "delete", "target": "t", "field": field}
    assert effect_line(effect) == f"- delete t.{shown}"


@pytest.mark.parametrize("detail", ["", None, 0, False])
def test_an_effect_detail_that_is_not_truthy_is_not_rendered(detail: Any) -> None:
    assert effect_line({"op": "send", "target": "ana", "detail": detail}) == "> send ana"


def test_effect_fields_in_a_whole_reply() -> None:
    reply = {
        "kind": "RECEIPT",
        "auto": True,
        "receipt": {
            "id": "r_1",
            "summary": "Done",
            "undo": None,
            "effects": [
                {"op": "update", "target": "a", "field": ""},
                {"op": "update", "target": "b", "field": "x"},
            ],
        },
    }
    assert (
        parley.lens.lens(reply)
        == "✓ Done (receipt r_1) · irreversible\n  ~ update a\n  ~ update b.x"
    )


@pytest.mark.parametrize("blank", ["", None, 0, False])
def test_brief_summaries_and_risk_follow_the_same_truthiness(blank: Any) -> None:
    reply = {
        "kind": "BRIEF",
        "service": {"id": "s", "name": "S", "summary": blank},
        "capabilities": [{"kind": "ask", "name": "a", "summary": blank, "risk": blank}],
    }
    assert parley.lens.lens(reply) == "# S (s)\nask a()"


# -------------------------------- finding 3: lone surrogates


def test_lean_writes_a_lone_surrogate_raw_as_the_reference_quote_does() -> None:
    assert parley.lens.lean({"t": "a\ud83d"}) == 't: "a\ud83d"'
    assert parley.lens.lean(["\ude00", "x"]) == 'items: ["\ude00", x]'
    assert parley.lens.lean({"k\udfff": 1}) == '"k\udfff": 1'


def test_compact_json_still_escapes_a_lone_surrogate_as_json_stringify_does() -> None:
    # ES2019 well-formed JSON.stringify: used in fix params, need, and nested list items
    assert parley.lens.lean({"x": [["a\ud83d", {}], 1]}) == 'x[2]:\n  - ["a\\ud83d",{}]\n  - 1'
    assert (
        parley.lens.lean({"x": [["\ud83d", {}], {"y": 1}]}) == 'x[2]:\n  - ["\\ud83d",{}]\n  - y: 1'
    )


def test_a_cut_through_an_emoji_fits_the_reference_unit_count() -> None:
    # "a" + 300 emoji is 601 UTF-16 units; the first cut keeps 300 units, which ends
    # inside an emoji and leaves its high surrogate alone. The reference counts that
    # surrogate as one token; escaped as \ud83d it would count four, so at this budget
    # the escaped text needs a second cut (to 200 units) and the raw one does not.
    text = "a" + "\U0001f600" * 300
    kept = "a" + "\U0001f600" * 149 + "\ud83d"
    rest = "\ude00" + "\U0001f600" * 150
    shown = f't: "{kept}…"\n… 301 more at data.t — EXPAND {PLACEHOLDER} (~151 tokens)'
    budget = parley.lens.estimate(shown)
    reply = {"kind": "ANSWER", "data": {"t": text}}
    fitted, parked = parley.lens.fit(reply, budget, handles=iter(["h_one"]).__next__)
    assert fitted["data"]["t"] == kept + "…"
    assert u16_len(fitted["data"]["t"]) == 301
    assert parked["h_one"] == rest
    assert parley.lens.lens(fitted).startswith(f't: "{kept}…"')
    assert fit_oracle(reply, budget, handles=iter(["h_one"]).__next__) == (fitted, parked)


def test_the_cli_writes_a_lone_surrogate_as_u_fffd(tmp_path: Path) -> None:
    source = tmp_path / "value.json"
    source.write_text(json.dumps({"t": "a" + "\U0001f600" * 300}), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "parley", "lens", str(source), "--budget", "173"],
        capture_output=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout.decode("utf-8")  # strict: every byte is UTF-8
    assert out.startswith('t: "a' + "\U0001f600" * 149 + '\ufffd…"\n… 301 more at data.t')


# -------------------------------- finding 4: consent_required


def _send(service: Any, frame: dict[str, Any]) -> dict[str, Any]:
    replies: list[dict[str, Any]] = service.handle(frame, now=NOW)
    return replies[-1]


def test_consent_required_carries_only_consent_as_the_reference_authorize_does() -> None:
    service = SHOP.build_service(
        trusted=[PRINCIPAL.public], store=parley.stores.MemoryStore(), clock=lambda: NOW
    )
    target = parley.grants.proof_target(
        "INTENT", capability="shop.gift_card", auto=False, frame_id="i1"
    )
    intent = {
        "parley": 1,
        "id": "i1",
        "verb": "INTENT",
        "capability": "shop.gift_card",
        "params": {"to": "a@example.com", "usd": 50},
        "proof": parley.sign_proof(AGENT, aud=SERVICE_ID, verb="INTENT", target=target, ts=NOW),
    }
    proposal = _send(service, intent)["proposals"][0]
    commit = {
        "parley": 1,
        "id": "c1",
        "verb": "COMMIT",
        "proposal": proposal["id"],
        "hash": proposal["hash"],
        "grants": [grant(AGENT, now=NOW)],
        "proof": parley.sign_proof(
            AGENT, aud=SERVICE_ID, verb="COMMIT", target=proposal["hash"], ts=NOW
        ),
    }
    reply = _send(service, commit)
    assert reply["code"] == "consent_required"
    assert reply["consent"]["hash"] == proposal["hash"]
    assert "need" not in reply
    lines = parley.lens.lens(reply).split("\n")
    assert [line.split(":")[0] for line in lines[1:]] == ["  consent"]


# -------------------------------- finding 5: our error only

_BAD_KEY_VALUES = [
    [{1: 2}],
    {"t": [{1: 2}, {1: 3}]},
    {"t": [{"a": 1}, {2: 1}]},
    [{"a": {None: 1}}],
    {"a": [[{3: 1}]]},
]


@pytest.mark.parametrize("value", _BAD_KEY_VALUES, ids=range(len(_BAD_KEY_VALUES)))
def test_lean_with_a_non_string_key_raises_our_error(value: Any) -> None:
    with pytest.raises(parley.ParleyError) as caught:
        parley.lens.lean(value)
    assert (caught.value.code, caught.value.reason) == ("bad_frame", "not_json")


def _effect(**over: Any) -> dict[Any, Any]:
    return {"op": "update", "target": "t", **over}


_BAD_KEY_REPLIES: list[dict[Any, Any]] = [
    {"kind": "ANSWER", "data": 1, 7: 1},
    {"kind": "BRIEF", "service": {"id": "s", 1: "x"}, "capabilities": []},
    {"kind": "BRIEF", "service": {"id": "s"}, "capabilities": [{"kind": "ask", 2: 1}]},
    {"kind": "BRIEF", "service": {}, "capabilities": [{"kind": "a", "params": {1: "s"}}]},
    {"kind": "BRIEF", "service": {}, "capabilities": [{"kind": "a", "params": {"o": {1: "s"}}}]},
    {"kind": "PROPOSALS", "proposals": [{"id": "p", 3: 4}]},
    {"kind": "PROPOSALS", "proposals": [{"id": "p", "effects": [_effect(x=1) | {5: 1}]}]},
    {"kind": "PROPOSALS", "proposals": [{"id": "p", "cost": {"amount": 1, None: 1}}]},
    {"kind": "PROPOSALS", "proposals": [{"id": "p", "undo": {"window": 60, 1: 1}}]},
    {"kind": "CLARIFY", "question": "q", "options": [{"label": "a", 1: 2}]},
    {"kind": "RECEIPT", "receipt": {"id": "r", 1: 2}},
    {"kind": "RECEIPT", "receipt": {"id": "r", "undo": {"until": 1, 2: 3}}},
    {"kind": "RECEIPT", "auto": True, "receipt": {"id": "r", "effects": [{1: 2}]}},
    {"kind": "ERROR", "code": "c", "fix": [{"say": "s", 1: 2}]},
    {"kind": "ERROR", "code": "c", "consent": {"hash": "h", 1: 2}},
    {"kind": "EVENT", "message": "m", "more": [{"path": "p", 1: 2}]},
]


@pytest.mark.parametrize("reply", _BAD_KEY_REPLIES, ids=range(len(_BAD_KEY_REPLIES)))
def test_lens_with_a_non_string_key_raises_our_error(reply: dict[Any, Any]) -> None:
    with pytest.raises(parley.ParleyError) as caught:
        parley.lens.lens(reply)
    assert (caught.value.code, caught.value.reason) == ("bad_frame", "not_json")


@pytest.mark.parametrize("data", [5, None, 1.5, object(), ["{}"], memoryview(b"{}")])
def test_parse_frame_with_neither_bytes_nor_text_raises_our_error(data: Any) -> None:
    with pytest.raises(parley.ParleyError) as caught:
        parley.wire.parse_frame(data)
    assert (caught.value.code, caught.value.reason) == ("bad_frame", "not_json")


@pytest.mark.parametrize(
    ("make", "what"),
    [
        (lambda: parley.ProposalFacts("h", None, "toString"), "risk"),
        (lambda: parley.ProposalFacts("h", None, None), "risk"),  # type: ignore[arg-type]
        (lambda: parley.ProposalFacts(7, None, "low"), "hash"),  # type: ignore[arg-type]
        (lambda: parley.ProposalFacts("h", {"amount": 1}, "low"), "cost"),  # type: ignore[arg-type]
        (lambda: parley.ProposalFacts("h", parley.grants.Cost("12", "USD"), "low"), "amount"),  # type: ignore[arg-type]
        (lambda: parley.ProposalFacts("h", parley.grants.Cost(True, "USD"), "low"), "amount"),
        (lambda: parley.ProposalFacts("h", parley.grants.Cost(-1, "USD"), "low"), "amount"),
        (lambda: parley.ProposalFacts("h", parley.grants.Cost(2**53, "USD"), "low"), "amount"),
        (lambda: parley.ProposalFacts("h", parley.grants.Cost(1, 840), "low"), "currency"),  # type: ignore[arg-type]
    ],
)
def test_hand_built_proposal_facts_with_odd_values_raise_our_error(make: Any, what: str) -> None:
    with pytest.raises(parley.ParleyError) as caught:
        make()
    assert caught.value.reason == "bad_context"
    assert what in caught.value.message


def test_hand_built_proposal_facts_that_are_right_still_check() -> None:
    key = parley.key_from_seed(bytes(32))
    token = parley.mint_grant(
        key, AGENT.public, [{"risk": "low"}, {"per": {"max": 100, "currency": "USD"}}], iat=NOW
    )
    ctx = parley.GrantContext(
        "svc",
        "COMMIT",
        "x",
        NOW,
        proposal=parley.ProposalFacts("h", parley.grants.Cost(100, "USD"), "low"),
    )
    assert parley.verify_grant([token], trusted=[key.public], proof_key=AGENT.public, ctx=ctx).ok


_ODD_KEYS = st.one_of(
    st.sampled_from(["kind", "data", "proposals", "receipt", "effects", "field", "params"]),
    st.integers(-2, 2),
    st.none(),
    st.booleans(),
    st.tuples(st.integers(0, 1)),
)
_ODD = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=4)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(_ODD_KEYS, inner, max_size=3)
    ),
    max_leaves=12,
)
_KINDS = st.sampled_from(["BRIEF", "ANSWER", "PROPOSALS", "CLARIFY", "RECEIPT", "ERROR", "EVENT"])


@settings(max_examples=400, deadline=None)
@given(_KINDS, st.dictionaries(_ODD_KEYS, _ODD, max_size=5), _ODD)
def test_lens_and_lean_of_any_shape_give_text_or_our_error(
    kind: str, body: dict[Any, Any], value: Any
) -> None:
    for render, arg in ((parley.lens.lens, {**body, "kind": kind}), (parley.lens.lean, value)):
        with contextlib.suppress(parley.ParleyError):
            assert isinstance(render(arg), str)  # type: ignore[operator]
