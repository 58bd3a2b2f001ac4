"""`make tour` runs examples/tour.py: it exits 0 and every part that exists succeeds.

Each part runs through ``examples/tour.py PART`` in its own process, the way ``make tour``
runs it, so the parts run side by side under ``pytest -n``; a further test holds that the
parts named in tour.py are every ``examples/demo_*.py`` there is, so together these runs
are the whole tour.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

TOP = Path(__file__).resolve().parents[1]
TOUR = TOP / "examples" / "tour.py"


def _demo_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("pp_tour_main", TOUR)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PARTS = [name for name, _ in _demo_module().PARTS]


def _run(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(TOUR), *argv],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=240,
        check=False,
    )


@pytest.mark.slow
@pytest.mark.parametrize("part", PARTS)
def test_tour_part_runs(part: str, tmp_path: Path) -> None:
    done = _run(part, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "FAILED" not in done.stdout, done.stdout[-4000:]
    assert "1 parts ran, 0 failed, 0 not built yet." in done.stdout, done.stdout[-4000:]


def test_the_tour_parts_are_every_demo_file() -> None:
    files = {p.stem for p in (TOP / "examples").glob("demo_*.py")}
    assert set(PARTS) == files
    assert len(PARTS) == len(set(PARTS))


def test_the_tour_refuses_an_unknown_part(tmp_path: Path) -> None:
    done = _run("demo_nothing", cwd=tmp_path)
    assert done.returncode == 2
    assert "unknown tour part 'demo_nothing'" in done.stdout
    assert "principal-protocols tour" not in done.stdout
