"""The ``errand`` command: audit an errand's records (``errand verify DIR``)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path

from ._audit import verify_errand
from ._errors import BindingError
from ._terms import price_text

__all__ = ["main"]


def _verify(args: argparse.Namespace) -> int:
    path = Path(args.path)
    if path.is_dir():
        path = path / "errand.json"
    try:
        bundle = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        print(f"errand: cannot read {path}: {exc}", file=sys.stderr)
        return 2
    try:
        report = verify_errand(bundle)
    except BindingError as exc:
        if args.json:
            print(json.dumps({"valid": False, "error": exc.to_json()}, indent=2))
        else:
            print(f"BROKEN  {exc.link}: {exc.code}" + (f" ({exc.reason})" if exc.reason else ""))
            print(f"        {exc}")
        return 1
    if args.json:
        print(json.dumps({"valid": True, "report": report}, indent=2))
    else:
        print(
            f"OK  {report['item']} for {price_text(report['amount'], report['currency'])}: "
            f"PXP {report['pxp']['proposal_hash'][:12]}… → decision rev "
            f"{report['decision']['terms_rev']} → Parley {report['parley']['proposal']} → "
            f"VXP {report['vxp']['final_state']} ({report['vxp']['statements']} statements) "
            f"→ act {report['act']}"
        )
    return 0


def _version() -> str:
    try:
        return metadata.version("principal-protocols")
    except metadata.PackageNotFoundError:
        return "unknown"


def main(argv: Sequence[str] | None = None, *, prog: str = "errand") -> int:
    """Run the ``errand`` command; return the exit status (0 valid, 1 broken, 2 unusable)."""
    parser = argparse.ArgumentParser(
        prog=prog, description="Audit one errand across PXP, Handoff, Parley and VXP."
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    verify = sub.add_parser("verify", help="recompute every link of an errand's records")
    verify.add_argument("path", help="a folder holding errand.json, or the file itself")
    verify.add_argument("--json", action="store_true", help="print the report or error as JSON")
    args = parser.parse_args(argv)
    return _verify(args)
