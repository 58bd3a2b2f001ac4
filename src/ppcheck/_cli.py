"""Command line of :mod:`ppcheck`: run the vector suites and report conformance.

    ppcheck [--impl COMMAND] [--suite PATTERN …] [--require PATTERN … | --require-all] …
    ppcheck vectors export DIR

Exit status: 0 when every selected case passed (unsupported and known failures allowed,
except in suites named by ``--require``), 1 when a case failed, an adapter misbehaved or a
required suite came back unsupported, 2 for the runner's own faults (bad arguments, no
suite selected, an adapter that cannot be started, unreadable files), 130 on Ctrl-C.
"""

from __future__ import annotations

import argparse
import contextlib
import fnmatch
import os
import shlex
import shutil
import sys
import tempfile
import threading
from collections.abc import Sequence
from importlib import metadata, resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from _ppcli.rules import EXIT_USAGE, Parser, read_input, run

from ._runner import (
    RunnerError,
    SuiteReport,
    failure_count,
    junit_xml,
    run_suites,
    summary_line,
    table,
)
from ._vectors import data_root, load_suites

__all__ = ["build_parser", "main"]


def _version() -> str:
    bundled = resources.files("ppcheck") / "_data" / "VERSION"
    with contextlib.suppress(OSError, ValueError):
        if bundled.is_file():  # ppcheck.pyz records the version it was built from
            return bundled.read_text(encoding="utf-8").strip()
    try:
        return metadata.version("principal-protocols")
    except metadata.PackageNotFoundError:  # pragma: no cover - only in a bare checkout
        return "0+checkout"


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser of the ``ppcheck`` command."""
    parser = Parser(
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
    parser.add_argument(
        "--require",
        action="append",
        default=[],
        metavar="PATTERN",
        help=(
            "fail when a case of a suite matching this glob comes back unsupported "
            "(repeatable): the suites a port claims to implement"
        ),
    )
    parser.add_argument(
        "--require-all",
        action="store_true",
        help="fail when any case of any selected suite comes back unsupported",
    )
    parser.add_argument(
        "--stderr-dir",
        type=Path,
        metavar="DIR",
        help=(
            "keep each adapter process's standard error in DIR (default: a new folder "
            "under the system's temporary folder, named in the output; empty logs are removed)"
        ),
    )
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="print a line per finished suite on stderr (default: when stderr is a terminal)",
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
        text = read_input(args.known_failures).decode("utf-8")
        for line in text.splitlines():
            entry = line.split("#", 1)[0].strip()
            if entry:
                known.add(entry)
    return known


def _export(argv: Sequence[str]) -> int:
    """``ppcheck vectors export DIR``: write the shipped vectors and schemas into DIR."""
    parser = Parser(
        prog="ppcheck vectors export",
        description=(
            "Write the shipped vector suites (vectors/) and the JSON Schemas they and the "
            "harness use (schemas/) into DIR, for ports that read the files directly."
        ),
    )
    parser.add_argument("dir", type=Path, metavar="DIR", help="a new or empty folder")
    args = parser.parse_args(argv)
    target: Path = args.dir
    try:
        if target.exists() and (not target.is_dir() or any(target.iterdir())):
            return _fault("export_target", f"{target} exists and is not an empty folder")
        vectors, schemas = data_root()
        count = _copy_tree(vectors, target / "vectors") + _copy_tree(schemas, target / "schemas")
    except OSError as exc:
        return _fault("io", f"cannot export the vectors: {exc}")
    print(f"wrote {count} files to {target}")
    return 0


def _copy_tree(source: Traversable, target: Path) -> int:
    target.mkdir(parents=True, exist_ok=True)
    count = 0
    for entry in sorted(source.iterdir(), key=lambda e: e.name):
        if entry.name.startswith((".", "__")):
            continue
        if entry.is_dir():
            count += _copy_tree(entry, target / entry.name)
        elif entry.is_file():
            (target / entry.name).write_bytes(entry.read_bytes())
            count += 1
    return count


def _resolve_adapter(program: str) -> str | None:
    """Return why the adapter program cannot be started, or ``None`` when it can be."""
    if os.sep in program or (os.altsep is not None and os.altsep in program):
        path = Path(program)
        if not path.is_file():
            return f"the adapter {program!r} does not exist"
        if not os.access(path, os.X_OK):
            return f"the adapter {program!r} is not executable"
        return None
    if shutil.which(program) is None:
        return f"the adapter program {program!r} is not found on PATH"
    return None


def _unsupported_required(
    reports: Sequence[SuiteReport], patterns: Sequence[str], everything: bool
) -> list[str]:
    missing = []
    for report in reports:
        required = everything or any(fnmatch.fnmatchcase(report.suite, p) for p in patterns)
        count = report.count("unsupported")
        if required and count:
            missing.append(f"REQUIRED {report.suite}: {count} case(s) came back unsupported")
    return missing


class _Progress:
    """Prints one line per finished suite on stderr, from the runner's worker threads."""

    def __init__(self, total: int) -> None:
        self._total = total
        self._done = 0
        self._lock = threading.Lock()

    def __call__(self, report: SuiteReport) -> None:
        with self._lock:
            self._done += 1
            failed = report.count("failed") + report.count("fixed")
            fault = ", adapter fault" if report.fault else ""
            print(
                f"ppcheck: [{self._done}/{self._total}] {report.suite}: "
                f"{report.count('passed')} passed, {failed} failed, "
                f"{report.count('unsupported')} unsupported{fault} ({report.seconds:.1f} s)",
                file=sys.stderr,
                flush=True,
            )


