"""The harness's response check agrees with response.schema.json (jsonschema as oracle).

Private imports: ``ppcheck._response.response_problem`` is the harness's hand-written check of
an adapter's answer, the fast path held here to its oracle, jsonschema over the schema.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from ppcheck._response import response_problem

TOP = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((TOP / "schemas/conformance/response.schema.json").read_text("utf-8"))
ORACLE = Draft202012Validator(SCHEMA)

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 2),
    st.floats(allow_nan=False, allow_infinity=False, width=16),
    st.sampled_from(["", "x", "a-b"]),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=2),
        st.dictionaries(st.sampled_from(["code", "reason", "message", "k"]), inner, max_size=3),
    ),
    max_leaves=6,
)
_members = st.sampled_from(["id", "output", "error", "unsupported", "extra"])
_responses = st.one_of(
    _values,
    st.dictionaries(_members, _values, max_size=4),
    st.fixed_dictionaries(
        {"id": st.sampled_from(["a", "", 1])},
        optional={
            "output": st.one_of(st.just({}), _values),
            "error": st.one_of(
                st.fixed_dictionaries(
                    {"code": st.sampled_from(["c", "", 0])},
                    optional={
                        "reason": st.sampled_from(["r", "", None]),
                        "message": st.sampled_from(["", "m", 1]),
                        "other": st.just(1),
                    },
                ),
                _values,
            ),
            "unsupported": st.sampled_from([True, False, 1, 1.0, "true", None]),
        },
    ),
)


@given(_responses)
def test_the_check_agrees_with_the_schema(response: Any) -> None:
    assert (response_problem(response) is None) == ORACLE.is_valid(response), response


@pytest.mark.parametrize(
    "response",
    [
        {"id": "a", "unsupported": 1},
        {"id": "a", "unsupported": 1.0},
        {"id": "a", "error": {"code": "c", "reason": ""}},
        {"id": "a", "output": {}, "error": {"code": "c"}},
        {"id": "a"},
        {"id": True, "output": {}},
        [],
        "a",
    ],
)
def test_refused_responses_say_why(response: Any) -> None:
    problem = response_problem(response)
    assert problem is not None
    assert not ORACLE.is_valid(response)


def test_good_responses_pass() -> None:
    for good in (
        {"id": "a", "output": {"x": [1]}},
        {"id": "a", "error": {"code": "c", "reason": "r", "message": ""}},
        {"id": "a", "unsupported": True},
    ):
        assert response_problem(good) is None
        assert ORACLE.is_valid(good)
