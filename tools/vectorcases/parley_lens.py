"""Vector cases of Parley's Lens (SPEC.md section 9), estimate and budgets (section 8).

Expected Lens texts are written out by hand from SPEC.md and NOTES.md; the reference's
own cases (vectors/third_party/parley/lens.json) are included with their
published text. Fitting expectations come from the plain reference loop
(``tests/parley/fit_oracle.py``), a separate implementation of NOTES.md's prose; the shipped
fitter must agree with it. Handles are fixed strings supplied by each vector.
"""

from __future__ import annotations

import copy
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import parley
from vectorlib import Case, Mutation, derive, raw_file, suite

TOP = Path(__file__).resolve().parents[2]
if str(TOP) not in sys.path:  # the oracle lives under tests/, which ships nothing
    sys.path.insert(0, str(TOP))
from tests.parley.fit_oracle import fit_oracle  # noqa: E402

THIRD = TOP / "vectors" / "third_party" / "parley"


def _third(name: str) -> list[dict[str, Any]]:
    loaded: list[dict[str, Any]] = json.loads((THIRD / name).read_text(encoding="utf-8"))
    return loaded


def _third_values() -> list[dict[str, Any]]:
    """The reference's ``type: "value"`` Lens cases (rendered with ``lean``)."""
    return [case for case in _third("lens.json") if case["type"] == "value"]


def _third_replies() -> list[dict[str, Any]]:
    """The reference's ``type: "reply"`` Lens cases (rendered with ``lens``)."""
    return [case for case in _third("lens.json") if case["type"] == "reply"]


# --------------------------------------------------------------------------- estimate


@suite(
    "parley.estimate",
    description="estimate(text): the shared token estimate of SPEC.md section 8",
    notes={
        "reference": "published by the reference implementation (conformance/estimate.json)",
        "code-points": "counted over code points: an astral character is one match",
        "indentation": "a newline followed by two or more spaces is one match",
    },
)
def estimate_cases() -> Iterator[Case]:
    for index, case in enumerate(_third("estimate.json")):
        yield Case(
            f"estimate-reference-{index}",
            {"text": case["text"]},
            output={"est": case["est"]},
            comment="the reference's published estimate",
            flags=("reference",),
        )
    for name, text, est, flags in (
        ("digit-groups", "1234567", 3, ()),
        ("letters-and-digits", "abc123def", 3, ()),
        ("astral", "\U0001f389\U0001f389", 2, ("code-points",)),
        ("one-space-indent", "a\n b", 2, ("indentation",)),
        ("deep-indent", "a\n      b", 3, ("indentation",)),
        ("blank-lines", "\n\n\n", 0, ("indentation",)),
        ("nbsp-counts", "\u00a0\u00a0", 2, ()),
        ("whitespace-only", " \t\r\f\v", 0, ()),
        ("underscore", "h_XXXXXXXXXXXX", 3, ()),
        ("lens-line", "… 37 more at data.events — EXPAND h_3kd (~1840 tokens)", 19, ()),
    ):
        yield Case(
            f"estimate-{name}",
            {"text": text},
            output={"est": est},
            comment=f"estimate of the {name.replace('-', ' ')} text",
            flags=flags,
        )
    yield Case(
        "estimate-refuses-non-text",
        {"text": 12},
        error={"code": "bad_frame", "reason": "not_text"},
        comment="the estimate is defined over text only",
    )


# --------------------------------------------------------------------------- lean

BARE = ["hello world", "0x1F", ".5", "01", "+1", "1.", "a-b", "Ana (x)", "1:1", "ok!?&%$#*=<>~^"]
QUOTED = {
    "empty": ("", '""'),
    "leading-space": (" lead", '" lead"'),
    "trailing-space": ("trail ", '"trail "'),
    "dash": ("-", '"-"'),
    "true": ("true", '"true"'),
    "false": ("false", '"false"'),
    "null": ("null", '"null"'),
    "exponent": ("1e5", '"1e5"'),
    "minus-zero": ("-0", '"-0"'),
    "decimal": ("12.50", '"12.50"'),
    "comma": ("a,b", '"a,b"'),
    "quote": ('say "hi"', '"say \\"hi\\""'),
    "newline": ("two\nlines", '"two\\nlines"'),
    "tab": ("a\tb", '"a\\tb"'),
    "control": ("bell\x07", '"bell\\u0007"'),
    "del": ("del\x7f", '"del\x7f"'),
    "nbsp": ("nb\u00a0sp", '"nb\u00a0sp"'),
    "non-ascii": ("café", '"café"'),
    "astral": ("party \U0001f389", '"party \U0001f389"'),
    "backslash": ("a\\b", '"a\\\\b"'),
    "brackets": ("[x]", '"[x]"'),
    "semicolon": ("a;b", '"a;b"'),
    "lone-surrogate": ("x\ud800", '"x\ud800"'),
}


