"""The ``errand`` command: audit an errand's records (``errand verify DIR``)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from _ppcli.rules import Parser, read_input, run

from ._audit import verify_errand
from ._terms import price_text
from .errors import BindingError

__all__ = ["main"]


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"the member {key[:40]!r} appears twice in one object")
        out[key] = value
    return out


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _read(path: Path) -> Any:
    """One reading of an I-JSON file (RFC 7493): no duplicate members, no NaN/Infinity."""
    text = read_input(path).decode("utf-8")
    return json.loads(text, object_pairs_hook=_unique, parse_constant=_no_constant)


def _verify(args: argparse.Namespace) -> int:
    path = Path(args.path)
    if path.is_dir():
        path = path / "errand.json"
    try:
        bundle = _read(path)
        mandate = _read(Path(args.mandate)) if args.mandate else None
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        # one code for any input the audit cannot read (status 2: nothing was audited)
        print(
            f"error: binding_input_invalid: cannot read {path}: {str(exc)[:200]}",
            file=sys.stderr,
        )
        return 2
    if mandate is not None and isinstance(bundle, dict):
        bundle["mandate"] = mandate
    try:
        report = verify_errand(bundle)
    except BindingError as exc:
        if args.json:
            print(json.dumps({"valid": False, "error": exc.to_json()}, indent=2))
        else:
            print(f"BROKEN  {exc.link}: {exc.code}" + (f" ({exc.reason})" if exc.reason else ""))
            print(f"        {exc.message}")
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


def build_parser(prog: str = "errand") -> argparse.ArgumentParser:
    """The ``errand`` argument parser (one coded line for a usage error, docs/cli.md)."""
    parser = Parser(prog=prog, description="Audit one errand across PXP, Handoff, Parley and VXP.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    verify = sub.add_parser("verify", help="recompute every link of an errand's records")
    verify.add_argument("path", help="a folder holding errand.json, or the file itself")
    verify.add_argument("--json", action="store_true", help="print the report or error as JSON")
    verify.add_argument(
        "--mandate",
        metavar="FILE",
        help="the errand's mandate as the principal configured it (limit, service, issuer and "
        "the issuer's key thumbprints), instead of the copy in the audited file: without it "
        "the audit shows the records consistent with the mandate they carry",
    )
    return parser


def main(argv: Sequence[str] | None = None, *, prog: str = "errand") -> int:
    """Run the ``errand`` command; return the exit status (0 valid, 1 broken, 2 unusable).

    It runs under the rules every console script shares (``_ppcli.rules``): a closed
    standard output ends it quietly, Ctrl-C is one line and status 130.
    """
    return run(lambda: _verify(build_parser(prog).parse_args(argv)), prog=prog)
