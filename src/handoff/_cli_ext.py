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
import sys
from pathlib import Path
from typing import Any

from ._acts import ACTS
from ._canonical import canonical
from ._config import ExtensionRegistry, Roles
from ._conformance import (
    EXTENSIONS,
    PrincipalSide,
    check_principal_side_record,
    make_settlement,
    presentation_for,
)
from ._decisions import DECISIONS
from ._errors import HandoffError
from ._evidence import attach_proof
from ._fold import Registry
from ._json import parse_line
from ._markdown import sync_state_document
from ._records import ItemId

__all__ = ["add_extension_commands"]

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
    settle.add_argument("records", help="the records, JSON Lines; the settlement is appended")
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

    md = sub.add_parser("md", help="the Acts Markdown binding (a project's state document)")
    md_sub = md.add_subparsers(dest="md_command", metavar="MD_COMMAND")
    sync = md_sub.add_parser(
        "sync", help="read STATE.md into records, append them, rewrite STATE.md from state"
    )
    sync.add_argument("document", help="the state document, e.g. STATE.md")
    sync.add_argument("--records", required=True, help="the records, JSON Lines (appended to)")
    sync.add_argument("--config", required=True, help=_CONFIG_HELP)
    sync.add_argument("--project", required=True, help="the project the document belongs to")
    sync.add_argument("--registrar", required=True, help="the registrar's party identifier")
    sync.add_argument("--section", default="Acts", help="the section title (default Acts)")
    sync.add_argument("--now", help="RFC 3339 time of the records (default: the clock)")
    sync.set_defaults(handler=_cmd_md_sync)


def _read(path: str, what: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise HandoffError("io", f"cannot read {what} {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise HandoffError("io", f"{what} {path} is not UTF-8 text") from None


def _config(path: str) -> tuple[Roles, ExtensionRegistry, PrincipalSide]:
    value = parse_line(_read(path, "config"), where=f"config {path}")
    if "roles" not in value:
        raise HandoffError("config", f"config {path} has no roles", reason="config_invalid")
    extensions = EXTENSIONS
    for extension in ExtensionRegistry.from_json(value.get("extensions", [])):
        if extensions.get(extension.ext) is None:
            extensions = extensions.with_extension(extension)
    return (
        Roles.from_json(value["roles"]),
        extensions,
        PrincipalSide.from_json(value.get("side", {})),
    )


def _registry(path: str, roles: Roles, extensions: ExtensionRegistry) -> Registry:
    registry = Registry(roles=roles, extensions=extensions)
    if Path(path).exists():
        text = _read(path, "records")
        for number, line in enumerate(text.split("\n"), 1):
            if line.strip():
                try:
                    registry.add(line)
                except HandoffError as exc:
                    raise HandoffError(
                        exc.code, f"{path}:{number}: {exc.message}", reason=exc.reason
                    ) from None
    return registry


def _append(path: str, records: list[dict[str, Any]]) -> None:
    if not records:
        return
    try:
        with open(path, "a", encoding="utf-8") as handle:
            for record in records:
                handle.write(canonical(record).decode("utf-8") + "\n")
    except OSError as exc:
        raise HandoffError("io", f"cannot append to {path}: {exc.strerror}") from None


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
    roles, extensions, side = _config(args.config)
    registry = _registry(args.records, roles, extensions)
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
        answer = input(f"Settle {args.key} as {args.outcome!r}? [y/N] ")
        if answer.strip().lower() not in {"y", "yes"}:
            print("not settled")
            return 1
    key = parse_line(_read(args.principal_key, "principal key"), where="the principal key")
    signed = attach_proof(record, key)
    check_principal_side_record(signed, registry, side)
    _append(args.records, [signed])
    print(f"settled {args.key} as {args.outcome!r}: record {signed['id']} appended")
    return 0


def _cmd_md_sync(args: argparse.Namespace) -> int:
    roles, extensions, _ = _config(args.config)
    registry = _registry(args.records, roles, extensions)
    text = _read(args.document, "state document") if Path(args.document).exists() else ""
    result = sync_state_document(
        text,
        registry,
        project=args.project,
        registrar=args.registrar,
        now=_now(args.now),
        section=args.section,
    )
    _append(args.records, list(result.records))
    if result.document != text:
        try:
            Path(args.document).write_text(result.document, encoding="utf-8")
        except OSError as exc:
            raise HandoffError("io", f"cannot write {args.document}: {exc.strerror}") from None
    for record in result.records:
        print(f"{record['type']} {record['key']} {record.get('outcome', '')}".rstrip())
    changed = "rewritten" if result.document != text else "unchanged"
    print(f"{len(result.records)} records appended; {args.document} {changed}")
    sys.stdout.flush()
    return 0
