"""The newcomer walk-through in examples/demo_handoff.py runs end to end."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo_handoff.py"


def test_demo_runs(capsys: pytest.CaptureFixture[str]) -> None:
    runpy.run_path(str(DEMO), run_name="__main__")
    out = capsys.readouterr().out
    assert "rejected: ownership/not_principal_side" in out
    assert "status=conflict conflicts=['same_id']" in out
    assert "the item is conflicted" in out
    assert "the store keeps the first content: conflict/same_id" in out
    assert "after reopening the store" in out