def _lean_value_cases() -> Iterator[tuple[str, Any, str, str, tuple[str, ...]]]:
    """(id, value, lens, comment, flags) of every lean vector."""
    for index, text in enumerate(BARE):
        yield (
            f"lean-bare-{index}",
            {"s": text},
            f"s: {text}",
            f"{text!r} matches the bare rule and is not a JSON number",
            ("bare",),
        )
    for name, (text, rendered) in QUOTED.items():
        yield (
            f"lean-quoted-{name}",
            {"s": text},
            f"s: {rendered}",
            f"a string with {name.replace('-', ' ')} is quoted as in SPEC.md section 10",
            ("quoted",),
        )
        yield (
            f"lean-quoted-key-{name}",
            {text: 1},
            f"{rendered}: 1",
            f"an object key with {name.replace('-', ' ')} follows the same rule",
            ("quoted", "key"),
        )
    numbers = [
        ("one-and-half", 1.5, "1.5"),
        ("1e21", 1e21, "1e+21"),
        ("1e20", 1e20, "100000000000000000000"),
        ("1e-7", 1e-7, "1e-7"),
        ("1e-6", 1e-6, "0.000001"),
        ("smallest", 5e-324, "5e-324"),
        ("minus-zero", -0.0, "0"),
        ("integral-float", 2.0, "2"),
        ("tenth-sum", 0.1 + 0.2, "0.30000000000000004"),
        ("negative", -3, "-3"),
        ("beyond-safe", 2**64, "18446744073709552000"),
        ("largest", 1.7976931348623157e308, "1.7976931348623157e+308"),
    ]
    for name, number, text in numbers:
        yield (
            f"lean-number-{name}",
            number,
            text,
            "numbers render as ECMAScript Number::toString",
            ("number",),
        )
    yield ("lean-null", None, "-", "null renders as a dash", ("scalar",))
    yield ("lean-true", True, "true", "booleans render as words", ("scalar",))
    yield ("lean-empty-object", {}, "{}", "a top-level empty object", ("scalar",))
    yield ("lean-empty-list", [], "items: []", "a top-level empty list", ("top-list",))
    yield (
        "lean-table",
        {"t": [{"a": 1, "b": "x y"}, {"a": 2, "b": "p,q"}]},
        't[2]{a,b}:\n  1,x y\n  2,"p,q"',
        "uniform flat objects become a table; a comma forces quotes",
        ("table",),
    )
    yield (
        "lean-table-one-row",
        {"t": [{"a": None}]},
        "t[1]{a}:\n  -",
        "a single flat object is a one-row table",
        ("table",),
    )
    yield (
        "lean-mixed-key-order",
        {"t": [{"a": 1, "b": 2}, {"b": 3, "a": 4}]},
        "t[2]:\n  - a: 1\n    b: 2\n  - b: 3\n    a: 4",
        "same keys in another order: not a table",
        ("mixed",),
    )
    yield (
        "lean-mixed-nested-value",
        {"t": [{"a": [1]}, {"a": [2]}]},
        "t[2]:\n  - a: [1]\n  - a: [2]",
        "a non-scalar value: not a table",
        ("mixed",),
    )
    yield (
        "lean-mixed-empty-object",
        {"t": [{"a": 1}, {}]},
        "t[2]:\n  - a: 1\n  - {}",
        "an empty object item renders {}",
        ("mixed",),
    )
    yield (
        "lean-item-nested-object",
        {"t": [{"a": {"b": {"c": 1}}, "d": [{"e": 2}, 3]}, "s"]},
        "t[2]:\n  - a:\n      b:\n        c: 1\n    d[2]:\n      - e: 2\n      - 3\n  - s",
        "a nested object's first entry moves onto the dash line",
        ("mixed", "nested"),
    )
    yield (
        "lean-item-lists",
        {"t": [[], [1, "a b"], [[1]], [{"x": 1.5}], None]},
        't[5]:\n  - []\n  - [1, a b]\n  - [[1]]\n  - [{"x":1.5}]\n  - -',
        "list items: scalar lists in lean form, other lists as compact JSON",
        ("mixed",),
    )
    yield (
        "lean-top-list-mixed",
        [1, {"a": 1}],
        "items[2]:\n  - 1\n  - a: 1",
        "a top-level list renders under the key items",
        ("top-list",),
    )
    yield (
        "lean-key-order-index-first",
        {"b": 1, "10": 2, "2": 3, "01": 4, "-1": 5},
        '"2": 3\n"10": 2\nb: 1\n01: 4\n"-1": 5',
        "JavaScript property order: array-index keys first, ascending, then the rest"
        " in insertion order (01 and -1 are not array indexes)",
        ("key-order",),
    )
    yield (
        "lean-key-order-table",
        {"t": [{"b": 1, "1": 2}, {"1": 3, "b": 4}]},
        't[2]{"1",b}:\n  2,1\n  3,4',
        "both rows have the key order 1, b in JavaScript, so they form a table",
        ("table", "key-order"),
    )
    yield (
        "lean-key-order-compact-json",
        {"t": [[{"b": 1, "0": 2}]]},
        't[1]:\n  - [{"0":2,"b":1}]',
        "compact JSON (JSON.stringify) uses the same property order",
        ("mixed", "key-order"),
    )
    yield (
        "lean-top-quoted-string",
        "true",
        '"true"',
        "a top-level scalar renders alone",
        ("scalar", "quoted"),
    )


