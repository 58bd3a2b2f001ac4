"""examples/demo_parley.py runs end to end and shows each step's outcome."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

TOP = Path(__file__).resolve().parents[2]


def test_demo_walks_through_every_step(capsys: pytest.CaptureFixture[str]) -> None:
    spec = importlib.util.spec_from_file_location(
        "demo_parley", TOP / "examples" / "demo_parley.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main()
    out = capsys.readouterr().out
    assert "p_1 15.00 USD: committed" in out
    assert "p_1 again    : already committed" in out
    assert "p_2 45.00 USD: consent_required" in out
    assert "consent_mismatch" in out
    assert "p_2 with consent: committed" in out
    assert "p_3 with only the consent grant: forbidden" in out
    assert "caveat_wider" in out
