"""``python -m parley.conformance DIR`` on the reference's files and on ours."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import parley
from parley import conformance

TOP = Path(__file__).resolve().parents[2]
THIRD = TOP / "vectors" / "third_party" / "parley"
OURS = TOP / "vectors" / "parley" / "upstream-format"


def test_third_party_copies_are_verbatim() -> None:
    sums = (THIRD / "SHA256SUMS").read_text(encoding="utf-8").splitlines()
    assert len(sums) == 8
    for line in sums:
        digest, _, name = line.partition("  ")
        assert hashlib.sha256((THIRD / name).read_bytes()).hexdigest() == digest, name
    assert "\u007f".encode() in (THIRD / "canonical.json").read_bytes()
    assert "\u00a0".encode() in (THIRD / "estimate.json").read_bytes()


def test_reference_files_pass() -> None:
    report = conformance.run_directory(THIRD)
    assert report.failures == []
    assert report.passed == 80
    assert report.passed == 6 + 11 + 26 + 3 + 5 + 27 + 2
    assert sorted(report.files) == sorted(p.name for p in THIRD.glob("*.json"))


def test_our_upstream_format_files_pass() -> None:
    report = conformance.run_directory(OURS)
    assert report.failures == []
    assert {"canonical.json", "hash.json", "keys.json", "proof.json", "grants.json"} <= set(
        report.files
    )


def test_command_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "parley.conformance", str(THIRD)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().endswith("80 passed, 0 failed")
    empty = subprocess.run(
        [sys.executable, "-m", "parley.conformance", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert empty.returncode == 2


def test_failures_are_reported_one_line_each(tmp_path: Path) -> None:
    shutil.copy(OURS / "grants.json", tmp_path / "grants.json")
    data = json.loads((tmp_path / "grants.json").read_text(encoding="utf-8"))
    flipped = data["cases"][0]
    flipped["expect"] = {"ok": not flipped["expect"]["ok"], "code": "forbidden"}
    recoded = next(c for c in data["cases"] if c["expect"].get("code") == "consent_required")
    recoded["expect"]["code"] = "forbidden"
    data["cases"].append({"name": "broken case"})
    (tmp_path / "grants.json").write_text(json.dumps(data), encoding="utf-8")
    hashes = json.loads((OURS / "hash.json").read_text(encoding="utf-8"))
    hashes[0]["hash"] = "x" + hashes[0]["hash"][1:]
    (tmp_path / "hash.json").write_text(json.dumps(hashes), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "parley.conformance", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    lines = done.stdout.strip().splitlines()
    assert [line.split()[1] for line in lines[:-1]] == ["grants.json"] * 3 + ["hash.json"]
    total = len(data["cases"]) + len(hashes)
    assert lines[-1] == f"{total - 4} passed, 4 failed"


def test_lens_files_are_run_through_lean_and_lens(tmp_path: Path) -> None:
    cases = [
        {"name": "v", "type": "value", "input": {"a": 1}, "lens": "a: 1"},
        {"name": "bad type", "type": "other", "input": {}, "lens": ""},
    ]
    (tmp_path / "lens.json").write_text(json.dumps(cases), encoding="utf-8")
    report = conformance.run_directory(tmp_path)
    assert report.passed == 1
    assert [f.case for f in report.failures] == ["bad type"]


def test_unreadable_file_is_a_run_fault(tmp_path: Path) -> None:
    (tmp_path / "keys.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(parley.ParleyError):
        conformance.run_directory(tmp_path)
    assert conformance.main([str(tmp_path)]) == 2
