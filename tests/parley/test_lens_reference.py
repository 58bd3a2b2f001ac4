"""Lens byte-exact with the reference (issue 21): each test holds one finding.

Expectations are the reference's behaviour as SPEC.md section 9.2 and NOTES.md state it, and
as JavaScript evaluates the template (truthiness, UTF-16 strings).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import parley
from parley._fit_oracle import PLACEHOLDER, fit_oracle
from parley._lean import compact_json, u16_len
from parley._lens import effect_line

from .runtime_harness import AGENT, PRINCIPAL, SERVICE_ID, grant, load_shop

SHOP = load_shop()
NOW = 1_790_000_000

# ---------------------------------------------------------------- finding 2: effect `field`


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
    assert parley.lens(reply) == "✓ Done (receipt r_1) · irreversible\n  ~ update a\n  ~ update b.x"


@pytest.mark.parametrize("blank", ["", None, 0, False])
def test_brief_summaries_and_risk_follow_the_same_truthiness(blank: Any) -> None:
    reply = {
        "kind": "BRIEF",
        "service": {"id": "s", "name": "S", "summary": blank},
        "capabilities": [{"kind": "ask", "name": "a", "summary": blank, "risk": blank}],
    }
    assert parley.lens(reply) == "# S (s)\nask a()"


# ---------------------------------------------------------------- finding 3: lone surrogates


def test_lean_writes_a_lone_surrogate_raw_as_the_reference_quote_does() -> None:
    assert parley.lean({"t": "a\ud83d"}) == 't: "a\ud83d"'
    assert parley.lean(["\ude00", "x"]) == 'items: ["\ude00", x]'
    assert parley.lean({"k\udfff": 1}) == '"k\udfff": 1'


def test_compact_json_still_escapes_a_lone_surrogate_as_json_stringify_does() -> None:
    # ES2019 well-formed JSON.stringify: used in fix params, need, and nested list items
    assert compact_json(["a\ud83d"]) == '["a\\ud83d"]'
    assert parley.lean({"x": [["\ud83d", {}], {"y": 1}]}) == 'x[2]:\n  - ["\\ud83d",{}]\n  - y: 1'


def test_a_cut_through_an_emoji_fits_the_reference_unit_count() -> None:
    # "a" + 300 emoji is 601 UTF-16 units; the first cut keeps 300 units, which ends
    # inside an emoji and leaves its high surrogate alone. The reference counts that
    # surrogate as one token; escaped as \ud83d it would count four, so at this budget
    # the escaped text needs a second cut (to 200 units) and the raw one does not.
    text = "a" + "\U0001f600" * 300
    kept = "a" + "\U0001f600" * 149 + "\ud83d"
    rest = "\ude00" + "\U0001f600" * 150
    shown = f't: "{kept}…"\n… 301 more at data.t — EXPAND {PLACEHOLDER} (~151 tokens)'
    budget = parley.estimate(shown)
    reply = {"kind": "ANSWER", "data": {"t": text}}
    fitted, parked = parley.fit(reply, budget, handles=iter(["h_one"]).__next__)
    assert fitted["data"]["t"] == kept + "…"
    assert u16_len(fitted["data"]["t"]) == 301
    assert parked["h_one"] == rest
    assert parley.lens(fitted).startswith(f't: "{kept}…"')
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


# ---------------------------------------------------------------- finding 4: consent_required


def _send(service: Any, frame: dict[str, Any]) -> dict[str, Any]:
    replies: list[dict[str, Any]] = service.handle(frame, now=NOW)
    return replies[-1]


def test_consent_required_carries_only_consent_as_the_reference_authorize_does() -> None:
    service = SHOP.build_service(
        trusted=[PRINCIPAL.public], store=parley.MemoryStore(), clock=lambda: NOW
    )
    target = parley.proof_target("INTENT", capability="shop.gift_card", auto=False, frame_id="i1")
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
    lines = parley.lens(reply).split("\n")
    assert [line.split(":")[0] for line in lines[1:]] == ["  consent"]
