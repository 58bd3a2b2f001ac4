"""`make tour` runs examples/tour.py: it exits 0 and every part that exists succeeds."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

TOP = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_tour_runs_every_part(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(TOP / "examples" / "tour.py")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "FAILED" not in done.stdout, done.stdout[-4000:]
    assert " 0 failed" in done.stdout
