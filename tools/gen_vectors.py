#!/usr/bin/env python3
"""Write vectors/ from the registered cases (the only writer of vectors/).

    python tools/gen_vectors.py            regenerate vectors/ in place
    python tools/gen_vectors.py --check    regenerate into a temporary folder, diff, exit 1 on drift
    python tools/gen_vectors.py --check --vectors DIR   check another copy (used by the tests)

Every case is run through the library (ppcheck.run); a case whose stated output or error
the library does not reproduce stops the generation. Files are byte-stable: fixed key
order, 2-space indent, ASCII, trailing newline. ``vectors/third_party/`` is vendored
upstream data, never written here; its SHA256SUMS files are checked instead.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import pkgutil
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
TOP = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(TOP / "src"))

import ppcheck  # noqa: E402
import vectorcases  # noqa: E402
import vectorlib  # noqa: E402
from vectorlib import Case, dumps  # noqa: E402


def _load_cases() -> None:
    for info in sorted(pkgutil.iter_modules(vectorcases.__path__), key=lambda i: i.name):
        importlib.import_module(f"vectorcases.{info.name}")


def _case_json(suite: str, case: Case) -> dict[str, Any]:
    result = ppcheck.run(suite, case.input)
    if result.unsupported:
        raise SystemExit(f"{suite}: no handler is registered for this suite")
    got = result.as_json()
    record: dict[str, Any] = {
        "id": case.id,
        "comment": case.comment,
        "flags": list(case.flags),
        "input": case.input,
    }
    if case.output is not None or case.error is not None:
        stated: dict[str, Any] = (
            {"output": case.output} if case.output is not None else {"error": case.error}
        )
        problem = ppcheck.check_result(stated, got)
        if problem is not None:
            raise SystemExit(f"{suite} {case.id}: the library disagrees with the case: {problem}")
        record.update(stated)
    else:
        record.update(got)
    return record


def build() -> dict[str, str]:
    """Return ``{relative path: file text}`` for every generated file."""
    _load_cases()
    files: dict[str, str] = {}
    for name in sorted(vectorlib.SUITES):
        spec = vectorlib.SUITES[name]
        cases = list(spec.cases())
        tests = [_case_json(name, case) for case in cases]
        notes = {k: v for case in cases for k, v in case.notes.items()} | spec.notes
        ids = [t["id"] for t in tests]
        if len(ids) != len(set(ids)):
            dupes = sorted({i for i in ids if ids.count(i) > 1})
            raise SystemExit(f"{name}: duplicate vector ids {dupes}")
        used = sorted({flag for t in tests for flag in t["flags"]})
        missing = [flag for flag in used if flag not in notes]
        if missing:
            raise SystemExit(f"{name}: flags without a note: {missing}")
        files[spec.file] = dumps(
            {
                "suite": name,
                "version": 1,
                "description": spec.description,
                "notes": {k: notes[k] for k in sorted(notes)},
                "tests": tests,
            }
        )
    for path in sorted(vectorlib.RAW_FILES):
        if path in files:
            raise SystemExit(f"{path} is both a suite and a raw file")
        built = vectorlib.RAW_FILES[path].build()
        files[path] = built if isinstance(built, str) else dumps(built)
    return files


def _owned(root: Path) -> set[str]:
    """Every file under root that gen_vectors owns (all but vectors/third_party/)."""
    return {
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.is_file() and p.relative_to(root).parts[0] != "third_party"
    }


def _check_third_party(root: Path) -> list[str]:
    """Every vendored file matches its SHA256SUMS entry, and every one has an entry.

    A SHA256SUMS file covers the files of its folder and below (``sha256sum`` format,
    text ``<hex>  <name>`` or binary ``<hex> *<name>``). Only ORIGIN.md, our own note on
    where the files came from, may go unlisted.
    """
    problems: list[str] = []
    third = root / "third_party"
    listed: set[Path] = set()
    for sums in sorted(third.rglob("SHA256SUMS")):
        where = sums.relative_to(root)
        for number, line in enumerate(sums.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            digest, sep, name = line[:64], line[64:66], line[66:]
            if (
                len(digest) != 64
                or any(c not in "0123456789abcdef" for c in digest)
                or sep not in {"  ", " *"}
                or not name
            ):
                problems.append(f"{where}:{number}: not a sha256sum line: {line[:100]!r}")
                continue
            target = (sums.parent / name).resolve()
            if not target.is_relative_to(sums.parent.resolve()):
                problems.append(f"{where}:{number}: {name!r} is outside its folder")
                continue
            listed.add(target)
            if not target.is_file():
                problems.append(
                    f"{target.relative_to(root.resolve())}: listed in {where} but missing"
                )
            elif hashlib.sha256(target.read_bytes()).hexdigest() != digest:
                problems.append(
                    f"{target.relative_to(root.resolve())}: differs from its {where} entry"
                )
    for path in sorted(third.rglob("*")):
        if (
            path.is_file()
            and path.name not in {"SHA256SUMS", "ORIGIN.md"}
            and path.resolve() not in listed
        ):
            problems.append(f"{path.relative_to(root)}: vendored but listed in no SHA256SUMS")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="diff instead of writing")
    parser.add_argument("--vectors", type=Path, default=TOP / "vectors", help="vectors folder")
    args = parser.parse_args(argv)
    root: Path = args.vectors
    files = build()
    if not args.check:
        for stale in sorted(_owned(root) - set(files)):
            (root / stale).unlink()
        for path, text in files.items():
            target = root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(text.encode("utf-8"))
        print(f"wrote {len(files)} files under {root}")
        return 0
    problems = _check_third_party(root)
    with tempfile.TemporaryDirectory() as tmp:
        for path, text in files.items():
            fresh = Path(tmp) / path
            fresh.parent.mkdir(parents=True, exist_ok=True)
            fresh.write_bytes(text.encode("utf-8"))
            current = root / path
            if not current.is_file():
                problems.append(f"{path}: missing (run make vectors)")
            elif current.read_bytes() != fresh.read_bytes():
                problems.append(f"{path}: differs from what tools/gen_vectors.py writes")
    for extra in sorted(_owned(root) - set(files)):
        problems.append(f"{extra}: not written by tools/gen_vectors.py")
    for problem in problems:
        print(f"vector drift: {problem}", file=sys.stderr)
    if problems:
        print(
            f"{len(problems)} vector files drifted; run `make vectors` and review", file=sys.stderr
        )
        return 1
    print(f"vectors: {len(files)} files are exactly what tools/gen_vectors.py writes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
