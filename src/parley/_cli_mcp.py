"""``parley mcp``: run the MCP bridge (needs the ``mcp`` extra; ``--http`` also ``http``)."""

from __future__ import annotations

import argparse
import asyncio
import ssl
import sys
from typing import Any

from .errors import ParleyError

__all__ = ["register"]


def _http_address(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep:
        host, port = "127.0.0.1", value
    host = host.strip("[]") or "127.0.0.1"
    if not (port.isascii() and port.isdigit() and int(port) < 65536):
        raise argparse.ArgumentTypeError(f"not a [HOST:]PORT: {value!r}")
    return host, int(port)


def _mcp(args: argparse.Namespace) -> int:
    try:
        from ._mcp_bridge import run_http, run_stdio
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise ParleyError(
            "bad_config",
            f"parley mcp needs the extra principal-protocols[mcp] ({exc.name} is missing)",
            reason="extra_missing",
        ) from None
    from ._bridge import Bridge
    from ._keystore import AgentKeyStore

    store = AgentKeyStore()
    context = None
    if args.cafile is not None:
        context = ssl.create_default_context(cafile=args.cafile)
    bridge = Bridge(
        args.urls,
        key=store.key(args.key),
        home=store.home,
        principal=args.principal,
        budget=args.budget,
        timeout=args.timeout,
        ssl=context,
        warn=lambda text: print(f"parley mcp: warning: {text}", file=sys.stderr, flush=True),
    )
    if args.http is None:
        asyncio.run(run_stdio(bridge, elicit=not args.no_elicit))
    else:
        # over HTTP the answer to a question is whatever the caller sends with the token:
        # consents are left to `parley approve` unless --http-consent says otherwise
        elicit = args.http_consent and not args.no_elicit
        asyncio.run(run_http(bridge, *args.http, elicit=elicit))
    return 0


def register(sub: Any) -> None:
    """Add the ``mcp`` subcommand to the ``parley`` subparsers ``sub``."""
    p = sub.add_parser(
        "mcp",
        help="serve Parley services to an MCP client (stdio, or --http on loopback)",
        description="Expose Parley services as MCP tools whose results are Lens text. The "
        "agent key comes from PARLEY_HOME, with the grants saved in PARLEY_HOME/grants; a "
        "consent the user approves in the MCP client is signed with the principal key of "
        "PARLEY_PRINCIPAL_HOME.",
    )
    p.add_argument(
        "urls",
        nargs="+",
        metavar="[ID=]URL",
        help="parley://, parleys://, stdio:, http(s)://; ID= pins the id its BRIEF must announce",
    )
    p.add_argument("--key", default="agent", help="agent key name (default: agent)")
    p.add_argument("--principal", default="principal", help="principal key name for consents")
    p.add_argument("--budget", type=int, default=1500, help="token budget per reply (1500)")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for a reply")
    p.add_argument(
        "--no-elicit",
        action="store_true",
        help="never ask or sign through the MCP client; consents only by 'parley approve'",
    )
    p.add_argument(
        "--http-consent",
        action="store_true",
        help="with --http, also ask and sign consents through the client (off by default)",
    )
    p.add_argument("--cafile", help="CA certificates for parleys:// and https:// services")
    p.add_argument(
        "--http",
        type=_http_address,
        metavar="[HOST:]PORT",
        help="serve streamable HTTP at http://HOST:PORT/mcp (loopback only) instead of stdio",
    )
    p.set_defaults(handler=_mcp)
