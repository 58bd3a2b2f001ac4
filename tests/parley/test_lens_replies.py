"""Lens of every reply kind (SPEC.md section 9.2 and NOTES.md), line by line.

Private imports: ``parley._cli.main`` drives ``parley lens`` in process (the CLI's public
contract is its argv, output and exit status; our decision: no public ``cli`` modules).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import parley
from parley._cli import main as parley_main

EFFECTS = [
    {"op": "update", "target": "event/e42", "field": "start", "from": "a", "to": "b"},
    {"op": "send", "target": "ana@example.com", "detail": "update notification"},
]


def proposal(pid: str, **over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": pid,
        "capability": "calendar.reschedule",
        "summary": "Move 1:1",
        "effects": EFFECTS,
        "cost": None,
        "risk": "low",
        "undo": {"window": 3600},
        "expires": 1790000600,
        "hash": "h",
    }
    base.update(over)
    return base


def test_brief() -> None:
    reply = {
        "kind": "BRIEF",
        "service": {"id": "cal.example.com", "name": "Cal", "summary": "Your calendar."},
        "capabilities": [
            {"name": "c.find", "kind": "ask", "summary": "Search", "params": {"q?": "string"}},
            {
                "name": "c.order",
                "kind": "intent",
                "params": {"items": [{"sku": "string", "qty": "int"}], "o": {"a": "date"}},
                "risk": "low",
            },
            {"name": "c.ping", "kind": "ask"},
        ],
    }
    assert parley.lens.lens(reply) == (
        "# Cal (cal.example.com)\nYour calendar.\n"
        "ask c.find(q?: string) — Search\n"
        "intent c.order(items: [{sku: string, qty: int}], o: {a: date}) [risk:low]\n"
        "ask c.ping()"
    )
    del reply["service"]["summary"]  # type: ignore[attr-defined]
    assert parley.lens.lens(reply).split("\n")[1] == "ask c.find(q?: string) — Search"


def test_one_proposal_has_only_own_attributes_and_data() -> None:
    reply = {"kind": "PROPOSALS", "proposals": [proposal("p_1", data={"seats": [1, 2]})]}
    assert parley.lens.lens(reply) == (
        "1 proposal:\n[p_1] Move 1:1\n"
        "  ~ update event/e42.start: a → b\n"
        "  > send ana@example.com — update notification\n"
        "  cost: free · risk: low · undo: 1h · expires: 2026-09-21T14:23:20Z\n"
        "  data:\n    seats: [1, 2]"
    )


def test_shared_attributes_go_to_the_header() -> None:
    a = proposal("p_1", effects=[])
    b = proposal("p_2", effects=[], cost={"amount": 1250, "currency": "USD"})
    assert parley.lens.lens({"kind": "PROPOSALS", "proposals": [a, b]}) == (
        "2 proposals — risk: low · undo: 1h · expires: 2026-09-21T14:23:20Z:\n"
        "[p_1] Move 1:1\n  cost: free\n"
        "[p_2] Move 1:1\n  cost: 12.50 USD"
    )


def test_all_shared_omits_attribute_lines_and_nothing_shared_plain_header() -> None:
    a, b = proposal("p_1", effects=[]), proposal("p_2", effects=[])
    assert parley.lens.lens({"kind": "PROPOSALS", "proposals": [a, b]}) == (
        "2 proposals — cost: free · risk: low · undo: 1h · expires: 2026-09-21T14:23:20Z:\n"
        "[p_1] Move 1:1\n[p_2] Move 1:1"
    )
    c = proposal("p_1", effects=[], risk="high", undo=None, expires=1790000660)
    d = proposal("p_2", effects=[], cost={"amount": 5, "currency": "JPY"})
    assert parley.lens.lens({"kind": "PROPOSALS", "proposals": [c, d]}).split("\n")[0] == (
        "2 proposals:"
    )


def test_clarify() -> None:
    reply = {
        "kind": "CLARIFY",
        "question": "Which Ana?",
        "options": [{"label": "Lee"}, {"label": "Ruiz"}],
    }
    assert parley.lens.lens(reply) == "? Which Ana?\n  1. Lee\n  2. Ruiz"


RECEIPT = {
    "id": "r_91",
    "summary": "Moved 1:1",
    "effects": EFFECTS,
    "undo": {"until": 1790003700},
    "result": {"event": "e42", "at": 1790000100},
}


def test_receipt_plain_auto_replay_irreversible_undo() -> None:
    plain = parley.lens.lens({"kind": "RECEIPT", "receipt": RECEIPT})
    assert plain == (
        "✓ Moved 1:1 (receipt r_91) · undo until 2026-09-21T15:15Z\n"
        "  result:\n    event: e42\n    at: 1790000100"
    )
    auto = parley.lens.lens({"kind": "RECEIPT", "auto": True, "replay": True, "receipt": RECEIPT})
    assert auto.split("\n")[:3] == [
        "✓ Moved 1:1 (receipt r_91) (replay) · undo until 2026-09-21T15:15Z",
        "  ~ update event/e42.start: a → b",
        "  > send ana@example.com — update notification",
    ]
    final = {**RECEIPT, "undo": None}
    del final["result"]
    assert parley.lens.lens({"kind": "RECEIPT", "receipt": final}) == (
        "✓ Moved 1:1 (receipt r_91) · irreversible"
    )
    undo = {"id": "r_92", "summary": "Moved back", "undoes": "r_91", "undo": None, "result": 1}
    assert parley.lens.lens({"kind": "RECEIPT", "receipt": undo}) == (
        "↶ undid r_91: Moved back (receipt r_92)\n  result: 1"
    )


def test_error_every_line() -> None:
    reply = {
        "kind": "ERROR",
        "code": "forbidden",
        "message": "Not allowed.",
        "fix": [{"say": "ask", "params": {"to": "x", "n": 1.5}}, {"say": "wait"}],
        "need": [{"risk": "low"}],
        "consent": {"hash": "Qm9", "summary": "Buy 2"},
        "retry": 90,
    }
    assert parley.lens.lens(reply) == (
        "✗ forbidden: Not allowed.\n"
        '  fix: ask → params {"to":"x","n":1.5}\n'
        "  fix: wait\n"
        '  need: [{"risk":"low"}]\n'
        "  consent: principal must approve Qm9 (Buy 2)\n"
        "  retry in: 90s"
    )
    bare = {"kind": "ERROR", "code": "internal", "message": "Oops.", "need": [], "retry": None}
    assert parley.lens.lens(bare) == "✗ internal: Oops."


@pytest.mark.parametrize(
    ("progress", "shown"),
    [(0.425, " (43%)"), (0.005, " (1%)"), (0.0049, " (0%)"), (1, " (100%)"), (None, "")],
)
def test_event_progress_rounds_half_up(progress: float | None, shown: str) -> None:
    reply: dict[str, Any] = {"kind": "EVENT", "message": "working"}
    if progress is not None:
        reply["progress"] = progress
    assert parley.lens.lens(reply) == "… working" + shown


def test_answer_and_more_lines() -> None:
    reply = {
        "kind": "ANSWER",
        "data": {"n": 1},
        "more": [{"handle": "h_a", "path": "data.x", "remaining": 3, "est": 12}],
    }
    assert parley.lens.lens(reply) == "n: 1\n… 3 more at data.x — EXPAND h_a (~12 tokens)"


def _terms(**over: Any) -> list[str]:
    """The ``cost · risk · undo · expires`` terms of one proposal's Lens."""
    base = {"cost": None, "undo": None, "expires": 1790000600, **over}
    rendered = parley.lens.lens({"kind": "PROPOSALS", "proposals": [proposal("p_1", **base)]})
    (line,) = [x for x in rendered.splitlines() if x.startswith("  cost: ")]
    return line.strip().split(" · ")


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0s"),
        (59, "59s"),
        (120, "2m"),
        (5400, "90m"),
        (3600, "1h"),
        (172800, "2d"),
        (-60, "-1m"),
    ],
)
def test_durations(seconds: int, text: str) -> None:
    assert f"undo: {text}" in _terms(undo={"window": seconds})


