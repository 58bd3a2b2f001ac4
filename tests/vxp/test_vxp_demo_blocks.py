"""examples/demo_vxp.py runs and tells its story."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo_vxp.py"


def test_demo_runs(capsys: pytest.CaptureFixture[str]) -> None:
    namespace = runpy.run_path(str(DEMO))
    namespace["main"]()
    out = capsys.readouterr().out
    assert "kb_sd_hash_mismatch" in out
    assert "root_mismatch" in out
    assert "telefono" not in out