def _unwritable(path: Path) -> str | None:
    """Why the report cannot be written at ``path``, or ``None``; never waits (review cli #3).

    A symbolic link is followed (a dangling one names the file to create). An existing
    regular file is opened for appending (its content untouched); a new one must be
    creatable in its folder (a probe file is made there and removed). A named pipe or a
    device is not opened before the run: opening a pipe for writing waits for its reader
    (``--junit >(cat)``, a reader that comes later), so it is written once, at the end.
    """
    target = path.resolve()
    try:
        if target.is_dir():
            return f"{str(path)[:120]!r}: Is a directory"
        if target.exists():
            if target.is_file():
                with target.open("ab"):
                    pass
            return None
        handle, probe = tempfile.mkstemp(dir=target.parent, prefix=".ppcheck-probe-")
        os.close(handle)
        os.unlink(probe)
    except OSError as exc:
        return f"{str(path)[:120]!r}: {exc.strerror or exc}"
    return None


def _fault(code: str, message: str) -> int:
    """Print the runner's own fault as one coded line; return exit status 2."""
    print(f"error: {code}: {message}", file=sys.stderr)
    return EXIT_USAGE


def main(argv: Sequence[str] | None = None) -> int:
    """Run the selected suites; print the table, each failure and a closing total."""
    return run(lambda: _main(argv), prog="ppcheck")


def _main(argv: Sequence[str] | None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:2] == ["vectors", "export"]:
        return _export(arguments[2:])
    parser = build_parser()
    args = parser.parse_args(arguments)
    impl: list[str] | None = None
    if args.impl is not None:
        try:
            impl = shlex.split(args.impl)
        except ValueError as exc:
            parser.error(f"--impl: {exc}")
        if not impl:
            parser.error("--impl: the adapter command line is empty")
        cannot = _resolve_adapter(impl[0])
        if cannot is not None:
            return _fault("adapter_missing", cannot)
    if args.require and args.require_all:
        parser.error("--require and --require-all exclude each other")
    try:
        suites = load_suites(args.vectors)
        known = _known(args)
    except (OSError, ValueError) as exc:
        return _fault("vectors_unreadable", str(exc))
    everything = {f"{s.suite}::{c['id']}" for s in suites for c in s.tests}
    for entry in sorted(known - everything):
        print(f"ppcheck: warning: known failure {entry!r} names no vector", file=sys.stderr)
    if args.suite:
        suites = [s for s in suites if any(fnmatch.fnmatchcase(s.suite, p) for p in args.suite)]
    if not suites:
        return _fault("usage", "no suite matches --suite " + " ".join(args.suite))
    for pattern in args.require:
        if not any(fnmatch.fnmatchcase(s.suite, pattern) for s in suites):
            return _fault("usage", f"--require {pattern!r} names no selected suite")
    if args.junit is not None and not args.list:
        cannot = _unwritable(args.junit)
        if cannot is not None:  # before the run, which can take a minute (review i24 #13)
            return _fault("io", f"cannot write the JUnit report: {cannot}")
    if args.list:
        for s in suites:
            print(f"{s.suite}  ({len(s.tests)} cases, {s.path})")
        return 0
    show = sys.stderr.isatty() if args.progress is None else args.progress
    stderr_dir: Path | None = None
    made_dir = False
    try:
        if impl is not None:
            if args.stderr_dir is None:
                stderr_dir, made_dir = Path(tempfile.mkdtemp(prefix="ppcheck-stderr-")), True
            else:
                stderr_dir = args.stderr_dir
                stderr_dir.mkdir(parents=True, exist_ok=True)
        if show:
            against = "this library" if impl is None else shlex.join(impl)
            print(
                f"ppcheck: {len(suites)} suites against {against}, {args.jobs} at a time",
                file=sys.stderr,
                flush=True,
            )
        reports = run_suites(
            suites,
            impl,
            jobs=args.jobs,
            timeout=args.timeout,
            known=known,
            stderr_dir=stderr_dir,
            progress=_Progress(len(suites)) if show else None,
        )
    except KeyboardInterrupt:
        # the adapters are stopped (run_suites); the shared rules say which signal it was
        # (Ctrl-C: interrupted, 130; SIGTERM: terminated, 143)
        raise
    except (OSError, RunnerError) as exc:
        return _fault("runner" if isinstance(exc, RunnerError) else "io", str(exc))
    finally:
        if made_dir and stderr_dir is not None:
            with contextlib.suppress(OSError):
                stderr_dir.rmdir()  # only when no adapter wrote to its stderr
    missing = _unsupported_required(reports, args.require, args.require_all)
    print(table(reports))
    for line in missing:
        print(line)
    print(summary_line(reports))
    if stderr_dir is not None and stderr_dir.is_dir():
        print(f"adapter stderr logs: {stderr_dir}")
    if args.junit is not None:
        try:
            args.junit.write_text(junit_xml(reports), encoding="utf-8")
        except OSError as exc:
            return _fault("io", f"cannot write the JUnit report: {exc}")
    return 1 if failure_count(reports) or missing else 0
