"""Command line of :mod:`pxp` (console script ``pxp``, also ``python -m pxp``).

Each subcommand is one function registered in :func:`build_parser`; every failure of the
library surfaces as ``error: <code>: <sentence>`` on standard error with exit status 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from ._brief import brief_markdown
from ._card import seal_card
from ._errors import PxpError
from ._export import load_room
from ._ledger import load_ledger
from ._simulate import simulate

__all__ = ["build_parser", "main"]


def _version() -> str:
    try:
        return metadata.version("principal-protocols")
    except metadata.PackageNotFoundError:  # pragma: no cover - only in a bare checkout
        return "0+checkout"


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser of the ``pxp`` command with every subcommand."""
    parser = argparse.ArgumentParser(
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
    serve.add_argument("--port", type=int, default=8765, help="port to bind (8765)")
    serve.add_argument("--db", type=Path, default=Path("pxp-rooms.sqlite"), help="SQLite file")
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
    serve.set_defaults(handler=_serve)
    return parser


def _serve(args: argparse.Namespace) -> int:
    from ._server_cli import run_serve

    return run_serve(args)


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
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
    """Run the ``pxp`` command line on ``argv`` ; return the exit status."""
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
