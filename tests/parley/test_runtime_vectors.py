"""The written runtime vectors still end in the reply each case states by hand."""

from __future__ import annotations

import importlib
import json
import sys
from typing import Any

import pytest

from .runtime_harness import ROOT

sys.path.insert(0, str(ROOT / "tools"))
CASES = importlib.import_module("vectorcases.parley_runtime")
sys.path.remove(str(ROOT / "tools"))
WRITTEN = json.loads((ROOT / "vectors" / "parley" / "runtime.json").read_text(encoding="utf-8"))


def _expected() -> dict[str, tuple[str, str | None, str | None]]:
    if not CASES.EXPECT:
        list(CASES.runtime_cases())
    result: dict[str, tuple[str, str | None, str | None]] = CASES.EXPECT
    return result


@pytest.mark.parametrize("case", WRITTEN["tests"], ids=[c["id"] for c in WRITTEN["tests"]])
def test_final_reply_is_the_stated_one(case: dict[str, Any]) -> None:
    kind, code, reason = _expected()[case["id"]]
    final = case["output"]["replies"][-1]
    assert final["kind"] == kind
    assert final.get("code") == code
    if reason is not None:
        assert final.get("reason") == reason
    assert all(r["kind"] == "EVENT" for r in case["output"]["replies"][:-1])
    assert all(
        r["re"] == case["input"]["frame"].get("id")
        for r in case["output"]["replies"]
        if isinstance(case["input"]["frame"], dict) and r.get("re") is not None
    )


def test_every_error_code_and_verb_is_covered() -> None:
    finals = [c["output"]["replies"][-1] for c in WRITTEN["tests"]]
    codes = {f.get("code") for f in finals if f["kind"] == "ERROR"}
    assert codes == {
        "bad_frame",
        "unknown_capability",
        "invalid_params",
        "unauthorized",
        "forbidden",
        "consent_required",
        "not_found",
        "expired",
        "conflict",
        "limit",
        "unavailable",
        "internal",
    }
    verbs = {
        c["input"]["frame"].get("verb")
        for c in WRITTEN["tests"]
        if isinstance(c["input"]["frame"], dict)
    }
    assert {"HELLO", "ASK", "INTENT", "COMMIT", "UNDO", "EXPAND"} <= verbs
