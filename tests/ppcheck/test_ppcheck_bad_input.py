"""``ppcheck.run`` on input that is not of its suite's shape: a ``RunnerError``, never a crash.

Every suite's input has a schema (``schemas/<package>/vectors/<operation>.input.json``);
``run`` holds the input to it before the library sees it, so a missing or wrong-typed
member is the caller's mistake, named with its JSON path, and a library exception can only
mean a bug. The cases are derived mechanically from each suite's first vector: the input
with nothing in it, and each member in turn replaced by a value of every other JSON type.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

import ppcheck

WRONG: tuple[object, ...] = (None, True, -1, 1.5, "x", [], {})
"""One value of each JSON type (and a negative integer and a fraction)."""


def _cases() -> list[tuple[str, dict[str, Any]]]:
    cases: list[tuple[str, dict[str, Any]]] = []
    for suite in ppcheck.load_suites():
        name = suite.data["suite"]
        tests = suite.data.get("tests") or []
        if not tests or not isinstance(tests[0].get("input"), dict):
            continue
        good = tests[0]["input"]
        cases.append((name, {}))
        cases += [(name, {**good, member: wrong}) for member in good for wrong in WRONG]
    return cases


CASES = _cases()


def test_the_cases_cover_every_suite() -> None:
    """Each shipped suite contributes cases, so a new suite is covered without edits."""
    assert {name for name, _ in CASES} == {s.data["suite"] for s in ppcheck.load_suites()}


@pytest.mark.parametrize(
    "suite", sorted({name for name, _ in CASES}), ids=lambda s: s.replace(".", "-")
)
def test_malformed_input_is_the_callers_error(suite: str) -> None:
    """Each malformed input gives a result or a ``RunnerError``: nothing else escapes."""
    for name, input_ in CASES:
        if name != suite:
            continue
        try:
            result: object = ppcheck.run(suite, input_)
        except ppcheck.RunnerError as exc:
            result = str(exc)
        if isinstance(result, str):
            assert result.startswith(f"the input of {suite} ")
        else:
            assert isinstance(result, ppcheck.Result)


def test_the_error_names_the_member_and_the_schema() -> None:
    """The sentence says which suite, which member and which schema the input broke."""
    with pytest.raises(ppcheck.RunnerError) as caught:
        ppcheck.run("vxp.merkle_tree_hash", {"leaves": 5})
    text = str(caught.value)
    assert "vxp.merkle_tree_hash" in text
    assert "leaves" in text
    assert "vectors/merkle_tree_hash.input.json" in text


def test_an_input_that_is_not_an_object_is_refused() -> None:
    """The input itself must be a JSON object."""
    with pytest.raises(ppcheck.RunnerError):
        ppcheck.run("pxp.canonical", [])  # type: ignore[arg-type]


def test_a_good_input_still_runs() -> None:
    """The check refuses nothing a shipped vector holds (the vector tests run them all)."""
    suite = next(s for s in ppcheck.load_suites() if s.data["suite"] == "vxp.merkle_tree_hash")
    case = suite.data["tests"][0]
    assert ppcheck.run("vxp.merkle_tree_hash", case["input"]).as_json() == {
        "output": case["output"]
    }


def test_the_adapter_process_stops_on_a_malformed_input() -> None:
    """``python -m ppcheck.adapter`` answers the good line, then exits 2 naming the bad one."""
    good = {"suite": "vxp.merkle_tree_hash", "id": "good", "input": {"leaves": []}}
    bad = {"suite": "vxp.merkle_tree_hash", "id": "bad", "input": {"leaves": 5}}
    lines = "".join(json.dumps(r) + "\n" for r in (good, bad))
    done = subprocess.run(
        [sys.executable, "-m", "ppcheck.adapter"],
        input=lines,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert [json.loads(x)["id"] for x in done.stdout.splitlines()] == ["good"]
    assert "'bad'" in done.stderr
    assert "leaves" in done.stderr
    assert "Traceback" not in done.stderr