@suite(
    "parley.lean",
    description="lean(value): the lean notation of SPEC.md section 9.1 and NOTES.md",
    notes={
        "reference": "a value case of the reference's lens.json, with its published text",
        "bare": "a string the bare rule leaves unquoted",
        "quoted": "a string the bare rule forces into quotes",
        "key": "the rule applied to an object key",
        "number": "ECMAScript Number::toString",
        "scalar": "a scalar or an empty container",
        "table": "table form",
        "mixed": "mixed-list form with - items",
        "nested": "objects nested inside list items",
        "top-list": "a top-level list renders under items",
        "key-order": "ECMAScript property order (array-index keys first)",
    },
)
def lean_cases() -> Iterator[Case]:
    for case in _third_values():
        yield Case(
            "lean-reference-" + case["name"].replace(" ", "-"),
            {"value": case["input"]},
            output={"lens": case["lens"]},
            comment=f"the reference's value case {case['name']!r}",
            flags=("reference",),
        )
    for vid, value, text, comment, flags in _lean_value_cases():
        yield Case(vid, {"value": value}, output={"lens": text}, comment=comment, flags=flags)


# --------------------------------------------------------------------------- lens

EFFECTS = [
    {
        "op": "update",
        "target": "event/e42",
        "field": "start",
        "from": "2026-09-22T14:00:00Z",
        "to": "2026-09-24T15:00:00Z",
    },
    {"op": "send", "target": "ana@example.com", "detail": "update notification"},
]


def _proposal(pid: str, **over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": pid,
        "capability": "calendar.reschedule",
        "summary": 'Move "1:1 with Ana" to Thu 15:00',
        "effects": EFFECTS,
        "cost": None,
        "risk": "low",
        "undo": {"window": 3600},
        "expires": 1790000600,
        "hash": "wK8f3vJ1",
    }
    base.update(over)
    return base


def _frame(kind: str, **body: Any) -> dict[str, Any]:
    return {"parley": 1, "id": "s1", "re": "1", "kind": kind, **body}


RECEIPT = {
    "id": "r_91",
    "proposal": "p_7Hc2",
    "capability": "calendar.reschedule",
    "summary": "Moved 1:1 with Ana",
    "at": 1790000100,
    "effects": EFFECTS,
    "cost": None,
    "undo": {"until": 1790003700},
    "result": {"event": "e42", "at": 1790000100},
}

_MOVE = '[p_7Hc2] Move "1:1 with Ana" to Thu 15:00'
_FX = (
    "  ~ update event/e42.start: 2026-09-22T14:00:00Z → 2026-09-24T15:00:00Z\n"
    "  > send ana@example.com — update notification"
)


