"""Command line of :mod:`handoff` (console script ``handoff``, also ``python -m handoff``).

Each subcommand is one function registered in :func:`build_parser`; every failure of the
library surfaces as ``error: <code>: <sentence>`` on standard error with exit status 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from importlib import metadata
from typing import Any

from _ppcli.rules import Parser, run

from ._check import admit_line
from ._cli_ext import add_extension_commands, settlement_checks, terms_mismatched
from ._cli_io import Target, describe, load_config, read_lines, target
from ._conformance import evidence_verdict
from ._fold import ItemState, Registry
from ._json import parse_line
from .errors import HandoffError

__all__ = ["build_parser", "main"]


def _version() -> str:
    try:
        return metadata.version("principal-protocols")
    except metadata.PackageNotFoundError:  # pragma: no cover - only in a bare checkout
        return "0+checkout"


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser of the ``handoff`` command with every subcommand."""
    parser = Parser(
        prog="handoff",
        description="Principal Handoff records, registers and state (principal-protocols).",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    config_help = (
        "JSON file with the deployment: {'roles': {...}, 'extensions'?: [...], 'side'?: {...}}; "
        "without extensions, the built-in acts/0.3 and decisions/0.3 (docs/spec/handoff.md)"
    )
    state_help = "the records as a store URL: sqlite:PATH (instead of FILE)"
    validate = sub.add_parser(
        "validate", help="check every record of a JSON Lines file; exit 1 if any is rejected"
    )
    validate.add_argument("file", help="records, one JSON object per line ('-' for stdin)")
    validate.add_argument("--config", required=True, help=config_help)
    validate.set_defaults(handler=_cmd_validate)

    state = sub.add_parser("state", help="fold records and print every item's current state")
    state.add_argument("file", nargs="?", help="records, one JSON object per line ('-' for stdin)")
    state.add_argument("--state", dest="state_url", metavar="URL", help=state_help)
    state.add_argument("--db", help="alias: --state sqlite:DB")
    state.add_argument("--config", required=True, help=config_help)
    state.add_argument("--json", action="store_true", help="print JSON instead of a table")
    state.set_defaults(handler=_cmd_state)

    add = sub.add_parser("add", help="append records to a store (a SQLite store is created)")
    add.add_argument("file", nargs="?", default="-", help="records as JSON Lines (default stdin)")
    add.add_argument("--state", dest="state_url", metavar="URL", help="the store: sqlite:PATH")
    add.add_argument("--db", help="alias: --state sqlite:DB")
    add.add_argument("--config", required=True, help=config_help)
    add.set_defaults(handler=_cmd_add)
    add_extension_commands(sub)
    return parser


def _cmd_validate(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    counts = {"accepted": 0, "ignored": 0, "rejected": 0}
    registry = Registry(roles=config.roles, extensions=config.extensions)
    settlements: list[tuple[int, dict[str, Any]]] = []
    for number, line in read_lines(args.file):
        try:
            verdict = admit_line(line, config.roles, config.extensions)
        except HandoffError as exc:
            counts["rejected"] += 1
            print(f"{args.file}:{number}: rejected {describe(exc)}")
            continue
        counts[verdict.status] += 1
        if verdict.status == "ignored":
            print(f"{args.file}:{number}: ignored ({verdict.why})")
            continue
        if config.jwks_named:
            record = parse_line(line)
            registry.add(record)
            if record["type"] == "settled":
                settlements.append((number, record))
    forged = 0
    for number, record in settlements:
        # where the configuration names keys, a settlement's evidence is checked too
        check = evidence_verdict(record, registry, config.side)
        forged += check.verdict == "forged"
        print(
            f"{args.file}:{number}: {check.verdict} "
            f"(presented {check.presented}, proof {check.proof})"
        )
    print(
        ", ".join(f"{n} {k}" for k, n in counts.items())
        + (f", {forged} forged" if settlements else "")
    )
    return 1 if counts["rejected"] or forged else 0


def _state_line(state: ItemState, evidence: str | None, mismatch: bool = False) -> str:
    parts = [f"{state.item.ext}/{state.item.project}/{state.item.key}", state.state]
    if state.outcome is not None:
        parts.append(state.outcome)
    if evidence is not None:
        parts.append(evidence)
    if state.stale:
        parts.append("stale")
    if mismatch:
        parts.append("terms_mismatch")
    if state.need_withdrawn:
        parts.append("need-withdrawn")
    if state.conflicts:
        parts.append(f"{len(state.conflicts)} conflict(s)")
    if state.terms is not None:
        parts.append(repr(str(state.terms.get("text", ""))[:60]))
    return "  ".join(parts)


def _cmd_state(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    where = target(args, config)
    try:
        registry, rejected = where.registry(strict=False)
    finally:
        where.close()
    for line in rejected:
        print(line, file=sys.stderr)
    states = registry.states()
    checks = settlement_checks(registry, config)
    conflicted = sum(1 for s in states.values() if s.state == "conflicted")
    forged = sum(1 for c in checks.values() if c["verdict"] == "forged")
    mismatched = terms_mismatched(registry)
    # a settlement whose outcome the held terms do not offer does not stand (§12, ours)
    refused = sum(
        1
        for s in states.values()
        if any(c.kind in ("outcome_not_offered", "outcome_unchecked") for c in s.conflicts)
    )
    if args.json:
        items = []
        for item, state in states.items():
            shown = state.to_json()
            if item in checks:
                shown["evidence"] = checks[item]
            if item in mismatched:
                shown["terms_mismatch"] = True
            items.append(shown)
        out: dict[str, Any] = {
            "items": items,
            "conflicts": [c.to_json() for c in registry.conflicts()],
            "ignored": registry.ignored(),
            "rejected": len(rejected),
            "role_changed": registry.role_changed(),
        }
        print(json.dumps(out, indent=2, ensure_ascii=False, sort_keys=False))
    else:
        for item, state in states.items():
            check = checks.get(item)
            print(_state_line(state, check["verdict"] if check else None, item in mismatched))
        print(
            f"{len(states)} items, {len(registry.conflicts())} conflicts, "
            f"{conflicted} conflicted, {forged} forged, {len(mismatched)} terms_mismatch, "
            f"{refused} outcome_refused, "
            f"{len(rejected)} rejected, "
            f"{len(registry.role_changed())} role_changed"
        )
    return 1 if rejected or conflicted or forged or mismatched or refused else 0


def _cmd_add(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    if (args.state_url is None) == (args.db is None):
        raise HandoffError("usage", "give exactly one of --state URL or --db PATH")
    url = args.state_url if args.state_url is not None else f"sqlite:{args.db}"
    if not url.startswith(("sqlite:", "postgresql://", "postgres://")):
        raise HandoffError(
            "usage", "handoff add appends to a store: --state sqlite:PATH or postgresql://…"
        )
    lines = list(read_lines(args.file))  # read first: a missing input creates nothing
    where = Target(url, config, create=True)
    assert where.store is not None
    rejected = appended = 0
    try:
        for number, line in lines:
            try:
                status = where.store.append(line)
            except HandoffError as exc:
                if exc.code == "store":
                    # the store cannot take it now (an outage, a lock held too long): not
                    # a bad record, and the next line would fare no better; stop here
                    done = f"{appended} appended before it" if appended else "nothing appended"
                    raise HandoffError(
                        "store",
                        f"{args.file}:{number}: {exc.message}; {done}, this line and the rest not",
                        reason=exc.reason,
                    ) from None
                rejected += 1
                print(f"{args.file}:{number}: rejected {describe(exc)}")
                continue
            appended += status == "accepted"
            print(f"{args.file}:{number}: {status}")
    finally:
        where.close()
    return 1 if rejected else 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``handoff`` command line on ``argv`` ; return the exit status (docs/cli.md)."""
    return run(lambda: _main(argv), prog="handoff")


def _main(argv: Sequence[str] | None) -> int:
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
