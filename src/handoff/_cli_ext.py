"""The extension subcommands of the ``handoff`` command: ``settle`` and ``md sync``.

``handoff settle`` acts as the principal side: it shows exactly what is presented (the §9
presentation and its digest), asks, then records the settlement with ``evidence.presented``
and ``evidence.proof`` signed with the principal's own key file, which no agent holds.
``handoff md sync`` is the Acts registrar: it reads a state document against the records,
appends the records the document implies, and rewrites the document from folded state.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path
from typing import Any

from _ppcli.rules import read_input

from ._acts import ACTS
from ._canonical import canonical
from ._cli_io import Config, Target, load_config
from ._conformance import (
    check_principal_side_record,
    current_settlement,
    make_settlement,
    observe,
    presentation_for,
    presented_terms,
    settlement_evidence,
)
from ._decisions import DECISIONS
from ._evidence import attach_proof
from ._fold import Registry
from ._json import parse_line
from ._markdown import sync_state_document
from ._records import ItemId
from .errors import HandoffError

__all__ = ["add_extension_commands", "settlement_checks"]

_CONFIG_HELP = (
    "JSON file: {'roles': {...}, 'side'?: {'mandates', 'jwks'}} "
    "(see docs/spec/handoff-extensions.md, Command line)"
)


def add_extension_commands(sub: Any) -> None:
    """Add ``settle`` and ``md sync`` to the ``handoff`` subparsers object ``sub``."""
    settle = sub.add_parser(
        "settle",
        help="as the principal side: show what is presented, then record a signed settlement",
    )
    settle.add_argument(
        "records",
        nargs="?",
        help="the records, JSON Lines; the settlement is appended (or --state sqlite:PATH)",
    )
    settle.add_argument("--state", dest="state_url", metavar="URL", help="a store: sqlite:PATH")
    settle.add_argument("--db", help="alias: --state sqlite:DB")
    settle.add_argument("--config", required=True, help=_CONFIG_HELP)
    settle.add_argument("--ext", required=True, choices=["acts", "decisions"], help="extension")
    settle.add_argument("--project", required=True, help="the item's project")
    settle.add_argument("--key", required=True, help="the item's key")
    settle.add_argument("--outcome", required=True, help="done/declined/failed, or an option id")
    settle.add_argument(
        "--principal-key",
        required=True,
        help="the principal's own private JWK file (Ed25519 or P-256), never an agent's",
    )
    settle.add_argument(
        "--kind", choices=["principal", "confirmed"], default="principal", help="authority kind"
    )
    settle.add_argument("--proposal", help="for confirmed: the id of the claim confirmed")
    settle.add_argument("--answer", help="for a decision settled 'free': the answer")
    settle.add_argument("--by", help="the principal side's party identifier")
    settle.add_argument("--now", help="RFC 3339 time of the record (default: the clock)")
    settle.add_argument("--yes", action="store_true", help="do not ask before recording")
    settle.set_defaults(handler=_cmd_settle)

    observe = sub.add_parser(
        "observe",
        help="as an observer: fold, report evidence, claims' bases and option status (JSON)",
    )
    observe.add_argument("records", nargs="?", help="the records, JSON Lines ('-' for stdin)")
    observe.add_argument("--state", dest="state_url", metavar="URL", help="a store: sqlite:PATH")
    observe.add_argument("--db", help="alias: --state sqlite:DB")
    observe.add_argument("--config", required=True, help=_CONFIG_HELP)
    observe.set_defaults(handler=_cmd_observe)

    md = sub.add_parser("md", help="the Acts Markdown binding (a project's state document)")
    md.set_defaults(handler=lambda _args: _help(md))
    md_sub = md.add_subparsers(dest="md_command", metavar="MD_COMMAND")
    sync = md_sub.add_parser(
        "sync", help="read STATE.md into records, append them, rewrite STATE.md from state"
    )
    sync.add_argument("document", help="the state document, e.g. STATE.md")
    sync.add_argument("--records", help="the records, JSON Lines (appended to)")
    sync.add_argument("--state", dest="state_url", metavar="URL", help="a store: sqlite:PATH")
    sync.add_argument("--db", help="alias: --state sqlite:DB")
    sync.add_argument("--config", required=True, help=_CONFIG_HELP)
    sync.add_argument("--project", required=True, help="the project the document belongs to")
    sync.add_argument("--registrar", required=True, help="the registrar's party identifier")
    sync.add_argument("--section", default="Acts", help="the section title (default Acts)")
    sync.add_argument("--now", help="RFC 3339 time of the records (default: the clock)")
    sync.set_defaults(handler=_cmd_md_sync)


def _read(path: str, what: str) -> str:
    try:
        return read_input(path).decode("utf-8")
    except OSError as exc:
        raise HandoffError("io", f"cannot read {what} {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise HandoffError("io", f"{what} {path} is not UTF-8 text") from None


def _help(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 0


def _target(args: argparse.Namespace, config: Config, path: str | None) -> Target:
    given = [v for v in (path, args.state_url, f"sqlite:{args.db}" if args.db else None) if v]
    if len(given) != 1:
        raise HandoffError("usage", "give exactly one records file, --state URL or --db PATH")
    return Target(given[0], config, create=False)


def settlement_checks(registry: Registry, config: Config) -> dict[ItemId, dict[str, str]]:
    """Check every current settlement's evidence where the configuration names keys.

    ``{item: {"verdict": verified|unverified|forged, "presented", "proof"}}``; empty when
    the configuration holds no JWKS (``side.jwks``).
    """
    if not config.jwks_named:
        return {}
    found: dict[ItemId, dict[str, str]] = {}
    for item in registry.items():
        checked = settlement_evidence(registry, item, config.side)
        if checked is not None:
            found[item] = checked.to_json()
    return found


def terms_mismatched(registry: Registry) -> frozenset[ItemId]:
    """Settled items whose shown terms are not the terms their settlement was made against.

    Either the settlement's revision was reused for other terms (the fold marks it stale
    at its own revision), or its ``presented`` digest binds held terms that differ from
    the ones shown (docs/spec/handoff.md §10, ours). ``state`` exits 1 for them and ``md
    sync`` never ticks them.
    """
    found: set[ItemId] = set()
    for item, state in registry.states().items():
        if state.state != "settled" or state.terms is None:
            continue
        if state.stale and state.settled_terms_rev == state.terms_rev:
            found.add(item)
            continue
        record = current_settlement(registry, item)
        bound = presented_terms(registry, record) if record is not None else None
        if bound is not None and canonical(bound) != canonical(dict(state.terms)):
            found.add(item)
    return frozenset(found)


def _now(value: str | None) -> str:
    if value is not None:
        return value
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _showable(text: str) -> str:
    """Escape what a terminal would not show as itself (controls, bidi overrides) as \\uXXXX.

    Terms come from agents: printed raw, a C1 control or a right-to-left override could
    make the confirmation screen show the principal something other than what is signed.
    """
    return "".join(
        c
        if c.isprintable() or c == " "
        else f"\\u{ord(c):04x}"
        if ord(c) < 0x10000
        else f"\\U{ord(c):08x}"
        for c in text
    )


def _cmd_settle(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    where = _target(args, config, args.records)
    try:
        return _settle(args, config, where)
    finally:
        where.close()


def _settle(args: argparse.Namespace, config: Config, where: Target) -> int:
    roles, side = config.roles, config.side
    registry, _ = where.registry(strict=True)
    ext = ACTS if args.ext == "acts" else DECISIONS
    state = registry.state(ItemId(ext.name, args.project, args.key))
    if state.terms is None or state.terms_rev is None:
        raise HandoffError("settle", f"no need record is held for {args.key!r}", reason="unknown")
    record = make_settlement(
        registry,
        ItemId(ext.name, args.project, args.key),
        args.outcome,
        by=args.by or sorted(roles.principal_side)[0],
        ts=_now(args.now),
        kind=args.kind,
        proposal=args.proposal,
        answer=args.answer,
    )
    # show exactly the presentation whose digest the record carries
    shown = presentation_for(registry, record)
    if shown is None:  # pragma: no cover - make_settlement refuses this case
        raise HandoffError("settle", "the settled terms are not held", reason="unknown")
    print("Presented to the principal (exactly these bytes are digested):")
    print(_showable(canonical(shown).decode("utf-8")))
    print(f"evidence.presented = {record['evidence']['presented']}")
    if any(c.kind != "same_id" and c.register == "need" for c in state.conflicts):
        print("warning: the requester's need register has several heads; check the terms")
    if state.need_withdrawn:
        print("note: the requester has withdrawn this need")
    if not args.yes:
        try:
            answer = input(f"Settle {args.key} as {args.outcome!r}? [y/N] ")
        except EOFError:
            answer = ""
            print()
        if answer.strip().lower() not in {"y", "yes"}:
            print("not settled")
            return 1
    key = parse_line(_read(args.principal_key, "principal key"), where="the principal key")
    signed = attach_proof(record, key)
    check_principal_side_record(signed, registry, side)
    where.append([signed])
    print(f"settled {args.key} as {args.outcome!r}: record {signed['id']} appended")
    return 0


def _cmd_observe(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    where = _target(args, config, args.records)
    try:
        registry, rejected = where.registry(strict=False)
    finally:
        where.close()
    for line in rejected:
        print(line, file=sys.stderr)
    items = observe([], registry, jwks=config.side.jwks)
    out = {
        "items": items,
        "ignored": registry.ignored(),
        "rejected": len(rejected),
        "role_changed": registry.role_changed(),
    }
    print(json.dumps(out, indent=2, ensure_ascii=False))
    return 1 if rejected else 0


def _cmd_md_sync(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    where = _target(args, config, args.records)
    try:
        return _md_sync(args, config, where)
    finally:
        where.close()


def _md_sync(args: argparse.Namespace, config: Config, where: Target) -> int:
    registry, _ = where.registry(strict=True, missing_ok=True)
    text = _read(args.document, "state document") if Path(args.document).exists() else ""
    checks = settlement_checks(registry, config)
    forged = frozenset(
        item.key
        for item, check in checks.items()
        if check["verdict"] == "forged" and item.ext == ACTS.name and item.project == args.project
    )
    mismatched = frozenset(
        item.key
        for item in terms_mismatched(registry)
        if item.ext == ACTS.name and item.project == args.project
    )
    # on a verifiable side only a verified settlement is ticked (docs/spec/handoff.md §12)
    unverified = frozenset(
        item.key
        for item, check in checks.items()
        if config.side.verifiable
        and check["verdict"] == "unverified"
        and item.ext == ACTS.name
        and item.project == args.project
    )
    result = sync_state_document(
        text,
        registry,
        project=args.project,
        registrar=args.registrar,
        now=_now(args.now),
        section=args.section,
        distrusted=forged | mismatched | unverified,
    )
    where.append(list(result.records))
    if result.document != text:
        try:
            Path(args.document).write_text(result.document, encoding="utf-8")
        except OSError as exc:
            raise HandoffError("io", f"cannot write {args.document}: {exc.strerror}") from None
    for record in result.records:
        print(f"{record['type']} {record['key']} {record.get('outcome', '')}".rstrip())
    changed = "rewritten" if result.document != text else "unchanged"
    print(f"{len(result.records)} records appended; {args.document} {changed}")
    trouble = 0
    for item, state in registry.states().items():
        if item.ext != ACTS.name or item.project != args.project:
            continue
        if state.state == "conflicted":
            trouble += 1
            print(f"conflicted {item.key}: an id was sent with two contents; left as it was")
        elif item.key in forged:
            trouble += 1
            print(f"forged {item.key}: its settlement's evidence does not verify; not ticked")
        elif item.key in mismatched:
            trouble += 1
            print(f"terms_mismatch {item.key}: settled against other terms; not ticked")
        elif item.key in unverified and state.state == "settled":
            trouble += 1
            print(
                f"unverified {item.key}: a verifiable side's settlement without proof; not ticked"
            )
    sys.stdout.flush()
    return 1 if trouble else 0
