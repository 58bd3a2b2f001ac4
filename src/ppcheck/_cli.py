"""Command line of :mod:`ppcheck`: run the vector suites and report conformance."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from importlib import metadata

from ._registry import run
from ._vectors import check_result, load_suites

__all__ = ["build_parser", "main"]


def _version() -> str:
    try:
        return metadata.version("principal-protocols")
    except metadata.PackageNotFoundError:  # pragma: no cover - only in a bare checkout
        return "0+checkout"


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser of the ``ppcheck`` command."""
    parser = argparse.ArgumentParser(
        prog="ppcheck",
        description="Run the principal-protocols conformance vectors against an implementation.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    parser.add_argument(
        "--suite",
        action="append",
        default=[],
        metavar="NAME",
        help="run only this suite (repeatable; a prefix such as 'parley.' selects a protocol)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the suites against this library; print one line per failure and a total."""
    args = build_parser().parse_args(argv)
    passed = failed = unsupported = 0
    for suite in load_suites():
        if args.suite and not any(suite.suite.startswith(s) for s in args.suite):
            continue
        for case in suite.tests:
            result = run(suite.suite, case["input"]).as_json()
            problem = check_result(case, result)
            if result.get("unsupported"):
                unsupported += 1
            elif problem is None:
                passed += 1
            else:
                failed += 1
                print(f"FAIL {suite.suite} {case['id']}: {problem}")
    print(f"{passed} passed, {failed} failed, {unsupported} unsupported")
    return 1 if failed else 0
