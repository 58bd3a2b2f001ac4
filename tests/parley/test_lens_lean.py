"""Lean notation (SPEC.md section 9.1): upstream values, every bare/quoted boundary, totality.

Private imports: ``compact_json``, ``js_number`` and ``js_keys`` of ``parley._lean`` are
JSON.stringify, Number::toString and JavaScript's key order as the reference runs them: the
private oracle the renderer and the fitter's meter are held to elsewhere, held here to the
upstream values (``_is_index`` builds an expected key order).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import parley
from parley._lean import _is_index, compact_json, js_keys, js_number

TOP = Path(__file__).resolve().parents[2]
THIRD = TOP / "vectors" / "third_party" / "parley"


def _load(name: str) -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = json.loads((THIRD / name).read_text(encoding="utf-8"))
    return cases


VALUES = [case for case in _load("lens.json") if case["type"] == "value"]


@pytest.mark.parametrize("case", VALUES, ids=lambda c: c["name"])
def test_reference_lens_values(case: dict[str, Any]) -> None:
    assert case["type"] == "value"
    assert parley.lens.lean(case["input"]) == case["lens"]


@pytest.mark.parametrize("case", _load("estimate.json"), ids=lambda c: repr(c["text"]))
def test_reference_estimates(case: dict[str, Any]) -> None:
    assert parley.lens.estimate(case["text"]) == case["est"]


def test_estimate_rejects_non_text() -> None:
    with pytest.raises(parley.ParleyError) as caught:
        parley.lens.estimate(b"bytes")  # type: ignore[arg-type]
    assert caught.value.reason == "not_text"


def test_estimate_counts_code_points_and_indentation() -> None:
    assert parley.lens.estimate("\U0001f389") == 1  # one code point, not two UTF-16 units
    assert parley.lens.estimate("\n ") == 0
    assert parley.lens.estimate("\n  ") == 1
    assert parley.lens.estimate("1234567") == 3
    assert parley.lens.estimate("\u00a0") == 1


BARE = ["hello world", "0x1F", ".5", "01", "+1", "a-b", "Ana (x)", "1:1", "x=y<z>~^", "ok!?&%$#*"]
QUOTED = {
    "": '""',
    " lead": '" lead"',
    "trail ": '"trail "',
    "-": '"-"',
    "true": '"true"',
    "false": '"false"',
    "null": '"null"',
    "1e5": '"1e5"',
    "-0": '"-0"',
    "12.50": '"12.50"',
    "1E+2": '"1E+2"',
    "a,b": '"a,b"',
    'say "hi"': '"say \\"hi\\""',
    "two\nlines": '"two\\nlines"',
    "tab\there": '"tab\\there"',
    "nb\u00a0sp": '"nb\u00a0sp"',
    "café": '"café"',
    "back\\slash": '"back\\\\slash"',
    "bell\x07": '"bell\\u0007"',
    "del\x7f": '"del\x7f"',
    "lone\ud800": '"lone\ud800"',
    "[x]": '"[x]"',
    "{x}": '"{x}"',
    "a;b": '"a;b"',
}


@pytest.mark.parametrize("text", BARE)
def test_bare_strings(text: str) -> None:
    assert parley.lens.lean(text) == text
    assert parley.lens.lean({text: 1}) == f"{text}: 1"


@pytest.mark.parametrize(("text", "rendered"), sorted(QUOTED.items()))
def test_quoted_strings(text: str, rendered: str) -> None:
    assert parley.lens.lean(text) == rendered
    assert parley.lens.lean({text: 1}) == f"{rendered}: 1"


@pytest.mark.parametrize(
    ("number", "text"),
    [
        (1.5, "1.5"),
        (1e21, "1e+21"),
        (1e20, "100000000000000000000"),
        (1e-7, "1e-7"),
        (1e-6, "0.000001"),
        (5e-324, "5e-324"),
        (-0.0, "0"),
        (1.0, "1"),
        (-3, "-3"),
        (0.1 + 0.2, "0.30000000000000004"),
        (2**53, "9007199254740992"),
        (2**64, "18446744073709552000"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (123456789.125, "123456789.125"),
    ],
)
def test_numbers_follow_ecmascript(number: float, text: str) -> None:
    assert js_number(number) == text
    assert parley.lens.lean(number) == text


@pytest.mark.parametrize("number", [math.inf, -math.inf, math.nan, 10**400])
def test_non_finite_numbers_render_dash(number: float) -> None:
    assert parley.lens.lean(number) == "-"
    assert compact_json([number]) == "[null]"


def test_empty_and_top_level_forms() -> None:
    assert parley.lens.lean({}) == "{}"
    assert parley.lens.lean([]) == "items: []"
    assert parley.lens.lean(None) == "-"
    assert parley.lens.lean({"a": {}, "b": []}) == "a: {}\nb: []"
    assert parley.lens.lean([[1, 2]]) == "items[1]:\n  - [1, 2]"


def test_table_requires_same_keys_in_same_order_and_scalars() -> None:
    assert (
        parley.lens.lean({"t": [{"a": 1, "b": 2}, {"a": 3, "b": 4}]}) == "t[2]{a,b}:\n  1,2\n  3,4"
    )
    swapped = parley.lens.lean({"t": [{"a": 1, "b": 2}, {"b": 4, "a": 3}]})
    assert swapped == "t[2]:\n  - a: 1\n    b: 2\n  - b: 4\n    a: 3"
    nested = parley.lens.lean({"t": [{"a": [1]}, {"a": [2]}]})
    assert nested == "t[2]:\n  - a: [1]\n  - a: [2]"
    with_empty = parley.lens.lean({"t": [{"a": 1}, {}]})
    assert with_empty == "t[2]:\n  - a: 1\n  - {}"
    assert parley.lens.lean({"t": [{"k,v": "x,y"}]}) == 't[1]{"k,v"}:\n  "x,y"'


def test_list_item_forms() -> None:
    value = {"x": [None, True, [], [{"a": 1}, 2], {"a": {"b": {}}, "c": [1, {"d": 2}]}]}
    assert parley.lens.lean(value) == (
        'x[5]:\n  - -\n  - true\n  - []\n  - [{"a":1},2]\n  - a:\n      b: {}\n'
        "    c[2]:\n      - 1\n      - d: 2"
    )


@pytest.mark.parametrize("bad", [{1, 2}, b"x", {"a": object()}, {1: "x"}, [(1, 2)], {"a": {3}}])
def test_non_json_raises_our_error(bad: Any) -> None:
    with pytest.raises(parley.ParleyError) as caught:
        parley.lens.lean(bad)
    assert caught.value.code == "bad_frame"
    assert caught.value.reason == "not_json"


TEXT = st.text(
    alphabet=st.one_of(
        st.sampled_from(list('ab ,-.:"\\\n\t\u00a0é0123456789eE+{}[]')),
        st.characters(codec="utf-8"),
    ),
    max_size=12,
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**60), max_value=2**60),
    st.floats(allow_nan=False, allow_infinity=False),
    TEXT,
)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=5), st.dictionaries(TEXT, inner, max_size=5)),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(JSON)
def test_lean_is_total_and_deterministic(value: Any) -> None:
    first = parley.lens.lean(value)
    assert isinstance(first, str)
    assert parley.lens.lean(json.loads(json.dumps(value))) == first


@settings(max_examples=200, deadline=None)
@given(JSON)
def test_compact_json_is_json_of_the_same_value(value: Any) -> None:
    parsed = json.loads(compact_json(value))
    assert compact_json(parsed) == compact_json(value)


ROWS = st.lists(
    st.tuples(SCALARS, SCALARS, SCALARS).map(lambda t: {"a": t[0], "b": t[1], "c": t[2]}),
    min_size=1,
    max_size=6,
)


def _split_row(row: str) -> list[str]:
    cells, current, quoted, escaped = [], "", False, False
    for char in row:
        if quoted:
            current += char
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                quoted = False
        elif char == '"':
            quoted = True
            current += char
        elif char == ",":
            cells.append(current)
            current = ""
        else:
            current += char
    cells.append(current)
    return cells


@settings(max_examples=200, deadline=None)
@given(ROWS)
def test_a_table_row_never_holds_an_unquoted_comma(rows: list[dict[str, Any]]) -> None:
    lines = parley.lens.lean({"t": rows}).split("\n")
    assert lines[0] == f"t[{len(rows)}]{{a,b,c}}:"
    for line, row in zip(lines[1:], rows, strict=True):
        cells = _split_row(line[2:])
        assert len(cells) == 3
        assert cells == [parley.lens.lean(v) for v in row.values()]


@settings(max_examples=200, deadline=None)
@given(TEXT)
def test_quoted_strings_are_json_and_bare_ones_are_not_ambiguous(text: str) -> None:
    rendered = parley.lens.lean(text)
    if rendered.startswith('"'):
        assert json.loads(rendered) == text or "\\ud" in rendered
    else:
        assert rendered == text
        assert rendered not in {"-", "true", "false", "null"}
        assert "," not in rendered
        assert "\n" not in rendered
        with pytest.raises(ValueError, match=r"."):
            json.loads(rendered, parse_constant=_reject)


def _reject(name: str) -> Any:
    raise ValueError(name)


def test_absurdly_deep_values_raise_our_error() -> None:
    nested: Any = 1
    for _ in range(20_000):
        nested = [nested]
    for render in (parley.lens.lean, compact_json):
        with pytest.raises(parley.ParleyError) as caught:
            render(nested)
        assert caught.value.reason == "too_deep"
    with pytest.raises(parley.ParleyError):
        parley.lens.lens({"kind": "ANSWER", "data": nested})
    with pytest.raises(parley.ParleyError):
        parley.lens.fit({"kind": "ANSWER", "data": nested}, 10, handles=parley.lens.new_handle)


# -------------------------------- JavaScript property order


def test_array_index_keys_come_first_as_in_javascript() -> None:
    # What JSON.parse then Object.keys / JSON.stringify give in JavaScript (checked on Node).
    value = json.loads('{"b":1,"10":2,"2":3,"01":4,"-1":5,"4294967294":6,"4294967295":7,"1.5":8}')
    assert js_keys(value) == ["2", "10", "4294967294", "b", "01", "-1", "4294967295", "1.5"]
    assert compact_json(value) == (
        '{"2":3,"10":2,"4294967294":6,"b":1,"01":4,"-1":5,"4294967295":7,"1.5":8}'
    )
    assert parley.lens.lean({"b": 1, "2": 2, "1": 3}) == 'b: 1\n"1": 3\n"2": 2'.replace(
        'b: 1\n"1": 3\n"2": 2', '"1": 3\n"2": 2\nb: 1'
    )


def test_non_ascii_digits_and_long_numbers_are_not_indexes() -> None:
    assert js_keys({"b": 1, "\u0663": 2, "99999999999": 3, "0": 4}) == [
        "0",
        "b",
        "\u0663",
        "99999999999",
    ]


def test_table_detection_uses_javascript_key_order() -> None:
    # {"b","1"} and {"1","b"} have the same key order in JavaScript: a table.
    value = {"t": [{"b": 1, "1": 2}, {"1": 3, "b": 4}]}
    assert parley.lens.lean(value) == 't[2]{"1",b}:\n  2,1\n  3,4'
    # Mixed-list items and nested objects follow the same order.
    assert (
        parley.lens.lean({"t": [{"z": [1], "7": 0}, 5]}) == 't[2]:\n  - "7": 0\n    z: [1]\n  - 5'
    )
    assert parley.lens.lean([[{"b": 1, "0": 2}]]) == 'items[1]:\n  - [{"0":2,"b":1}]'


KEYS = st.sampled_from(["a", "b", "0", "1", "10", "01", "-1", "4294967295", "x y"])


INDEX_KEYED_VALUES = st.recursive(
    st.one_of(st.none(), st.integers(-5, 5), st.text(max_size=3)),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(KEYS, inner, max_size=4)),
    max_leaves=25,
)


@settings(max_examples=200, deadline=None)
@given(INDEX_KEYED_VALUES)
def test_rendering_does_not_depend_on_insertion_order_of_index_keys(value: Any) -> None:
    """Moving index keys around (JavaScript cannot tell) never changes the Lens."""

    def shuffle(v: Any) -> Any:
        if isinstance(v, dict):
            index = [k for k in v if _is_index(k)]
            rest = {k: shuffle(v[k]) for k in v if not _is_index(k)}
            return rest | {k: shuffle(v[k]) for k in reversed(index)}
        if isinstance(v, list):
            return [shuffle(x) for x in v]
        return v

    other = shuffle(value)
    assert parley.lens.lean(other) == parley.lens.lean(value)
    assert compact_json(other) == compact_json(value)
