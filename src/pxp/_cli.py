"""Command line of :mod:`pxp` (console script ``pxp``, also ``python -m pxp``).

Each subcommand is one function registered in :func:`build_parser`; every failure of the
library surfaces as ``error: <code>: <sentence>`` on standard error with exit status 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from importlib import metadata
from pathlib import Path
from typing import Any

from _ppcli.rules import (
    Parser,
    add_log_level,
    bind_listen,
    port,
    read_input,
    run,
    start_logging,
)

from ._brief import brief_markdown
from ._card import seal_card
from ._export import load_room
from ._ledger import load_ledger
from ._room import format_time
from ._simulate import simulate
from .errors import PxpError

__all__ = ["build_parser", "main"]


def _version() -> str:
    try:
        return metadata.version("principal-protocols")
    except metadata.PackageNotFoundError:  # pragma: no cover - only in a bare checkout
        return "0+checkout"


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser of the ``pxp`` command with every subcommand."""
    parser = Parser(
        prog="pxp",
        description="Proxy Exchange Protocol (PXP v0) negotiation rooms (principal-protocols).",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    seal = sub.add_parser("seal", help="validate an intent card and print it sealed with its hash")
    seal.add_argument("card", type=Path, help="the card as JSON (the seal_intent_card fields)")
    seal.set_defaults(handler=_seal)

    ledger = sub.add_parser("ledger", help="ledger tools")
    ledger_sub = ledger.add_subparsers(dest="ledger_command", metavar="COMMAND")
    verify = ledger_sub.add_parser(
        "verify", help="verify a ledger (a JSON array, or a room export) and print its head"
    )
    verify.add_argument("ledger", type=Path, help="the ledger or room export as JSON")
    verify.add_argument("--head", help="the head hash the ledger must end at (from a brief)")
    verify.set_defaults(handler=_verify)
    ledger.set_defaults(handler=lambda args: _usage(ledger))

    brief = sub.add_parser("brief", help="print the decision brief of an exported room")
    brief.add_argument("room", type=Path, help="the room export as JSON")
    brief.add_argument("--markdown", action="store_true", help="print Markdown, not JSON")
    brief.set_defaults(handler=_brief)

    sim = sub.add_parser(
        "simulate", help="two scripted proxies negotiate a deal with one escalation"
    )
    sim.add_argument("--json", action="store_true", help="print the brief as JSON")
    sim.add_argument("--export", type=Path, help="also write the room export to this file")
    sim.set_defaults(handler=_simulate)

    serve = sub.add_parser(
        "serve", help="run the MCP room server (needs the extras principal-protocols[mcp,http])"
    )
    serve.add_argument("--host", default="127.0.0.1", help="interface to bind (127.0.0.1)")
    serve.add_argument("--port", type=port, default=8765, help="port to bind (8765)")
    serve.add_argument("--db", type=Path, default=Path("pxp-rooms.sqlite"), help="SQLite file")
    serve.add_argument(
        "--state",
        metavar="URL",
        help="the store instead of --db: sqlite:PATH, or postgresql://… shared by replicas",
    )
    serve.add_argument(
        "--poll-seconds",
        type=float,
        default=0.5,
        help="how often a waiting wait_for_turn re-reads the store (0.5; with postgresql://"
        " replicas wake each other at once, so a longer re-read only bounds a lost wake-up)",
    )
    serve.add_argument("--public-url", help="URL prefix of the links handed out")
    serve.add_argument(
        "--allowed-host", action="append", default=[], help="Host header to accept (repeat)"
    )
    serve.add_argument(
        "--allowed-origin", action="append", default=[], help="Origin header to accept (repeat)"
    )
    serve.add_argument(
        "--agent-keys-file",
        type=Path,
        help="turn on sign-in: principal agent keys, one per line (or env PXP_AGENT_KEYS)",
    )
    serve.add_argument("--max-turns", type=int, default=10, help="turn limit per room (10)")
    serve.add_argument(
        "--confirm-cards-on-web",
        action="store_true",
        help="cards sent over MCP are drafts the principal confirms on the web page",
    )
    serve.add_argument(
        "--max-waiters-per-client",
        type=int,
        default=16,
        help="wait_for_turn calls one client may have waiting at once (16)",
    )
    serve.add_argument(
        "--link-days",
        type=float,
        default=30.0,
        help="days a link works after it is issued (30; 0: links never expire)",
    )
    serve.add_argument(
        "--import",
        dest="imports",
        action="append",
        type=Path,
        default=[],
        metavar="FILE",
        help="serve the rooms of a reference export (one room, or a store file with 'rooms'); "
        "prints each imported room's fresh links once (repeat)",
    )
    add_log_level(serve)
    serve.set_defaults(handler=_serve)

    links = sub.add_parser("links", help="list, revoke or expire the links of a served room")
    links_sub = links.add_subparsers(dest="links_command", metavar="COMMAND")
    for name, text in (
        ("list", "show each link of a room: seat, kind, expiry, revoked (never the secret)"),
        ("revoke", "revoke links of a room at once (all, or one seat and/or kind)"),
        ("expire", "set when links of a room expire (all, or one seat and/or kind)"),
        ("reissue", "issue a seat's principal link afresh (the old one stops working); print it"),
    ):
        cmd = links_sub.add_parser(name, help=text)
        cmd.add_argument("room", help="the room id")
        cmd.add_argument("--db", type=Path, default=Path("pxp-rooms.sqlite"), help="SQLite file")
        if name == "reissue":
            cmd.add_argument("--seat", choices=("A", "B"), required=True, help="the seat")
            cmd.add_argument(
                "--public-url",
                default="http://127.0.0.1:8765",
                help="URL prefix of the link printed (http://127.0.0.1:8765)",
            )
        elif name != "list":
            cmd.add_argument("--seat", choices=("A", "B"), help="only this seat's links")
            cmd.add_argument(
                "--kind", choices=("seat", "principal", "invite"), help="only this kind"
            )
        if name == "expire":
            when = cmd.add_mutually_exclusive_group(required=True)
            when.add_argument(
                "--at", help="an ISO 8601 time with its offset, e.g. 2027-01-01T00:00Z"
            )
            when.add_argument("--in-days", type=float, help="this many days from now")
            when.add_argument("--never", action="store_true", help="the links never expire")
        cmd.set_defaults(handler=_links)
    links.set_defaults(handler=lambda args: _usage(links))
    _no_abbreviations(parser)
    return parser


def _no_abbreviations(parser: argparse.ArgumentParser) -> None:
    """Refuse abbreviated options in every (sub)command: ``--agent-key k`` must not quietly
    mean ``--agent-keys-file k``."""
    parser.allow_abbrev = False
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                _no_abbreviations(child)


def _links(args: argparse.Namespace) -> int:
    from ._server_links import SqliteLinkStore

    if not args.db.exists():
        raise PxpError("file_unreadable", f"{args.db} does not exist")
    store = SqliteLinkStore(args.db)
    if not store.rows(args.room):
        raise PxpError("room_unknown", f"no links of room {args.room!r} in {args.db}")
    if args.links_command == "reissue":
        from .server import sqlite_service

        token = sqlite_service(args.db).reissue_principal_link(args.room, args.seat)
        base = args.public_url.rstrip("/")
        print(f"{args.seat} principal {base}/p/{args.room}/{token}")
    elif args.links_command == "revoke":
        count = store.revoke(args.room, seat=args.seat, kind=args.kind)
        print(f"revoked {count} link(s) of room {args.room}")
    elif args.links_command == "expire":
        when: str | None = None
        if args.at is not None:
            try:
                moment = datetime.fromisoformat(args.at.replace("Z", "+00:00"))
            except ValueError:
                raise PxpError("time_invalid", f"{args.at!r} is not an ISO 8601 time") from None
            when = format_time(moment)
        elif args.in_days is not None:
            if not 0 <= args.in_days <= 36500:
                raise PxpError("time_invalid", "--in-days must lie between 0 and 36500")
            when = format_time(datetime.now(UTC) + timedelta(days=args.in_days))
        count = store.set_expiry(args.room, when, seat=args.seat, kind=args.kind)
        print(f"{count} link(s) of room {args.room} now expire {when or 'never'}")
    for row in store.rows(args.room):
        state = "revoked" if row.revoked else f"expires {row.expires_at or 'never'}"
        print(f"{row.seat} {row.kind:9} {state}")
    return 0


def _serve(args: argparse.Namespace) -> int:
    from ._server_cli import run_serve

    sock, why = bind_listen(args.host, args.port)
    if sock is None:  # before the store is created and the server's own logs start
        raise PxpError("listen_failed", why or "cannot listen")
    # the port is held from here on (no other program can take it while the store is
    # created and the rooms imported); port 0: the free port the system chose, so the
    # endpoint line and the links of --import name the port the server listens on
    with sock:
        args.port = int(sock.getsockname()[1])
        start_logging(args.log_level, "pxp")
        return run_serve(args, sock=sock)


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def _read_json(path: Path) -> Any:
    try:
        return json.loads(read_input(path).decode("utf-8"))
    except OSError as exc:
        raise PxpError("file_unreadable", f"cannot read {path}: {exc.strerror}") from None
    except (ValueError, RecursionError):
        raise PxpError("json_invalid", f"{path} is not valid JSON") from None


def _print_json(value: Any) -> None:
    text = json.dumps(value, indent=2, ensure_ascii=False)
    if any("\ud800" <= char <= "\udfff" for char in text):
        text = json.dumps(value, indent=2)  # a lone surrogate cannot be printed as UTF-8
    print(text)


def _seal(args: argparse.Namespace) -> int:
    sealed = seal_card(_read_json(args.card))
    _print_json({"card_hash": sealed.hash, "card": sealed.card.to_json()})
    return 0


def _verify(args: argparse.Namespace) -> int:
    ledger = load_ledger(_read_json(args.ledger), head=args.head)
    print(f"ok: {len(ledger)} entries, head {ledger.head}")
    return 0


def _brief(args: argparse.Namespace) -> int:
    room = load_room(_read_json(args.room))
    brief = room.brief()
    if args.markdown:
        print(brief_markdown(brief))
    else:
        _print_json(brief)
    return 0


def _simulate(args: argparse.Namespace) -> int:
    room = simulate()
    if args.export is not None:
        args.export.write_text(
            json.dumps(room.export(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
    brief = room.brief()
    if args.json:
        _print_json(brief)
    else:
        print(brief_markdown(brief))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``pxp`` command line on ``argv`` ; return the exit status (docs/cli.md)."""
    return run(lambda: _main(argv), prog="pxp")


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 0
    try:
        code: int = handler(args)
    except PxpError as exc:
        index = getattr(exc, "index", None)
        where = "" if index is None else f" (entry index {index})"
        print(f"error: {exc}{where}", file=sys.stderr)
        return 1
    return code
