"""Record schemas: the allowed keyword subset, strictness, and the two validators agreeing.

Private imports: the compiled validator (``handoff._validate.compiled_validator``, the fast
path every admission runs, and ``_generate``, which builds it) is held to its oracle, the
jsonschema ``boundary_validator``; the keyword-subset check (``check_restricted``,
``_walk_schema``) is the oracle that keeps every shipped schema inside the subset the
compiled validator implements, run here over every schema the package ships.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

import handoff
from handoff._validate import (
    boundary_validator,
    check_restricted,
    compiled_validator,
    record_schema_names,
)
from handoff.schemas import ecma_pattern

from .handoff_helpers import raised, settled

CORE_SCHEMAS = [
    n for n in record_schema_names() if n.startswith(("def.", "pair.", "record.schema"))
]


def test_core_schemas_exist() -> None:
    assert "record.schema.json" in CORE_SCHEMAS
    for schema in handoff.records.CORE_PAIRS.values():
        assert schema in CORE_SCHEMAS


@pytest.mark.parametrize("name", record_schema_names())
def test_record_schemas_use_only_the_allowed_keywords(name: str) -> None:
    """§4: type, required, properties, enum, const, pattern, items and a relative $ref."""
    check_restricted(name)

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                assert key in handoff.schemas.ALLOWED_KEYWORDS | {
                    "$schema",
                    "$id",
                    "$comment",
                    "title",
                    "description",
                    "examples",
                }, f"{name}: {key}"
                if key == "properties":
                    for sub in value.values():
                        walk(sub)
                elif key == "items":
                    walk(value)
                elif key == "$ref":
                    assert "://" not in value
                    assert not value.startswith("/")

    walk(handoff.load_schema(name))


def test_restriction_check_refuses_other_keywords(tmp_path: Any) -> None:
    from handoff._validate import _walk_schema

    bad = {"type": "object", "additionalProperties": False, "properties": {"a": {"minimum": 1}}}
    problems = list(_walk_schema(bad, "x"))
    assert len(problems) == 2
    assert list(_walk_schema({"$ref": "https://example.org/s.json"}, "x"))
    assert not list(_walk_schema({"$ref": "def.identifier.json", "title": "t"}, "x"))


def test_every_schema_is_valid_2020_12() -> None:
    for name in handoff.schema_names():
        Draft202012Validator.check_schema(handoff.load_schema(name))


# --- the two deliberate differences from plain jsonschema ----------------------------------


def _plain(name: str) -> Draft202012Validator:
    registry: Registry[Any] = Registry().with_resources(
        (n, Resource.from_contents(handoff.load_schema(n))) for n in handoff.schema_names()
    )
    base = dict(handoff.load_schema(name))
    base.setdefault("$id", name)
    return Draft202012Validator(base, registry=registry)


@pytest.mark.parametrize("fast", [False, True])
def test_dollar_does_not_match_before_a_final_newline(fast: bool) -> None:
    value = "sha-256:" + "ab" * 32 + "\n"
    assert _plain("def.digest.json").is_valid(value), "plain jsonschema accepts it"
    with pytest.raises(handoff.HandoffError) as caught:
        handoff.schemas.check_schema("def.digest.json", value, fast=fast)
    assert caught.value.code == "schema"
    handoff.schemas.check_schema("def.digest.json", value[:-1], fast=fast)


@pytest.mark.parametrize("fast", [False, True])
@pytest.mark.parametrize("member", ["id", "by", "ts", "key"])
def test_dollar_is_strict_inside_referenced_schemas(fast: bool, member: str) -> None:
    """The members checked through a $ref get the strict pattern too (jsonschema would
    otherwise switch to its plain class for a referenced file carrying $schema)."""
    record = raised()
    record[member] = record[member] + "\n"
    assert _plain("record.schema.json").is_valid(record), "plain jsonschema accepts it"
    with pytest.raises(handoff.HandoffError):
        handoff.schemas.check_schema("record.schema.json", record, fast=fast)


@pytest.mark.parametrize("fast", [False, True])
def test_one_point_zero_is_not_an_integer(fast: bool) -> None:
    record = {**raised(), "terms_rev": 1.0}
    assert _plain("record.schema.json").is_valid(record), "plain jsonschema accepts it"
    assert _plain("pair.raised.requester.json").is_valid(record)
    for name in ("record.schema.json", "pair.raised.requester.json"):
        with pytest.raises(handoff.HandoffError):
            handoff.schemas.check_schema(name, record, fast=fast)
    with pytest.raises(handoff.HandoffError):
        handoff.schemas.check_schema(
            "record.schema.json", {**raised(), "terms_rev": True}, fast=fast
        )


def test_ecma_pattern_translation() -> None:
    assert ecma_pattern("^a$").search("a\n") is None
    assert ecma_pattern("^a$").search("a") is not None
    assert ecma_pattern(r"^\d$").search("٣") is None
    assert ecma_pattern(r"^\s$").search("\ufeff") is not None
    assert ecma_pattern(r"^\w+$").search("é") is None
    assert ecma_pattern(r"^[\s\S]{2}$").search("\n\n") is not None
    assert ecma_pattern("^.$").search("\u2028") is None
    assert ecma_pattern("^[$]$").search("$") is not None
    with pytest.raises(handoff.HandoffError):
        ecma_pattern(r"^[^\S]$")
    with pytest.raises(handoff.HandoffError):
        ecma_pattern("^[a-")


# --- compiled == strict jsonschema (hypothesis) --------------------------------------------

_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53) + 1, 2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)

_MEMBERS = sorted(handoff.load_schema("record.schema.json")["properties"])
_tricky_strings = st.sampled_from(
    [
        "n1", "", " ", "a b", "a\n", "a\u00a0", "x" * 257, "sha-256:" + "ab" * 32,
        "sha-256:" + "ab" * 32 + "\n", TS_ := "2026-10-27T10:00:00Z", TS_ + "\n",
        "0.3", "0.3\n", "demo-keep/0.3", "demo-keep/0.3\n", "raised", "settled", "done",
        "same_as", "principal", "requester", "\U0001f600" * 256, "\U0001f600" * 257,
    ]
)  # fmt: skip
_values = _json | _tricky_strings | st.sampled_from([1, 1.0, 2, 0, -1, True, [], {}])


@st.composite
def _near_records(draw: st.DrawFn) -> Any:
    base = draw(
        st.sampled_from(
            [
                raised(),
                settled("s1", evidence={"presented": "sha-256:" + "ab" * 32}),
                settled("s2", authority={"kind": "delegated", "decider": "b", "chain": ["a"]}),
                {**raised("r"), "type": "related", "relation": {"kind": "same_as", "target": {}}},
                {**raised("m"), "type": "note", "about": {"key": "k1"}},
            ]
        )
    )
    record = json.loads(json.dumps(base))
    for _ in range(draw(st.integers(0, 3))):
        action = draw(st.integers(0, 2))
        if action == 0:
            record[draw(st.sampled_from(_MEMBERS))] = draw(_values)
        elif action == 1 and record:
            record.pop(draw(st.sampled_from(sorted(record))))
        else:
            nested = [k for k, v in record.items() if isinstance(v, dict) and v]
            if nested:
                inner = record[draw(st.sampled_from(nested))]
                inner[draw(st.sampled_from(sorted(inner)))] = draw(_values)
    return record


@settings(max_examples=400)
@given(
    name=st.sampled_from(CORE_SCHEMAS) | st.sampled_from(record_schema_names()),
    instance=_near_records() | _values,
)
def test_compiled_validator_equals_strict_jsonschema(name: str, instance: Any) -> None:
    strict = boundary_validator(name).is_valid(instance)
    fast = compiled_validator(name)(instance) is None
    assert strict == fast, (name, instance)


@settings(max_examples=200)
@given(instance=_near_records())
def test_strict_differs_from_plain_only_on_documented_points(instance: Any) -> None:
    name = "record.schema.json"
    strict = boundary_validator(name).is_valid(instance)
    plain = _plain(name).is_valid(instance)
    if strict != plain:
        assert plain
        assert not strict
        text = json.dumps(instance)
        assert ".0" in text or "\\n" in text or "e" in text.lower()


# --- the compiled validator's memo of matching strings ----------------------------------


@settings(max_examples=200)
@given(
    name=st.sampled_from(CORE_SCHEMAS),
    instances=st.lists(_near_records() | _values, min_size=1, max_size=4),
)
def test_compiled_validator_memo_never_changes_a_verdict(name: str, instances: Any) -> None:
    """Pattern sites remember strings that matched; a fresh validator must agree with it."""
    from handoff._validate import _generate

    fresh = _generate(name)
    for instance in [*instances, *instances]:
        strict = boundary_validator(name).is_valid(instance)
        assert (fresh(instance) is None) == strict, (name, instance)
        assert (compiled_validator(name)(instance) is None) == strict, (name, instance)


def test_compiled_validator_memo_ignores_str_subclasses() -> None:
    """A str subclass that claims equality with a remembered value is still checked."""

    class Liar(str):
        __hash__ = str.__hash__

        def __eq__(self, other: object) -> bool:
            return True

    check = compiled_validator("record.schema.json")
    good = raised()
    assert check(good) is None
    assert check(good) is None  # now remembered
    bad = {**good, "ts": Liar("not a time"), "ext": Liar("NOT/AN/EXT")}
    assert check(bad) is not None
    assert not boundary_validator("record.schema.json").is_valid(bad)


def test_compiled_validator_remembers_no_input() -> None:
    """A compiled validator keeps no memory of what it checked (DESIGN: no hidden state)."""
    from handoff._validate import _generate

    check = _generate("def.timestamp.json")
    before = {k: repr(v) for k, v in check.__globals__.items() if not k.startswith("__")}
    for n in range(300):
        assert check(f"2026-10-27T10:00:00.{n:06d}Z") is None
    after = {k: repr(v) for k, v in check.__globals__.items() if not k.startswith("__")}
    assert after == before
    assert check("2026-10-27T10:00:00.000001Z\n") is not None
