"""`make docs`: the API reference is generated from the docstrings of every package."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pdoc", reason="pdoc comes with the dev extra (make docs)")

PACKAGES = ("pxp", "handoff", "vxp", "parley", "ppcheck", "ppbind")


@pytest.mark.slow
def test_the_api_reference_has_a_page_per_package(tmp_path: Path) -> None:
    argv = ["--docformat", "restructuredtext", "-o", str(tmp_path), *PACKAGES]
    done = subprocess.run(
        [sys.executable, "-m", "pdoc", *argv],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    for package in PACKAGES:
        page = (tmp_path / f"{package}.html").read_text(encoding="utf-8")
        module = __import__(package)
        for name in module.__all__[:5]:
            assert name in page, f"{package}.{name} is missing from the API reference"
    assert (tmp_path / "index.html").is_file()