def _lens_reply_cases() -> Iterator[tuple[str, dict[str, Any], str, str, tuple[str, ...]]]:
    brief = _frame(
        "BRIEF",
        service={
            "id": "cal.example.com",
            "name": "Example Calendar",
            "summary": "Your calendar.",
        },
        capabilities=[
            {
                "name": "calendar.find",
                "kind": "ask",
                "summary": "Search events",
                "params": {"query?": "string", "day?": "date"},
            },
            {
                "name": "calendar.reschedule",
                "kind": "intent",
                "summary": "Move a meeting",
                "params": {"event": "string — id or title", "to": "datetime"},
                "risk": "low",
            },
            {
                "name": "shop.order",
                "kind": "intent",
                "params": {"items": [{"sku": "string", "qty": "int"}], "ship": {"zip": "string"}},
            },
            {"name": "ping", "kind": "ask"},
        ],
    )
    yield (
        "lens-brief",
        brief,
        "# Example Calendar (cal.example.com)\nYour calendar.\n"
        "ask calendar.find(query?: string, day?: date) — Search events\n"
        "intent calendar.reschedule(event: string — id or title, to: datetime)"
        " — Move a meeting [risk:low]\n"
        "intent shop.order(items: [{sku: string, qty: int}], ship: {zip: string})\n"
        "ask ping()",
        "BRIEF: header, summary, one line per capability; nested and list params",
        ("brief",),
    )
    no_summary = copy.deepcopy(brief)
    del no_summary["service"]["summary"]
    no_summary["capabilities"] = no_summary["capabilities"][3:]
    yield (
        "lens-brief-no-summary",
        no_summary,
        "# Example Calendar (cal.example.com)\nask ping()",
        "a missing service summary omits its line",
        ("brief",),
    )
    one = _frame("PROPOSALS", proposals=[_proposal("p_7Hc2", data={"room": "4B", "seats": [1, 2]})])
    yield (
        "lens-proposals-one",
        one,
        f"1 proposal:\n{_MOVE}\n{_FX}\n"
        "  cost: free · risk: low · undo: 1h · expires: 2026-09-21T14:23:20Z\n"
        "  data:\n    room: 4B\n    seats: [1, 2]",
        "one proposal: all attributes are its own; data as a lean entry",
        ("proposals",),
    )
    two = _frame(
        "PROPOSALS",
        proposals=[
            _proposal("p_7Hc2", effects=[]),
            _proposal("p_8", effects=[], cost={"amount": 1250, "currency": "USD"}),
        ],
    )
    yield (
        "lens-proposals-shared",
        two,
        "2 proposals — risk: low · undo: 1h · expires: 2026-09-21T14:23:20Z:\n"
        f"{_MOVE}\n  cost: free\n"
        '[p_8] Move "1:1 with Ana" to Thu 15:00\n  cost: 12.50 USD',
        "attributes identical across proposals move to the header",
        ("proposals", "shared"),
    )
    same = _frame(
        "PROPOSALS", proposals=[_proposal("p_1", effects=[]), _proposal("p_2", effects=[])]
    )
    yield (
        "lens-proposals-all-shared",
        same,
        "2 proposals — cost: free · risk: low · undo: 1h · expires: 2026-09-21T14:23:20Z:\n"
        '[p_1] Move "1:1 with Ana" to Thu 15:00\n[p_2] Move "1:1 with Ana" to Thu 15:00',
        "everything shared: no attribute lines",
        ("proposals", "shared"),
    )
    none_shared = _frame(
        "PROPOSALS",
        proposals=[
            _proposal("p_1", effects=[], risk="high", undo=None, expires=1790000640),
            _proposal("p_2", effects=[], cost={"amount": 500, "currency": "JPY"}),
        ],
    )
    yield (
        "lens-proposals-none-shared",
        none_shared,
        "2 proposals:\n"
        '[p_1] Move "1:1 with Ana" to Thu 15:00\n'
        "  cost: free · risk: high · undo: never · expires: 2026-09-21T14:24Z\n"
        '[p_2] Move "1:1 with Ana" to Thu 15:00\n'
        "  cost: 500 JPY · risk: low · undo: 1h · expires: 2026-09-21T14:23:20Z",
        "nothing shared; zero-decimal currency; irreversible; whole-minute expiry",
        ("proposals", "money", "time"),
    )
    effects = _frame(
        "PROPOSALS",
        proposals=[
            _proposal(
                "p_x",
                effects=[
                    {"op": "create", "target": "order"},
                    {"op": "delete", "target": "cart", "from": 3},
                    {"op": "charge", "target": "card", "to": 1250, "detail": ""},
                    {"op": "other", "target": "log", "detail": "audit"},
                    {"op": "refund", "target": "x", "field": "n", "from": None, "to": True},
                ],
                cost={"amount": -1205, "currency": "EUR"},
                undo={"window": 86400},
            )
        ],
    )
    yield (
        "lens-effect-lines",
        effects,
        '1 proposal:\n[p_x] Move "1:1 with Ana" to Thu 15:00\n'
        "  + create order\n  - delete cart: 3 → -\n  $ charge card: - → 1250\n"
        "  * other log — audit\n  * refund x.n: - → true\n"
        "  cost: -12.05 EUR · risk: low · undo: 1d · expires: 2026-09-21T14:23:20Z",
        "every effect symbol, a missing side as -, an empty detail omitted, a negative amount",
        ("effects", "money"),
    )
    blanks = _frame(
        "RECEIPT",
        auto=True,
        receipt={
            "id": "r_5",
            "summary": "Tidied",
            "undo": None,
            "effects": [
                {"op": "update", "target": "a", "field": "", "detail": ""},
                {"op": "update", "target": "b", "field": None, "detail": None},
                {"op": "update", "target": "c", "field": 0, "detail": 0},
                {"op": "update", "target": "d", "field": False, "detail": False},
                {"op": "update", "target": "e", "field": 7, "detail": True},
                {"op": "update", "target": "f", "field": "-", "detail": "-"},
            ],
        },
    )
    yield (
        "lens-effect-fields-truthy",
        blanks,
        "✓ Tidied (receipt r_5) · irreversible\n"
        "  ~ update a\n  ~ update b\n  ~ update c\n  ~ update d\n"
        "  ~ update e.7 — true\n  ~ update f.- — -",
        "field and detail show only when truthy in JavaScript: never target., target.-, "
        "target.0 or target.false",
        ("effects", "receipt", "auto"),
    )
    yield (
        "lens-effect-lone-surrogate",
        _frame(
            "PROPOSALS",
            proposals=[
                _proposal(
                    "p_s",
                    effects=[{"op": "send", "target": "ana", "from": "a\ud83d", "to": "\ude00"}],
                    undo=None,
                    risk="medium",
                )
            ],
        ),
        '1 proposal:\n[p_s] Move "1:1 with Ana" to Thu 15:00\n'
        '  > send ana: "a\ud83d" → "\ude00"\n'
        "  cost: free · risk: medium · undo: never · expires: 2026-09-21T14:23:20Z",
        "a lone surrogate is written raw in a lean scalar, as the reference's quote writes it",
        ("effects", "surrogate"),
    )
    yield (
        "lens-error-lone-surrogate",
        _frame(
            "ERROR",
            code="invalid_params",
            message="Bad \ud83d.",
            fix=[{"say": "drop \ude00", "params": {"q": "x\ud83d"}}],
            need=["\ud83d"],
        ),
        "✗ invalid_params: Bad \ud83d.\n"
        '  fix: drop \ude00 → params {"q":"x\\ud83d"}\n'
        '  need: ["\\ud83d"]',
        "compact JSON (fix params, need) escapes a lone surrogate as JSON.stringify does; "
        "text fields keep it raw",
        ("error", "surrogate"),
    )
    yield (
        "lens-brief-blank-fields",
        _frame(
            "BRIEF",
            service={"id": "x.example", "name": "X", "summary": ""},
            capabilities=[
                {"name": "x.a", "kind": "ask", "summary": "", "risk": None},
                {"name": "x.b", "kind": "intent", "summary": "Buy", "risk": ""},
            ],
        ),
        "# X (x.example)\nask x.a()\nintent x.b() — Buy",
        "an empty service or capability summary and an empty or null risk are not shown",
        ("brief",),
    )
    yield (
        "lens-money-integral-float",
        _frame(
            "PROPOSALS",
            proposals=[
                _proposal("p_f", effects=[], cost={"amount": 1250.0, "currency": "USD"}),
                _proposal("p_g", effects=[], cost={"amount": -700.0, "currency": "KRW"}),
            ],
        ),
        "2 proposals — risk: low · undo: 1h · expires: 2026-09-21T14:23:20Z:\n"
        '[p_f] Move "1:1 with Ana" to Thu 15:00\n  cost: 12.50 USD\n'
        '[p_g] Move "1:1 with Ana" to Thu 15:00\n  cost: -700 KRW',
        "an amount written 1250.0 is the integer 1250 to a JSON reader such as JavaScript",
        ("proposals", "money"),
    )
    yield (
        "lens-clarify",
        _frame(
            "CLARIFY",
            question="Which Ana?",
            options=[
                {"label": "Ana Lee", "params": {"event": "e1"}},
                {"label": "Ana Ruiz", "params": {"event": "e2"}},
            ],
        ),
        "? Which Ana?\n  1. Ana Lee\n  2. Ana Ruiz",
        "CLARIFY: the question and numbered labels",
        ("clarify",),
    )
    yield (
        "lens-receipt",
        _frame("RECEIPT", receipt=RECEIPT),
        "✓ Moved 1:1 with Ana (receipt r_91) · undo until 2026-09-21T15:15Z\n"
        "  result:\n    event: e42\n    at: 1790000100",
        "RECEIPT: no effects unless auto; a field named at inside result stays plain",
        ("receipt", "time"),
    )
    yield (
        "lens-receipt-auto-replay",
        _frame("RECEIPT", auto=True, replay=True, receipt=RECEIPT),
        "✓ Moved 1:1 with Ana (receipt r_91) (replay) · undo until 2026-09-21T15:15Z\n"
        f"{_FX}\n  result:\n    event: e42\n    at: 1790000100",
        "an auto-commit shows its effects; a replay is marked",
        ("receipt", "auto"),
    )
    irreversible = {k: v for k, v in RECEIPT.items() if k != "result"}
    irreversible["undo"] = None
    yield (
        "lens-receipt-irreversible",
        _frame("RECEIPT", receipt=irreversible),
        "✓ Moved 1:1 with Ana (receipt r_91) · irreversible",
        "no undo window, no result",
        ("receipt",),
    )
    undo = {"id": "r_92", "summary": "Moved it back", "undoes": "r_91", "undo": None, "result": {}}
    yield (
        "lens-receipt-undo",
        _frame("RECEIPT", replay=True, receipt=undo),
        "↶ undid r_91: Moved it back (receipt r_92) (replay)\n  result: {}",
        "an undo receipt",
        ("receipt",),
    )
    yield (
        "lens-error-all-lines",
        _frame(
            "ERROR",
            code="consent_required",
            message="This order needs the principal's approval.",
            fix=[{"say": "use next year", "params": {"to": "2026-09-24T15:00:00Z", "n": 0.5}}],
            need=[{"risk": "low"}],
            consent={"proposal": "p_1", "hash": "Qm9x", "summary": "Order 2 coffees"},
            retry=3600,
        ),
        "✗ consent_required: This order needs the principal's approval.\n"
        '  fix: use next year → params {"to":"2026-09-24T15:00:00Z","n":0.5}\n'
        '  need: [{"risk":"low"}]\n'
        "  consent: principal must approve Qm9x (Order 2 coffees)\n"
        "  retry in: 1h",
        "ERROR with fix, need, consent and retry",
        ("error",),
    )
    yield (
        "lens-error-minimal",
        _frame(
            "ERROR",
            code="invalid_params",
            message="Bad day.",
            fix=[{"say": "pick a day"}],
            need=[],
            retry=None,
        ),
        "✗ invalid_params: Bad day.\n  fix: pick a day",
        "an empty need and a null retry are not shown; a fix without params",
        ("error",),
    )
    for progress, shown in ((0.425, "43"), (0.005, "1"), (1, "100")):
        yield (
            f"lens-event-{shown}",
            _frame("EVENT", message="charging card", progress=progress),
            f"… charging card ({shown}%)",
            "EVENT progress rounds half up",
            ("event",),
        )
    yield (
        "lens-event-plain",
        _frame("EVENT", message="working", data={"x": 1}),
        "… working",
        "EVENT without progress; data is not shown",
        ("event",),
    )
    yield (
        "lens-answer-more",
        _frame(
            "ANSWER",
            data={"events": [{"id": "e1", "at": "09:00"}]},
            more=[{"handle": "h_3kd", "path": "data.events", "remaining": 37, "est": 1840}],
        ),
        "events[1]{id,at}:\n  e1,09:00\n… 37 more at data.events — EXPAND h_3kd (~1840 tokens)",
        "ANSWER is the lean data; more lines come last",
        ("answer", "more"),
    )
    yield (
        "lens-answer-scalar",
        _frame("ANSWER", data="just text"),
        "just text",
        "ANSWER with scalar data",
        ("answer",),
    )


