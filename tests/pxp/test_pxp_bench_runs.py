"""The PXP MCP bench still runs (no timing is asserted: benches print, tests never time).

It had read the MCP outputs under names the server no longer answers with and failed with
a KeyError, which nothing noticed; a run on two rooms keeps it honest."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

TOP = Path(__file__).resolve().parents[2]


def test_the_mcp_bench_runs_to_its_ratios() -> None:
    done = subprocess.run(
        [sys.executable, str(TOP / "bench" / "bench_pxp_mcp.py"), "2"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "x engine" in done.stdout
    assert "x in process (raw socket)" in done.stdout
