"""Frame parsing costs a small multiple of ``json.loads``, with the depth limit kept (#7).

No timing here (benches live in bench/): the old depth check walked every character in
Python, so these tests count the Python lines :func:`parley.wire.parse_frame` runs, and check
the fast depth rule against the plain character walk kept below as the oracle.

Private imports: ``parley._frames._depth_ok`` is the fast depth rule held to the plain
character walk kept below as its oracle; the line count is taken inside ``parley._frames``.
"""

from __future__ import annotations

import json
import sys
from types import FrameType
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import parley
from parley import _frames

MAX_DEPTH = 64


def depth_ok_oracle(text: str) -> bool:
    """The plain rule: no point of the text is inside more than 64 open brackets."""
    depth = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return False
        elif char in "]}":
            depth -= 1
    return True


def _lines_run(text: str | bytes) -> int:
    count = 0

    def tracer(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal count
        if frame.f_code.co_filename == _frames.__file__:
            if event == "line":
                count += 1
            return tracer
        return None

    sys.settrace(tracer)
    try:
        parley.wire.parse_frame(text)
    finally:
        sys.settrace(None)
    return count


def _frame_with(payload: Any) -> str:
    return json.dumps({"parley": 1, "id": "x", "verb": "ASK", "params": {"p": payload}})


@pytest.mark.parametrize(
    "payload",
    [
        "x" * ((1 << 20) - 200),
        ["[{" * 3] * 40_000,  # brackets inside strings
        [[1, [2]]] * 30_000,  # many shallow brackets
        '\\"[' * 200_000,
    ],
    ids=["one-big-string", "brackets-in-strings", "shallow-brackets", "escapes"],
)
@pytest.mark.parametrize("as_bytes", [True, False], ids=["bytes", "str"])
def test_a_big_frame_is_not_walked_character_by_character(payload: Any, as_bytes: bool) -> None:
    text = _frame_with(payload)
    assert len(text) < parley.wire.MAX_FRAME
    # the character walk ran a line per character here (400,000 to a million)
    assert _lines_run(text.encode() if as_bytes else text) < 200


@given(
    st.lists(
        st.sampled_from(["[", "]", "{", "}", '"', "\\", "a", ",", ":", "1", '\\"', '"["']),
        max_size=400,
    )
)
def test_the_depth_rule_equals_the_character_walk(parts: list[str]) -> None:
    text = "".join(parts)
    assert _frames._depth_ok(text) is depth_ok_oracle(text)


@pytest.mark.parametrize("depth", [63, 64, 65, 1000, 100_000])
def test_the_depth_limit_holds(depth: int) -> None:
    head = '{"parley":1,"id":"x","verb":"ASK","params":'
    text = head + "[" * depth + "]" * depth + "}"  # the frame object adds one level
    if depth + 1 > MAX_DEPTH:
        with pytest.raises(parley.ParleyError) as caught:
            parley.wire.parse_frame(text)
        assert caught.value.reason == "too_deep"
    else:
        assert parley.wire.parse_frame(text)["verb"] == "ASK"
    unterminated = head + '"' + "[" * depth  # inside a string that never ends
    with pytest.raises(parley.ParleyError) as caught:
        parley.wire.parse_frame(unterminated)
    assert caught.value.reason == "not_json"


def _best_of(rounds: int, work: Any) -> float:
    """The least CPU time of ``rounds`` runs of ``work`` (this process's, not the clock's).

    CPU time, because on a loaded machine (pytest -n beside other jobs) the wall time of a
    run a few milliseconds long can miss every preemption while one of a few hundred
    milliseconds never does: a wall-clock ratio then grows with the load (it reached 100
    against a bound of 50 where the CPU-time ratio is about 16).
    """
    import time

    best = float("inf")
    for _ in range(rounds):
        start = time.process_time()
        work()
        best = min(best, time.process_time() - start)
    return best


def _refused(text: str) -> None:
    with pytest.raises(parley.ParleyError):
        parley.wire.parse_frame(text)


def test_an_unterminated_string_of_escaped_quotes_costs_a_multiple_of_json_loads() -> None:
    # Review F1: past 64 brackets the depth rule cut strings out with a pattern that had to
    # find the closing quote; for a string that never ends it scanned to the end from every
    # escaped quote, so the cost grew with the square of the size (32 KB: 6 s). The ratio is
    # against json.loads of a benign 1 MiB frame of escaped quotes in the same run (the same
    # characters, well formed), generous for a loaded CI.
    benign = _frame_with('"' * ((1 << 19) - 100))
    baseline = _best_of(3, lambda: json.loads(benign))
    head = '{"parley":1,"id":"x","verb":"HELLO","a":' + "[" * 65 + '"'
    for size in (16_000, parley.wire.MAX_FRAME - 200):  # the small one fails fast when quadratic
        hostile = head + '\\"' * ((size - len(head)) // 2)
        assert len(hostile.encode()) <= parley.wire.MAX_FRAME
        cost = _best_of(3, lambda: _refused(hostile))  # noqa: B023
        assert cost < 50 * baseline, (size, cost, baseline)