LENS_NOTES = {
    "brief": "BRIEF rendering",
    "proposals": "PROPOSALS rendering",
    "shared": "attribute sharing between proposals",
    "money": "money formatting",
    "time": "time formatting",
    "effects": "effect lines",
    "clarify": "CLARIFY rendering",
    "receipt": "RECEIPT rendering",
    "auto": "an auto-commit receipt",
    "error": "ERROR rendering",
    "event": "EVENT rendering",
    "answer": "ANSWER rendering",
    "more": "more lines",
    "surrogate": "a lone UTF-16 surrogate: raw in lean, escaped in compact JSON",
    "reference": "a reply case of the reference's lens.json, with its published text",
    "malformed": "a frame that is not a renderable reply",
    "derived": "derived from a good case by one mutation",
    "unknown-kind": "the kind is not a reply kind",
    "receipt-not-object": "the receipt is not an object",
    "more-not-list": "more is not a list",
    "more-entry-not-object": "a more entry is not an object",
    "time-out-of-range": "a time JavaScript's Date cannot represent (toISOString throws)",
}


@suite(
    "parley.lens",
    description="lens(reply): the Lens of every reply kind (SPEC.md section 9.2, NOTES.md)",
    notes=LENS_NOTES,
)
def lens_cases() -> Iterator[Case]:
    for ref in _third_replies():
        yield Case(
            "lens-reference-" + ref["name"].replace(":", "").replace(" ", "-"),
            {"reply": ref["input"]},
            output={"lens": ref["lens"]},
            comment=f"the reference's reply case {ref['name']!r}",
            flags=("reference",),
        )
    good: Case | None = None
    for vid, reply, text, comment, flags in _lens_reply_cases():
        case = Case(vid, {"reply": reply}, output={"lens": text}, comment=comment, flags=flags)
        good = case if vid == "lens-receipt" else good
        yield case
    assert good is not None
    bad = {"code": "bad_frame"}
    yield from derive(
        good,
        [
            Mutation(
                "unknown-kind",
                "a kind that SPEC.md section 5 does not define",
                lambda i: i["reply"].update(kind="RECIEPT"),
                error={**bad, "reason": "unknown_kind"},
                extra_flags=("malformed",),
            ),
            Mutation(
                "receipt-not-object",
                "the receipt is a string",
                lambda i: i["reply"].update(receipt="r_91"),
                error={**bad, "reason": "bad_receipt"},
                extra_flags=("malformed",),
            ),
            Mutation(
                "more-not-list",
                "more is an object",
                lambda i: i["reply"].update(more={"handle": "h"}),
                error={**bad, "reason": "bad_reply"},
                extra_flags=("malformed",),
            ),
            Mutation(
                "time-out-of-range",
                "undo.until is one second past the last ECMAScript date (8.64e15 ms)",
                lambda i: i["reply"]["receipt"].update(undo={"until": 8_640_000_000_001}),
                error={**bad, "reason": "bad_time"},
            ),
            Mutation(
                "more-entry-not-object",
                "a more entry is a string",
                lambda i: i["reply"].update(more=["h_1"]),
                error={**bad, "reason": "bad_more"},
                extra_flags=("malformed",),
            ),
        ],
    )


