"""Command line of :mod:`parley` (console script ``parley``, also ``python -m parley``).

Each subcommand is one function registered in :func:`build_parser`; every failure of the
library surfaces as ``error: <code>: <sentence>`` on standard error with exit status 1.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib import metadata

from _ppcli.rules import Parser, run

from .errors import ParleyError

__all__ = ["build_parser", "main"]


def _version() -> str:
    try:
        return metadata.version("principal-protocols")
    except metadata.PackageNotFoundError:  # pragma: no cover - only in a bare checkout
        return "0+checkout"


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser of the ``parley`` command with every subcommand."""
    parser = Parser(
        prog="parley",
        description="Parley grants, proofs, Lens and the service runtime (principal-protocols).",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    # authorization core (issue 3): keygen, grant, delegate, inspect, approve, est
    from ._cli_core import register as register_core

    register_core(sub)
    # Lens and budgets (issue 4): lens
    from ._cli_lens import register as register_lens

    register_lens(sub)
    # service runtime (issue 5): serve, call
    from ._cli_runtime import register as register_runtime

    register_runtime(sub)
    # the MCP bridge (issue 21): mcp
    from ._cli_mcp import register as register_mcp

    register_mcp(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``parley`` command line on ``argv`` ; return the exit status (docs/cli.md)."""
    return run(lambda: _main(argv), prog="parley")


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 0
    try:
        code: int = handler(args)
    except ParleyError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return code
