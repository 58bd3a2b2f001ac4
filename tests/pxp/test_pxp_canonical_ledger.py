"""Canonical JSON (JavaScript-compatible) and the hash-chained ledger."""

from __future__ import annotations

import copy
import hashlib
import json
import shutil
import subprocess
from typing import Any

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

import pxp

from . import _rooms as van

json_scalars = st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1) | st.text()
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)
floats = st.floats(allow_nan=False, allow_infinity=False)


@given(json_values)
@settings(max_examples=300)
def test_canonical_equals_jcs_on_json_without_floats(value: Any) -> None:
    # JCS (RFC 8785) sorts keys by UTF-16 code units and formats like JSON.stringify.
    assert pxp.wire.canonical_bytes(value) == rfc8785.dumps(value)


@given(floats)
@settings(max_examples=300)
def test_numbers_are_formatted_as_ecmascript(value: float) -> None:
    assert pxp.wire.canonical(value) == rfc8785.dumps(value).decode()


@given(json_values)
@settings(max_examples=200)
def test_canonical_round_trips(value: Any) -> None:
    text = pxp.wire.canonical(value)
    assert json.loads(text) == value
    assert pxp.wire.canonical(json.loads(text)) == text


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ({"b": 1, "a": [True, None]}, '{"a":[true,null],"b":1}'),
        (1.0, "1"),
        (1e21, "1e+21"),
        (0.000001, "0.000001"),
        (1e-7, "1e-7"),
        (-0.0, "0"),
        ("é\u2028\x01\t", '"é\u2028\\u0001\\t"'),
        ({"\U0001f600": 1, "\uffff": 2}, '{"\U0001f600":1,"\uffff":2}'),
    ],
)
def test_canonical_examples(value: Any, text: str) -> None:
    assert pxp.wire.canonical(value) == text


@pytest.mark.parametrize(
    "value",
    [float("nan"), float("inf"), 2**53, {1: "x"}, {"a": {2: 1}}, {"k": b"x"}, {1, 2}],
)
def test_canonical_refuses(value: Any) -> None:
    with pytest.raises(pxp.PxpError) as caught:
        pxp.wire.canonical(value)
    assert caught.value.code == "canonical_invalid"


def _ledger(size: int) -> list[dict[str, Any]]:
    ledger = pxp.ledger.Ledger()
    ledger.append("room_opened", "2026-01-01T00:00:00.000Z", {"topic": "t", "protocol": "PXP/0"})
    for i in range(1, size):
        ledger.append(
            "envelope",
            f"2026-01-01T00:00:{i:02d}.000Z",
            {"seq": i, "seat": "AB"[i % 2], "status": "continue", "envelope_hash": "0" * 64},
        )
    return ledger.to_json()


def _mutations(entries: list[dict[str, Any]], index: int, kind: str) -> list[dict[str, Any]]:
    out = copy.deepcopy(entries)
    if kind == "data":
        out[index]["data"]["seq"] = -1
    elif kind == "at":
        out[index]["at"] = "2030-01-01T00:00:00.000Z"
    elif kind == "type":
        out[index]["type"] = "agreement"
    elif kind == "hash":
        out[index]["hash"] = ("1" if out[index]["hash"][0] != "1" else "2") + out[index]["hash"][1:]
    elif kind == "prev":
        out[index]["prev"] = "f" * 64
    elif kind == "n":
        out[index]["n"] += 7
    elif kind == "drop":
        del out[index]
    elif kind == "insert":
        # a replayed entry (another position's) slipped in before entry ``index``
        out.insert(index, copy.deepcopy(entries[index - 1] if index else entries[1]))
    elif kind == "swap":
        out[index], out[index + 1] = out[index + 1], out[index]
    elif kind == "extra_member":
        out[index]["sig"] = "x"
    elif kind == "missing_member":
        del out[index]["at"]
    return out


KINDS = [
    "data",
    "at",
    "type",
    "hash",
    "prev",
    "n",
    "drop",
    "insert",
    "swap",
    "extra_member",
    "missing_member",
]


@given(st.integers(2, 12), st.data())
@settings(max_examples=200)
def test_any_single_mutation_fails_at_its_index(size: int, data: st.DataObject) -> None:
    entries = _ledger(size)
    head = pxp.verify_ledger(entries)
    kind = data.draw(st.sampled_from(KINDS))
    index = data.draw(st.integers(0, size - (2 if kind == "swap" else 1)))
    mutated = _mutations(entries, index, kind)
    with pytest.raises(pxp.errors.LedgerError) as caught:
        pxp.verify_ledger(mutated, head=head)
    expected = index
    if kind == "drop" and index == size - 1:
        expected = size - 1  # truncated: the first missing position
    assert caught.value.index == expected, (kind, caught.value.reason)


@given(st.integers(1, 10), st.integers(0, 9))
@settings(max_examples=100)
def test_truncation_and_extension_against_a_head(size: int, cut: int) -> None:
    entries = _ledger(size)
    head = pxp.verify_ledger(entries)
    cut = min(cut, size - 1)
    with pytest.raises(pxp.errors.LedgerError) as caught:
        pxp.verify_ledger(entries[:cut], head=head)
    assert caught.value.reason == "head_mismatch"
    assert caught.value.index == cut
    if cut:
        with pytest.raises(pxp.errors.LedgerError) as caught:
            pxp.verify_ledger(entries, head=entries[cut - 1]["hash"])
        assert caught.value.reason == "extended"
        assert caught.value.index == cut


def test_without_a_head_a_truncated_ledger_still_verifies() -> None:
    entries = _ledger(5)
    assert pxp.verify_ledger(entries[:3]) == entries[2]["hash"]


