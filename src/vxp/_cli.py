"""Command line of :mod:`vxp` (console script ``vxp``, also ``python -m vxp``).

Each subcommand is one function registered in :func:`build_parser`; every failure of the
library surfaces as ``error: <code>: <sentence>`` on standard error with exit status 1.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib import metadata

from _ppcli.rules import Parser, run

from ._blocks_cli import add_block_commands
from ._proof_cli import add_proof_commands
from .errors import VxpError

__all__ = ["build_parser", "main"]


def _version() -> str:
    try:
        return metadata.version("principal-protocols")
    except metadata.PackageNotFoundError:  # pragma: no cover - only in a bare checkout
        return "0+checkout"


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser of the ``vxp`` command with every subcommand."""
    parser = Parser(
        prog="vxp",
        description="VXP Proof chains, SD-JWT statements and Merkle logs (principal-protocols).",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    add_proof_commands(sub)
    add_block_commands(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``vxp`` command line on ``argv`` ; return the exit status (docs/cli.md)."""
    return run(lambda: _main(argv), prog="vxp")


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 0
    try:
        code: int = handler(args)
    except VxpError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return code