@pytest.mark.parametrize(
    ("cost", "text"),
    [
        (None, "free"),
        ({"amount": 1250, "currency": "USD"}, "12.50 USD"),
        ({"amount": 5, "currency": "EUR"}, "0.05 EUR"),
        ({"amount": -1205, "currency": "USD"}, "-12.05 USD"),
        ({"amount": 500, "currency": "JPY"}, "500 JPY"),
        ({"amount": -7, "currency": "KRW"}, "-7 KRW"),
    ],
)
def test_money(cost: Any, text: str) -> None:
    assert _terms(cost=cost)[0] == f"cost: {text}"


@pytest.mark.parametrize(
    ("unix", "text"),
    [
        (0, "1970-01-01T00:00Z"),
        (1790000600, "2026-09-21T14:23:20Z"),
        (1790000640, "2026-09-21T14:24Z"),
        (951782400, "2000-02-29T00:00Z"),
        (-1, "1969-12-31T23:59:59Z"),
        (253402300800, "+010000-01-01T00:00Z"),
    ],
)
def test_times(unix: int, text: str) -> None:
    assert _terms(expires=unix)[-1] == f"expires: {text}"


def test_a_field_named_at_inside_data_stays_plain() -> None:
    assert parley.lens.lens({"kind": "ANSWER", "data": {"at": 1790000100}}) == "at: 1790000100"


