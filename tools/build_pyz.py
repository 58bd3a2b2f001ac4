#!/usr/bin/env python3
"""Build ``ppcheck.pyz``: the conformance runner for ports, one file, standard library only.

    python tools/build_pyz.py dist/ppcheck.pyz

The archive holds the part of ``ppcheck`` that drives a port's adapter (the command line,
the runner, the harness, the vector loader and the response check), the vector suites and
the JSON Schemas, and the version it was built from. It imports nothing outside the
standard library, so any Python 3.11+ runs it with nothing installed:

    python3 ppcheck.pyz --impl 'node adapter.js' --require 'vxp.merkle_*'

It cannot run the suites against this library (that needs the protocol packages): it
says so and exits 2 without ``--impl``. The bundled vectors are checked against their
schema here, at build time, and the archive is byte-reproducible: entries sorted, fixed
timestamps and permissions.
"""

from __future__ import annotations

import argparse
import io
import sys
import tomllib
import zipfile
from pathlib import Path

TOP = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(TOP / "src"))

# The modules the adapter-driving runner needs: each imports only the standard library
# and these (tests/test_pyz.py runs the archive on a Python with nothing installed).
MODULES = ("__main__", "_cli", "_harness", "_response", "_runner", "_vectors")

_INIT = '''"""ppcheck, as ppcheck.pyz: the conformance runner that drives a port's adapter.

Built by tools/build_pyz.py from principal-protocols {version}. Run the archive itself:
``python3 ppcheck.pyz --impl COMMAND`` (``--help`` lists the options).
"""
'''

_MAIN = '''"""Run ppcheck from the archive."""

from ppcheck._cli import main

raise SystemExit(main())
'''

_STAMP = (1980, 1, 1, 0, 0, 0)


def _version() -> str:
    project = tomllib.loads((TOP / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return str(project["version"])


def _entries() -> dict[str, bytes]:
    version = _version()
    entries: dict[str, bytes] = {
        "__main__.py": _MAIN.encode(),
        "ppcheck/__init__.py": _INIT.format(version=version).encode(),
        "ppcheck/_data/VERSION": f"{version}\n".encode(),
    }
    for module in MODULES:
        entries[f"ppcheck/{module}.py"] = (TOP / "src/ppcheck" / f"{module}.py").read_bytes()
    # the entry wrapper every console script shares (standard library only; docs/cli.md)
    for module in ("__init__", "rules"):
        entries[f"_ppcli/{module}.py"] = (TOP / "src/_ppcli" / f"{module}.py").read_bytes()
    for folder in ("vectors", "schemas"):
        for path in sorted((TOP / folder).rglob("*")):
            if path.is_file() and not any(p.startswith(".") for p in path.parts):
                relative = path.relative_to(TOP).as_posix()
                entries[f"ppcheck/_data/{relative}"] = path.read_bytes()
    return entries


def build(target: Path) -> int:
    """Write the archive to ``target``; return the number of files it holds."""
    import ppcheck

    ppcheck.load_suites(TOP / "vectors")  # every bundled suite is a valid suite file
    buffer = io.BytesIO()
    buffer.write(b"#!/usr/bin/env python3\n")
    entries = _entries()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name in sorted(entries):
            info = zipfile.ZipInfo(name, date_time=_STAMP)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, entries[name], compresslevel=9)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(buffer.getvalue())
    target.chmod(0o755)
    return len(entries)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("target", type=Path, help="where to write the archive")
    args = parser.parse_args()
    count = build(args.target)
    size = args.target.stat().st_size
    print(f"wrote {args.target} ({count} files, {size / 1024:.0f} KiB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
