"""Command line of :mod:`ppcheck`: run the vector suites and report conformance.

Exit status: 0 when every selected case passed (unsupported and known failures allowed),
1 when a case failed or an adapter misbehaved, 2 for the runner's own faults (bad
arguments, no suite selected, unreadable files).
"""

from __future__ import annotations

import argparse
import fnmatch
import os
import shlex
import sys
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from ._runner import failure_count, junit_xml, run_suites, summary_line, table
from ._vectors import load_suites

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
        description=(
            "Run the principal-protocols conformance vectors against this library (default) "
            "or against a port's adapter executable (see docs/conformance.md)."
        ),
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    parser.add_argument(
        "--impl",
        metavar="COMMAND",
        help="adapter command line, split like a shell would (e.g. 'node adapter.js')",
    )
    parser.add_argument(
        "--suite",
        action="append",
        default=[],
        metavar="PATTERN",
        help="run only suites whose name matches this glob (repeatable), e.g. 'parley.*'",
    )
    parser.add_argument(
        "--known-failures",
        type=Path,
        metavar="FILE",
        help="file listing known failures, one 'suite::id' per line ('#' starts a comment)",
    )
    parser.add_argument(
        "--xfail",
        action="append",
        default=[],
        metavar="SUITE::ID",
        help="mark one case as a known failure (repeatable)",
    )
    parser.add_argument(
        "--timeout",
        type=_positive(float),
        default=30.0,
        help="seconds allowed per case (default 30)",
    )
    parser.add_argument(
        "--jobs",
        type=_positive(int),
        default=os.cpu_count() or 2,
        help="suites run in parallel (default: CPU count)",
    )
    parser.add_argument("--junit", type=Path, metavar="FILE", help="write a JUnit XML report")
    parser.add_argument(
        "--vectors", type=Path, metavar="DIR", help="vectors folder (default: the shipped one)"
    )
    parser.add_argument("--list", action="store_true", help="list the selected suites and exit")
    return parser


def _positive(kind: type[float] | type[int]) -> Any:
    def parse(text: str) -> float | int:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if not value > 0 or value != value or value == float("inf"):
            raise argparse.ArgumentTypeError(f"must be a positive finite number: {text!r}")
        return value

    return parse


def _known(args: argparse.Namespace) -> set[str]:
    known = set(args.xfail)
    if args.known_failures is not None:
        text = args.known_failures.read_text(encoding="utf-8")
        for line in text.splitlines():
            entry = line.split("#", 1)[0].strip()
            if entry:
                known.add(entry)
    return known


def main(argv: Sequence[str] | None = None) -> int:
    """Run the selected suites; print the table, each failure and a closing total."""
    parser = build_parser()
    args = parser.parse_args(argv)
    impl: list[str] | None = None
    if args.impl is not None:
        try:
            impl = shlex.split(args.impl)
        except ValueError as exc:
            parser.error(f"--impl: {exc}")
        if not impl:
            parser.error("--impl: the adapter command line is empty")
    try:
        suites = load_suites(args.vectors)
        known = _known(args)
    except (OSError, ValueError) as exc:
        print(f"ppcheck: {exc}", file=sys.stderr)
        return 2
    everything = {f"{s.suite}::{c['id']}" for s in suites for c in s.tests}
    for entry in sorted(known - everything):
        print(f"ppcheck: warning: known failure {entry!r} names no vector", file=sys.stderr)
    if args.suite:
        suites = [s for s in suites if any(fnmatch.fnmatchcase(s.suite, p) for p in args.suite)]
    if not suites:
        print("ppcheck: no suite selected", file=sys.stderr)
        return 2
    if args.list:
        for s in suites:
            print(f"{s.suite}  ({len(s.tests)} cases, {s.path})")
        return 0
    reports = run_suites(suites, impl, jobs=args.jobs, timeout=args.timeout, known=known)
    print(table(reports))
    print(summary_line(reports))
    if args.junit is not None:
        try:
            args.junit.write_text(junit_xml(reports), encoding="utf-8")
        except OSError as exc:
            print(f"ppcheck: cannot write the JUnit report: {exc}", file=sys.stderr)
            return 2
    return 1 if failure_count(reports) else 0