@pytest.mark.parametrize(
    "reply",
    [
        [],
        {"kind": "NOPE"},
        {"kind": "RECEIPT", "receipt": "r"},
        {"kind": "PROPOSALS", "proposals": "x"},
        {"kind": "PROPOSALS", "proposals": [1]},
        {"kind": "ANSWER", "data": {"x": {1, 2}}},
        {"kind": "ANSWER", "data": 1, "more": [1]},
    ],
)
def test_malformed_replies_raise_our_error(reply: Any) -> None:
    with pytest.raises(parley.ParleyError) as caught:
        parley.lens.lens(reply)
    assert caught.value.code == "bad_frame"


ANY = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(),
        st.text(max_size=6),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=20,
)
FIELDS = st.sampled_from(
    [
        "service",
        "capabilities",
        "data",
        "proposals",
        "question",
        "options",
        "receipt",
        "code",
        "message",
        "fix",
        "need",
        "consent",
        "retry",
        "progress",
        "more",
        "auto",
        "replay",
    ]
)
KINDS = st.sampled_from(["BRIEF", "ANSWER", "PROPOSALS", "CLARIFY", "RECEIPT", "ERROR", "EVENT"])


def _shaped(kind: str, fields: dict[str, Any], inner: dict[str, Any]) -> dict[str, Any]:
    reply: dict[str, Any] = {"kind": kind, **fields}
    if kind == "PROPOSALS":
        reply["proposals"] = [inner, {**inner, "id": "p_2"}]
    elif kind == "RECEIPT":
        reply["receipt"] = inner
    elif kind == "BRIEF":
        reply["capabilities"] = [inner]
        reply["service"] = inner
    return reply


INNER = st.dictionaries(
    st.sampled_from(
        [
            "id",
            "summary",
            "effects",
            "cost",
            "risk",
            "undo",
            "expires",
            "data",
            "result",
            "undoes",
            "params",
            "name",
            "kind",
            "until",
            "window",
        ]
    ),
    ANY,
    max_size=8,
)


@settings(max_examples=400, deadline=None)
@given(KINDS, st.dictionaries(FIELDS, ANY, max_size=5), INNER)
def test_lens_is_total_over_reply_shapes(
    kind: str, fields: dict[str, Any], inner: dict[str, Any]
) -> None:
    reply = _shaped(kind, fields, inner)
    try:
        first = parley.lens.lens(reply)
    except parley.ParleyError as exc:
        code = exc.code
        first = None
    if first is None:
        assert code == "bad_frame"
        return
    assert parley.lens.lens(copy.deepcopy(reply)) == first
    try:
        fitted, parked = parley.lens.fit(reply, 30, handles=parley.lens.new_handle)
    except parley.ParleyError as exc:  # pragma: no cover - lens succeeded, so must fit
        raise AssertionError(exc) from exc
    assert isinstance(parley.lens.lens(fitted), str)
    assert isinstance(parked, dict)


NOT_JSON = st.one_of(
    st.builds(set),
    st.binary(min_size=1, max_size=3),
    st.tuples(st.integers()),
    st.builds(object),
    st.complex_numbers(),
)


