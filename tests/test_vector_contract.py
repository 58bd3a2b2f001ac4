"""The vector contract is enforced: a deliberately broken vector makes `make test` fail.

`make test` runs `tools/gen_vectors.py --check` (drift) and `tests/test_vectors.py`
(the library reproduces every vector). Both are shown here to catch an edited expected
value, on a copy of vectors/, never on the real folder.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import ppcheck

TOP = Path(__file__).resolve().parents[1]


def _break_one(root: Path) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """Edit one expected value in the copy; return (suite, case, edited case)."""
    for suite_file in ppcheck.load_suites(root):
        for index, case in enumerate(suite_file.tests):
            path = root / suite_file.path
            data = json.loads(path.read_text(encoding="utf-8"))
            edited = data["tests"][index]
            if "error" in edited:
                edited["error"]["code"] = edited["error"]["code"] + "_edited"
            else:
                edited["output"] = {"edited": True, **edited["output"]}
            path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
            return suite_file.suite, case, edited
    raise AssertionError("no vector to break")


def test_gen_vectors_check_passes_on_the_real_folder() -> None:
    done = subprocess.run(
        [sys.executable, str(TOP / "tools" / "gen_vectors.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def test_a_broken_vector_fails_both_checks(tmp_path: Path) -> None:
    copy = tmp_path / "vectors"
    shutil.copytree(TOP / "vectors", copy)
    suite, original, edited = _break_one(copy)

    done = subprocess.run(
        [sys.executable, str(TOP / "tools" / "gen_vectors.py"), "--check", "--vectors", str(copy)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    assert "differs from what tools/gen_vectors.py writes" in done.stderr

    result = ppcheck.run(suite, edited["input"]).as_json()
    assert ppcheck.check_result(original, result) is None
    assert ppcheck.check_result(edited, result) is not None


def test_an_extra_file_is_drift(tmp_path: Path) -> None:
    copy = tmp_path / "vectors"
    shutil.copytree(TOP / "vectors", copy)
    (copy / "pxp" / "stray.json").write_text("{}\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(TOP / "tools" / "gen_vectors.py"), "--check", "--vectors", str(copy)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    assert "pxp/stray.json: not written by tools/gen_vectors.py" in done.stderr


def test_first_difference_names_the_path() -> None:
    assert ppcheck.first_difference({"a": [1, 2]}, {"a": [1, 3]}) == "$.a[1]: expected 2, got 3"
    assert ppcheck.first_difference({"a": 1}, {"a": 1}) is None
    assert ppcheck.first_difference({"a": 1}, {"a": True}) is not None
    assert ppcheck.first_difference({"a": 1}, {}) == "$.a: missing (expected 1)"