# --------------------------------------------------------------------------- fit

MENU = [
    {"sku": f"S{i:03d}", "name": f"Dish {i}", "price": 450 + 25 * i, "cal": 300 + i, "protein": i}
    for i in range(60)
]
HANDLES = [f"h_{c}{c}{c}{c}" for c in "ABCDEFGHIJKLMNOP"]


def _fit_cases() -> Iterator[tuple[str, dict[str, Any], int, str, tuple[str, ...]]]:
    yield (
        "fit-answer-table",
        _frame("ANSWER", data={"menu": MENU}),
        300,
        "a table halves",
        ("deep",),
    )
    yield ("fit-answer-fits", _frame("ANSWER", data={"menu": MENU[:3]}), 300, "no cut", ("fits",))
    yield (
        "fit-answer-long-string",
        _frame("ANSWER", data={"note": "word " * 400, "n": 1}),
        60,
        "a long string keeps max(200, len/2) code units and …",
        ("deep", "string"),
    )
    yield (
        "fit-answer-string-stop",
        _frame("ANSWER", data={"note": "x" * 300}),
        1,
        "a string already at 200 units stops the loop",
        ("deep", "string"),
    )
    yield (
        "fit-answer-astral-string",
        _frame("ANSWER", data="\U0001f389" * 150),
        10,
        "strings are cut in UTF-16 code units",
        ("deep", "string"),
    )
    yield (
        "fit-answer-nested",
        _frame(
            "ANSWER",
            data={
                "a": {"rows": [{"t": "v " * 115} for _ in range(6)]},
                "b": list(range(40)),
                "c": "z " * 225,
            },
        ),
        150,
        "the largest candidate first; ties go to the first found",
        ("deep", "nested"),
    )
    yield (
        "fit-answer-elided-ancestor",
        _frame("ANSWER", data=[{"t": "w " * 300} for _ in range(4)]),
        1,
        "a cut inside a dropped item has no entry",
        ("deep", "nested"),
    )
    yield (
        "fit-answer-existing-more",
        _frame(
            "ANSWER",
            data={"n": list(range(200))},
            more=[{"handle": "h_old", "path": "data.q", "remaining": 2, "est": 5}],
        ),
        80,
        "existing more entries stay first",
        ("deep", "more"),
    )
    proposals = [
        {
            "id": f"p_{i}",
            "capability": "shop.order",
            "summary": f"Order plan {i}",
            "effects": [{"op": "charge", "target": "card", "detail": "d" * 250}],
            "cost": {"amount": 1000 + i, "currency": "USD"},
            "risk": "low",
            "undo": {"window": 600},
            "expires": 1790000600,
            "hash": f"hash{i}",
            "data": {"items": MENU[: 10 + i]},
        }
        for i in range(4)
    ]
    yield (
        "fit-proposals-deep-then-list",
        _frame("PROPOSALS", proposals=proposals),
        150,
        "proposal data first, then whole trailing proposals; effects untouched",
        ("deep", "list-root"),
    )
    yield (
        "fit-proposals-deep-only",
        _frame("PROPOSALS", proposals=proposals[:2]),
        250,
        "only proposal data is cut",
        ("deep",),
    )
    yield (
        "fit-receipt-result",
        _frame(
            "RECEIPT",
            auto=True,
            receipt={**RECEIPT, "result": {"lines": MENU[:30], "memo": "m" * 500}},
        ),
        200,
        "only receipt.result is cut",
        ("deep",),
    )
    caps = [
        {"name": f"menu.{i}", "kind": "ask", "summary": f"Tool {i}", "params": {"q": "string"}}
        for i in range(30)
    ]
    yield (
        "fit-brief-capabilities",
        _frame("BRIEF", service={"id": "menu.example", "name": "Menu"}, capabilities=caps),
        100,
        "a BRIEF drops whole trailing capabilities",
        ("list-root",),
    )
    yield (
        "fit-event-untouched",
        _frame("EVENT", message="x" * 900),
        5,
        "EVENT is never fitted",
        ("fits",),
    )
    yield (
        "fit-answer-key-order",
        _frame("ANSWER", data={"a": list(range(30)), "1": list(range(30))}),
        60,
        "two candidates of equal size: the walk visits the array-index key 1 before a,"
        " as JavaScript does, so data.1 is cut first",
        ("deep", "nested"),
    )
    yield (
        "fit-proposals-no-list",
        _frame("PROPOSALS"),
        0,
        "a PROPOSALS reply without a proposals list renders 0 proposals: nothing to cut",
        ("fits",),
    )
    yield (
        "fit-negative-budget",
        _frame("ANSWER", data={"n": list(range(9)), "s": "q" * 260}),
        -1,
        "nothing fits: elide until nothing can be cut",
        ("deep",),
    )