@settings(max_examples=200, deadline=None)
@given(ANY, NOT_JSON, st.integers(0, 3))
def test_non_json_anywhere_raises_our_error(value: Any, bad: Any, where: int) -> None:
    planted = [
        bad,
        {"k": [value, bad]},
        [{"a": value}, {"b": bad}],
        {"x": {"y": bad, "z": value}},
    ][where]
    with pytest.raises(parley.ParleyError) as caught:
        parley.lens.lean(planted)
    assert caught.value.reason == "not_json"
    with pytest.raises(parley.ParleyError):
        parley.lens.lens({"kind": "ANSWER", "data": planted})
    with pytest.raises(parley.ParleyError):
        parley.lens.fit({"kind": "ANSWER", "data": planted}, 5, handles=parley.lens.new_handle)


# -------------------------------- JavaScript numbers, dates and key order; the lens command


def test_capability_params_follow_javascript_key_order() -> None:
    brief = {
        "kind": "BRIEF",
        "service": {"id": "s"},
        "capabilities": [{"name": "c", "kind": "ask", "params": {"q": "string", "2": "int"}}],
    }
    assert parley.lens.lens(brief).splitlines()[-1] == "ask c(2: int, q: string)"


def test_event_progress_beyond_the_double_range() -> None:
    # A JSON integer with 400 digits used to raise OverflowError.
    frame = json.loads('{"kind": "EVENT", "message": "m", "progress": 1' + "0" * 400 + "}")
    assert parley.lens.lens(frame) == "… m"
    assert parley.lens.lens({"kind": "EVENT", "message": "m", "progress": 2**60}) == (
        "… m (115292150460684700000%)"
    )


@pytest.mark.parametrize("expires", [10**400, -(10**400), 8_640_000_000_001, -8_640_000_000_001])
def test_times_outside_the_javascript_date_range_are_refused(expires: int) -> None:
    reply = {"kind": "PROPOSALS", "proposals": [{"id": "p", "expires": expires}]}
    with pytest.raises(parley.ParleyError) as caught:
        parley.lens.lens(reply)
    assert caught.value.reason == "bad_time"


def test_times_at_the_edge_of_the_javascript_date_range() -> None:
    def expires(t: Any) -> str:
        reply = {"kind": "PROPOSALS", "proposals": [{"id": "p", "expires": t}]}
        return parley.lens.lens(reply).splitlines()[-1]

    # new Date(8.64e15).toISOString() === "+275760-09-13T00:00:00.000Z"
    assert (
        expires(8_640_000_000_000) == "  cost: free · undo: never · expires: +275760-09-13T00:00Z"
    )
    assert expires(-8_640_000_000_000) == (
        "  cost: free · undo: never · expires: -271821-04-20T00:00Z"
    )
    assert expires(8_639_999_999_999.5).endswith("+275760-09-12T23:59:59Z")


@pytest.mark.parametrize(
    ("amount", "usd", "jpy"),
    [
        (1250.0, "12.50 USD", "1250 JPY"),  # JSON 1250.0 is the number 1250 in JavaScript
        (-5.0, "-0.05 USD", "-5 JPY"),
        (-0.0, "0.00 USD", "0 JPY"),
        (2**53 + 1, "90071992547409.92 USD", "9007199254740992 JPY"),  # the parsed double
    ],
)
def test_money_treats_amounts_as_javascript_numbers(amount: Any, usd: str, jpy: str) -> None:
    # 1250.0 used to render "1250 USD" (as if it were not an integer).
    def cost(currency: str) -> str:
        reply = {
            "kind": "PROPOSALS",
            "proposals": [{"id": "p", "cost": {"amount": amount, "currency": currency}}],
        }
        return parley.lens.lens(reply).splitlines()[-1].split(" · ")[0]

    assert cost("USD") == f"  cost: {usd}"
    assert cost("JPY") == f"  cost: {jpy}"


def test_lens_command_refuses_non_utf8_and_deeply_nested_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    binary = tmp_path / "bad.json"
    binary.write_bytes(b"\xff\xfe{")
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    empty = tmp_path / "p.json"
    empty.write_text('{"kind": "PROPOSALS"}', encoding="utf-8")
    assert parley_main(["lens", str(binary)]) == 1
    assert "bad_frame/not_json" in capsys.readouterr().err
    assert parley_main(["lens", str(deep), "--budget", "5"]) == 1
    assert "bad_frame/too_deep" in capsys.readouterr().err
    assert parley_main(["lens", str(empty), "--budget", "5"]) == 0
    assert capsys.readouterr().out == "0 proposals:\n"
