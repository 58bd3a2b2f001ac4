"""The vector contract is enforced: a deliberately broken vector makes `make test` fail.

`make test` runs `tools/gen_vectors.py --check` (drift) and `tests/test_vectors.py`
(the library reproduces every vector). Both are shown here to catch an edited expected
value, on a copy of vectors/, never on the real folder.
"""

from __future__ import annotations

import json
import os
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
    # One JSON number type: 2 and 2.0 agree, a boolean is not a number; within ±(2^53−1)
    # numbers are exact, beyond it an expected integer is its nearest double (issue 24).
    assert ppcheck.first_difference({"a": 2.0}, {"a": 2}) is None
    assert ppcheck.first_difference({"a": 0}, {"a": False}) is not None
    assert ppcheck.first_difference({"a": 2**53 - 1}, {"a": 2**53 - 2}) is not None
    assert ppcheck.first_difference({"a": 2**53 + 1}, {"a": float(2**53 + 1)}) is None
    assert ppcheck.first_difference({"a": 2**53 + 1}, {"a": 2**53 + 4}) is not None


def _check_copy(copy: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(TOP / "tools" / "gen_vectors.py"), "--check", "--vectors", str(copy)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **env},
    )


def test_a_deleted_or_renamed_suite_is_drift(tmp_path: Path) -> None:
    copy = tmp_path / "vectors"
    shutil.copytree(TOP / "vectors", copy)
    victim = ppcheck.load_suites(copy)[0].path
    (copy / victim).rename(copy / victim.replace(".json", "-renamed.json"))
    done = _check_copy(copy)
    assert done.returncode == 1
    assert f"{victim}: missing (run make vectors)" in done.stderr
    assert f"{victim.replace('.json', '-renamed.json')}: not written by" in done.stderr


def test_third_party_files_are_all_checksummed(tmp_path: Path) -> None:
    sums = sorted((TOP / "vectors" / "third_party").rglob("SHA256SUMS"))
    assert sums, "vectors/third_party holds no SHA256SUMS"
    copy = tmp_path / "vectors"
    shutil.copytree(TOP / "vectors", copy)
    folder = copy / sums[0].parent.relative_to(TOP / "vectors")
    listed = [
        line.split("  ", 1)[1]
        for line in (folder / "SHA256SUMS").read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    tampered = folder / listed[0]
    tampered.write_bytes(tampered.read_bytes() + b" ")
    (folder / "unlisted.json").write_text("{}\n", encoding="utf-8")
    (folder / listed[-1]).unlink()
    done = _check_copy(copy)
    assert done.returncode == 1
    rel = folder.relative_to(copy)
    assert f"{rel / listed[0]}: differs from its {rel / 'SHA256SUMS'} entry" in done.stderr
    assert f"{rel / 'unlisted.json'}: vendored but listed in no SHA256SUMS" in done.stderr
    assert f"{rel / listed[-1]}: listed in {rel / 'SHA256SUMS'} but missing" in done.stderr


def test_generation_does_not_depend_on_hash_randomization() -> None:
    # Byte stability: set iteration order changes with PYTHONHASHSEED; the output may not.
    for seed in ("0", "4242"):
        done = _check_copy(TOP / "vectors", PYTHONHASHSEED=seed)
        assert done.returncode == 0, done.stderr


def test_every_registered_suite_is_loaded_by_the_runner() -> None:
    # The runner (and tests/test_vectors.py) must see every suite gen_vectors writes;
    # a suite in a folder the loader skips would otherwise go untested.
    probe = (
        "import json, gen_vectors, vectorlib; gen_vectors._load_cases(); "
        "print(json.dumps(sorted(s.file for s in vectorlib.SUITES.values())))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        check=True,
        cwd=TOP / "tools",
    )
    written = set(json.loads(done.stdout))
    assert written
    assert written == {s.path for s in ppcheck.load_suites()}