@suite(
    "parley.fit",
    description=(
        "fit(reply, budget, handles): the reference fitting loop of NOTES.md; handles are "
        "taken from input.handles in order; output carries the fitted reply, the parked "
        "remainders, its Lens and that Lens's estimate"
    ),
    notes={
        "deep": "cuts inside deep roots (ANSWER.data, proposal data, receipt.result)",
        "list-root": "drops trailing items of PROPOSALS.proposals or BRIEF.capabilities",
        "string": "string cuts",
        "nested": "candidate choice among nested values",
        "more": "existing more entries",
        "fits": "nothing to cut",
        "bad-budget": "a budget that is not an integer",
        "derived": "derived from a good case by one mutation",
        "float-budget": "the budget is a float",
        "string-budget": "the budget is a string",
    },
)
def fit_cases() -> Iterator[Case]:
    good: Case | None = None
    for vid, reply, budget, comment, flags in _fit_cases():
        fitted, parked = fit_oracle(reply, budget, handles=iter(HANDLES).__next__)
        text = parley.lens.lens(fitted)
        case = Case(
            vid,
            {"reply": reply, "budget": budget, "handles": HANDLES[:8]},
            output={
                "fitted": fitted,
                "parked": parked,
                "lens": text,
                "est": parley.lens.estimate(text),
            },
            comment=comment,
            flags=flags,
        )
        good = case if vid == "fit-answer-table" else good
        yield case
    assert good is not None
    yield from derive(
        good,
        [
            Mutation(
                "float-budget",
                "a budget of 1.5",
                lambda i: i.update(budget=1.5),
                error={"code": "bad_argument", "reason": "bad_budget"},
                extra_flags=("bad-budget",),
            ),
            Mutation(
                "string-budget",
                "a budget given as text",
                lambda i: i.update(budget="300"),
                error={"code": "bad_argument", "reason": "bad_budget"},
                extra_flags=("bad-budget",),
            ),
        ],
    )