@pytest.mark.parametrize(
    "bad", [None, "[]", 5, {"ledger": []}, [None], [[]], [{"n": True}], [{"n": 1, "type": 2}]]
)
def test_malformed_ledgers_raise_only_pxp_errors(bad: Any) -> None:
    with pytest.raises(pxp.PxpError):
        pxp.verify_ledger(bad)


def test_bad_head_argument() -> None:
    with pytest.raises(pxp.PxpError) as caught:
        pxp.verify_ledger(_ledger(2), head="ABC")
    assert caught.value.code == "head_invalid"


def test_empty_ledger_head_is_zero() -> None:
    assert pxp.verify_ledger([]) == pxp.wire.ZERO_HASH
    with pytest.raises(pxp.errors.LedgerError):
        pxp.verify_ledger([], head="1" * 64)


def test_load_ledger_accepts_text_list_and_room_export() -> None:
    entries = _ledger(3)
    assert pxp.ledger.load_ledger(json.dumps(entries)).head == entries[-1]["hash"]
    assert pxp.ledger.load_ledger({"ledger": entries}).head == entries[-1]["hash"]
    with pytest.raises(pxp.PxpError):
        pxp.ledger.load_ledger("{not json")
    with pytest.raises(pxp.PxpError):
        pxp.ledger.load_ledger({"entries": entries})


def test_ledger_entries_with_non_ascii_and_floats_hash_like_javascript() -> None:
    ledger = pxp.ledger.Ledger()
    entry = ledger.append("note", "t", {"text": "Zoë\U0001f600", "x": 1.5, "y": 2.0})
    expected_body = '{"at":"t","data":{"text":"Zoë\U0001f600","x":1.5,"y":2},"n":1,"type":"note"}'
    assert entry.hash == pxp.wire.sha256_hex(pxp.wire.ZERO_HASH + expected_body)
    assert pxp.verify_ledger(ledger.to_json()) == entry.hash


# ------------------------------------------------- JavaScript's canonical form (review)


# Our own JavaScript statement of the reference's rule (sorted keys by the default sort,
# JSON.stringify for keys and leaves, no whitespace); it reads JSON lines and writes, per
# line, the canonical text and the SHA-256 Node computes of that text and of a string value.
_NODE_CANONICAL = r"""
const { createHash } = require('crypto');
const sha = (s) => createHash('sha256').update(s).digest('hex');
function canon(v) {
  if (Array.isArray(v)) return '[' + v.map(canon).join(',') + ']';
  if (v !== null && typeof v === 'object') {
    const parts = [];
    for (const k of Object.keys(v).sort()) {
      if (v[k] !== undefined) parts.push(JSON.stringify(k) + ':' + canon(v[k]));
    }
    return '{' + parts.join(',') + '}';
  }
  return JSON.stringify(v);
}
const out = [];
for (const line of require('fs').readFileSync(0, 'utf8').split('\n')) {
  if (!line) continue;
  const v = JSON.parse(line);
  const c = canon(v);
  out.push(JSON.stringify([c, sha(c), typeof v === 'string' ? sha(v) : null]));
}
process.stdout.write(out.join('\n'));
"""


_TEXT = st.text(
    st.characters(codec=None, categories=None, exclude_categories=()), max_size=8
) | st.sampled_from(["\ud800", "a\udfffb", "\ud83d\ude00", "\u2028", "\x7f\x00\x1f"])


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53) + 1, 2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4),
    max_leaves=12,
)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        # what JSON.stringify (ES2019, Node 12+) writes
        ("\ud800", '"\\ud800"'),
        ("a\udc00b", '"a\\udc00b"'),
        ("\ud83d\ude00", '"\U0001f600"'),  # a split pair is one character in JavaScript
        # UTF-16 code unit order: U+D800 < U+D83D U+DE00 (the emoji) < U+FFFF
        ({"\ud800": 1, "\uffff": 2, "\U0001f600": 3}, '{"\\ud800":1,"\U0001f600":3,"\uffff":2}'),
        ("\u2028\u2029", '"\u2028\u2029"'),
    ],
)
def test_canonical_writes_lone_surrogates_as_javascript(value: Any, expected: str) -> None:
    assert pxp.wire.canonical(value) == expected


def test_raw_text_hash_treats_a_lone_surrogate_as_node_does() -> None:
    assert pxp.wire.sha256_hex("a\ud800") == hashlib.sha256("a\ufffd".encode()).hexdigest()


def test_ledger_data_that_cannot_be_hashed_reports_its_index() -> None:
    room, _now = van.active_room()
    entries = room.ledger.to_json()
    entries[2]["data"]["x"] = float("nan")
    with pytest.raises(pxp.errors.LedgerError) as caught:
        pxp.verify_ledger(entries)
    assert caught.value.index == 2


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")
@given(st.lists(_JSON, min_size=1, max_size=60))
@settings(max_examples=8, deadline=None)
def test_canonical_and_text_hashes_match_node(values: list[Any]) -> None:
    lines = "\n".join(json.dumps(v) for v in values) + "\n"
    done = subprocess.run(
        ["node", "-e", _NODE_CANONICAL],
        input=lines.encode("ascii"),
        capture_output=True,
        timeout=60,
        check=True,
    )
    rows = done.stdout.decode("utf-8").split("\n")
    assert len(rows) == len(values)
    for value, row in zip(values, rows, strict=True):
        text, digest, text_digest = json.loads(row)
        assert pxp.wire.canonical(value) == text
        assert pxp.wire.sha256_hex(pxp.wire.canonical(value)) == digest
        if isinstance(value, str):
            assert pxp.wire.sha256_hex(value) == text_digest
