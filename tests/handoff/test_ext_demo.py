"""The extensions demo runs and tells the story it promises."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo_handoff_extensions.py"


def test_demo_runs(capsys: pytest.CaptureFixture[str]) -> None:
    spec = importlib.util.spec_from_file_location("demo_handoff_extensions", DEMO)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main()
    out = capsys.readouterr().out
    assert "- [x] Pay the hosting invoice (120 EUR)" in out
    assert "'proof': 'valid'" in out
    assert "stale=True" in out
    assert "option gone" in out
