"""Command line of :mod:`handoff` (console script ``handoff``, also ``python -m handoff``).

Each subcommand is one function registered in :func:`build_parser`; every failure of the
library surfaces as ``error: <code>: <sentence>`` on standard error with exit status 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from ._check import check_record
from ._cli_ext import add_extension_commands
from ._config import Extension, ExtensionRegistry, Roles
from ._errors import HandoffError
from ._fold import ItemState, Registry
from ._json import parse_line
from ._store import SQLiteStore

__all__ = ["build_parser", "main"]


def _version() -> str:
    try:
        return metadata.version("principal-protocols")
    except metadata.PackageNotFoundError:  # pragma: no cover - only in a bare checkout
        return "0+checkout"


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser of the ``handoff`` command with every subcommand."""
    parser = argparse.ArgumentParser(
        prog="handoff",
        description="Principal Handoff records, registers and state (principal-protocols).",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    config_help = (
        "JSON file with the deployment: {'roles': {...}, 'extensions'?: [...]}; "
        "without extensions, the built-in acts/0.3 and decisions/0.3 (docs/spec/handoff.md)"
    )
    validate = sub.add_parser(
        "validate", help="check every record of a JSON Lines file; exit 1 if any is rejected"
    )
    validate.add_argument("file", help="records, one JSON object per line ('-' for stdin)")
    validate.add_argument("--config", required=True, help=config_help)
    validate.set_defaults(handler=_cmd_validate)

    state = sub.add_parser("state", help="fold records and print every item's current state")
    state.add_argument("file", nargs="?", help="records, one JSON object per line ('-' for stdin)")
    state.add_argument("--db", help="fold the records of this SQLite store instead of a file")
    state.add_argument("--config", required=True, help=config_help)
    state.add_argument("--json", action="store_true", help="print JSON instead of a table")
    state.set_defaults(handler=_cmd_state)

    add = sub.add_parser("add", help="append records to a SQLite store (created if missing)")
    add.add_argument("file", nargs="?", default="-", help="records as JSON Lines (default stdin)")
    add.add_argument("--db", required=True, help="the SQLite store file")
    add.add_argument("--config", required=True, help=config_help)
    add.set_defaults(handler=_cmd_add)
    add_extension_commands(sub)
    return parser


def _load_config(path: str) -> tuple[Roles, ExtensionRegistry]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise HandoffError("config", f"cannot read {path}: {exc.strerror}") from None
    value = parse_line(text, where=f"config {path}")
    if "roles" not in value:
        raise HandoffError("config", f"config {path} has no roles", reason="config_invalid")
    from ._conformance import EXTENSIONS  # the extensions this library implements

    listed = value.get("extensions")
    if listed is None:
        return Roles.from_json(value["roles"]), EXTENSIONS
    if not isinstance(listed, list):
        raise HandoffError("config", f"config {path}: extensions is not a list")
    chosen = []
    for entry in listed:
        if isinstance(entry, str):
            builtin = EXTENSIONS.get(entry)
            if builtin is None:
                raise HandoffError("config", f"config {path}: no built-in extension {entry!r}")
            chosen.append(builtin)
        else:
            chosen.append(Extension.from_json(entry))
    return Roles.from_json(value["roles"]), ExtensionRegistry(chosen)


def _lines(path: str) -> Iterator[tuple[int, str]]:
    if path == "-":
        stream = sys.stdin
        for number, line in enumerate(stream, 1):
            if line.strip():
                yield number, line
        return
    try:
        with open(path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                if line.strip():
                    yield number, line
    except OSError as exc:
        raise HandoffError("io", f"cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise HandoffError("parse", f"{path} is not UTF-8 text", reason="json_syntax") from None


def _describe(exc: HandoffError) -> str:
    tag = exc.code if exc.reason is None else f"{exc.code}/{exc.reason}"
    return f"{tag}: {exc.message}"


def _cmd_validate(args: argparse.Namespace) -> int:
    roles, extensions = _load_config(args.config)
    counts = {"accepted": 0, "ignored": 0, "rejected": 0}
    for number, line in _lines(args.file):
        try:
            verdict = check_record(parse_line(line), roles=roles, extensions=extensions)
        except HandoffError as exc:
            counts["rejected"] += 1
            print(f"{args.file}:{number}: rejected {_describe(exc)}")
            continue
        counts[verdict.status] += 1
        if verdict.status == "ignored":
            print(f"{args.file}:{number}: ignored ({verdict.why})")
    print(", ".join(f"{n} {k}" for k, n in counts.items()))
    return 1 if counts["rejected"] else 0


def _state_line(state: ItemState) -> str:
    parts = [f"{state.item.ext}/{state.item.project}/{state.item.key}", state.state]
    if state.outcome is not None:
        parts.append(state.outcome)
    if state.stale:
        parts.append("stale")
    if state.need_withdrawn:
        parts.append("need-withdrawn")
    if state.conflicts:
        parts.append(f"{len(state.conflicts)} conflict(s)")
    if state.terms is not None:
        parts.append(repr(str(state.terms.get("text", ""))[:60]))
    return "  ".join(parts)


def _cmd_state(args: argparse.Namespace) -> int:
    roles, extensions = _load_config(args.config)
    if (args.file is None) == (args.db is None):
        raise HandoffError("usage", "give exactly one of FILE or --db")
    rejected = 0
    if args.db is not None:
        with SQLiteStore(args.db, roles=roles, extensions=extensions) as store:
            registry = store.registry()
    else:
        registry = Registry(roles=roles, extensions=extensions)
        for number, line in _lines(args.file):
            try:
                registry.add_lines([line])
            except HandoffError as exc:
                rejected += 1
                print(f"{args.file}:{number}: rejected {_describe(exc)}", file=sys.stderr)
    states = registry.states()
    if args.json:
        out: dict[str, Any] = {
            "items": [s.to_json() for s in states.values()],
            "conflicts": [c.to_json() for c in registry.conflicts()],
            "ignored": registry.ignored(),
            "rejected": rejected,
        }
        print(json.dumps(out, indent=2, ensure_ascii=False, sort_keys=False))
    else:
        for state in states.values():
            print(_state_line(state))
        print(f"{len(states)} items, {len(registry.conflicts())} conflicts, {rejected} rejected")
    return 1 if rejected else 0


def _cmd_add(args: argparse.Namespace) -> int:
    roles, extensions = _load_config(args.config)
    rejected = 0
    with SQLiteStore(args.db, roles=roles, extensions=extensions) as store:
        for number, line in _lines(args.file):
            try:
                status = store.append(line)
            except HandoffError as exc:
                rejected += 1
                print(f"{args.file}:{number}: rejected {_describe(exc)}")
                continue
            print(f"{args.file}:{number}: {status}")
    return 1 if rejected else 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``handoff`` command line on ``argv`` ; return the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 0
    try:
        code: int = handler(args)
    except HandoffError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return code