# --------------------------------------------------------------------------- EXPAND


@suite(
    "parley.expand_slice",
    description=(
        "expand_slice(value, budget, handles): the first EXPAND slice of a parked remainder "
        "(binary search for the longest prefix whose Lens fits), the rest parked again"
    ),
    notes={
        "list": "a list remainder served as data.items",
        "string": "a string remainder served as data.text",
        "whole": "everything fits in one slice",
        "minimum": "one item is served even when it alone exceeds the budget",
    },
)
def expand_slice_cases() -> Iterator[Case]:
    for vid, value, budget, comment, flags in (
        ("slice-menu", MENU[10:], 200, "a table remainder", ("list",)),
        ("slice-numbers", list(range(50)), 30, "a scalar-list remainder", ("list",)),
        ("slice-all", [1, 2, 3], 100, "the whole remainder fits", ("list", "whole")),
        ("slice-one-big", [{"t": "w " * 200}, 1], 5, "an oversized first item", ("minimum",)),
        ("slice-text", "alpha beta gamma " * 40, 60, "a string remainder", ("string",)),
        ("slice-text-astral", "\U0001f389é" * 80, 40, "astral characters", ("string",)),
        ("slice-empty", [], 10, "an empty remainder", ("whole",)),
    ):
        yield Case(
            vid,
            {"value": value, "budget": budget, "handles": ["h_NEXTslice"]},
            comment=comment,
            flags=flags,
        )


ALICE = "ed25519:" + "A" * 43
MALLORY = "ed25519:" + "M" * 43


@suite(
    "parley.expand",
    description=(
        "expand(store, handle, budget, key, now): a handle parked for proof key stored.key at "
        "stored.at with stored.ttl, read back by request; binding and expiry are enforced"
    ),
    notes={
        "bound": "a handle bound to the proof key of the request that produced it",
        "anonymous": "a handle from an anonymous request: unbound but unguessable",
        "derived": "derived from a good case by one mutation",
        "foreign-key": "another agent's key reads the handle",
        "anonymous-reader": "an anonymous request reads a bound handle",
        "expired": "the handle's lifetime has passed",
        "unknown-handle": "a handle that was never issued",
    },
)
def expand_cases() -> Iterator[Case]:
    good = Case(
        "expand-bound",
        {
            "stored": {
                "handle": "h_ALICEonly",
                "value": MENU[:20],
                "key": ALICE,
                "at": 1790000000,
                "ttl": 600,
            },
            "request": {"handle": "h_ALICEonly", "budget": 150, "key": ALICE, "now": 1790000599},
            "handles": ["h_NEXTalice"],
        },
        comment="the producing key reads its own handle within its lifetime",
        flags=("bound",),
    )
    yield good
    yield Case(
        "expand-anonymous",
        {
            "stored": {"handle": "h_ANONhandle", "value": "x" * 300, "key": None, "at": 1790000000},
            "request": {"handle": "h_ANONhandle", "budget": 500, "key": MALLORY, "now": 1790000001},
            "handles": [],
        },
        comment="an anonymous handle is unbound: whoever holds it may read it",
        flags=("anonymous",),
    )
    not_found = {"code": "not_found", "reason": "unknown_handle"}
    yield from derive(
        good,
        [
            Mutation(
                "foreign-key",
                "another agent presents the handle",
                lambda i: i["request"].update(key=MALLORY),
                error=not_found,
            ),
            Mutation(
                "anonymous-reader",
                "an anonymous request presents a bound handle",
                lambda i: i["request"].update(key=None),
                error=not_found,
            ),
            Mutation(
                "expired",
                "read at exactly stored.at + ttl",
                lambda i: i["request"].update(now=1790000600),
                error={"code": "expired", "reason": "handle_expired"},
            ),
            Mutation(
                "unknown-handle",
                "a handle that was never issued",
                lambda i: i["request"].update(handle="h_ALICEonlz"),
                error=not_found,
            ),
        ],
    )


# --------------------------------------------------------------------------- upstream format


@raw_file("parley/upstream-format/lens.json")
def upstream_lens() -> Any:
    """Every Lens vector in the reference's ``lens.json`` format."""
    out: list[dict[str, Any]] = [
        {"name": case["name"], "type": "value", "input": case["input"], "lens": case["lens"]}
        for case in _third_values()
    ]
    for vid, value, text, _comment, _flags in _lean_value_cases():
        out.append({"name": vid, "type": "value", "input": value, "lens": text})
    for case in _third_replies():
        out.append({k: case[k] for k in ("name", "type", "input", "lens")})
    for vid, reply, text, _comment, _flags in _lens_reply_cases():
        out.append({"name": vid, "type": "reply", "input": reply, "lens": text})
    return out
