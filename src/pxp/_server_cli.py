"""``pxp serve``: configure and run the MCP room server from the command line."""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from _ppcli.rules import read_input

from .errors import PxpError

if TYPE_CHECKING:
    from ._mcp_server import ServerConfig
    from ._server_rooms import RoomService

__all__ = ["import_rooms", "read_export", "run_serve", "server_config"]

_LOCAL = {"127.0.0.1", "localhost", "::1"}


def _keys(args: argparse.Namespace) -> tuple[str, ...]:
    keys: list[str] = []
    if args.agent_keys_file is not None:
        try:
            text = read_input(args.agent_keys_file).decode("utf-8")
        except OSError as exc:
            raise PxpError(
                "file_unreadable", f"cannot read {args.agent_keys_file}: {exc.strerror}"
            ) from None
        except UnicodeDecodeError:
            raise PxpError("file_unreadable", f"{args.agent_keys_file} is not UTF-8 text") from None
        keys.extend(line.strip() for line in text.splitlines() if line.strip())
        if not keys:
            raise PxpError("config_invalid", f"{args.agent_keys_file} holds no agent key")
    env = os.environ.get("PXP_AGENT_KEYS", "")
    keys.extend(k.strip() for k in env.split(",") if k.strip())
    return tuple(keys)


def server_config(args: argparse.Namespace) -> ServerConfig:
    """Return the :class:`~pxp.server.ServerConfig` the ``serve`` arguments describe."""
    from ._mcp_server import ServerConfig

    host = args.host
    shown = f"[{host}]" if ":" in host else host
    public = args.public_url or f"http://{shown}:{args.port}"
    hosts = list(args.allowed_host)
    origins = list(args.allowed_origin)
    if not hosts:
        hosts = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
        if host not in _LOCAL:
            hosts.append(f"{shown}:{args.port}")
        if args.public_url:
            # Behind a reverse proxy the Host header is the public name, not the bind address.
            netloc = urlsplit(args.public_url).netloc
            if netloc and netloc not in hosts:
                hosts.append(netloc)
    if not origins:
        origins = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]
        if args.public_url:
            origins.append(args.public_url.rstrip("/"))
    return ServerConfig(
        public_url=public.rstrip("/"),
        allowed_hosts=tuple(hosts),
        allowed_origins=tuple(origins),
        agent_keys=_keys(args),
        max_waiters_per_client=getattr(args, "max_waiters_per_client", 16),
        poll_seconds=getattr(args, "poll_seconds", 0.5),
    )


def read_export(path: Path) -> list[Any]:
    """The room exports a ``--import`` file holds (one room, or a store file's rooms)."""
    try:
        data = json.loads(read_input(path).decode("utf-8"))
    except OSError as exc:
        raise PxpError("file_unreadable", f"cannot read {path}: {exc.strerror}") from None
    except (ValueError, RecursionError):
        raise PxpError("import_invalid", f"{path} is not JSON") from None
    rooms = data.get("rooms", [data]) if isinstance(data, dict) else data
    if isinstance(rooms, dict):
        rooms = list(rooms.values())
    if not isinstance(rooms, list):
        raise PxpError("import_invalid", f"{path} holds no room export")
    return rooms


def import_rooms(
    service: RoomService, path: Path, public_url: str, *, rooms: list[Any] | None = None
) -> list[str]:
    """Serve every room of a reference export file; print each room's fresh links once.

    ``path`` holds one room export, or a store file (``{"rooms": {id: room}}`` or a list).
    ``rooms``: the exports already read from ``path`` (:func:`read_export`), so a source
    that can be read once (standard input, a pipe) is. The links go to standard error, for
    the operator to hand to the people in each seat; they are never stored in clear.
    Returns the imported room ids.
    """
    from ._server_links import LinkKind

    if rooms is None:
        rooms = read_export(path)
    done: list[str] = []
    for room in rooms:
        try:
            made = service.import_room(room)
        except PxpError as exc:
            if exc.code != "room_exists":
                raise
            print(f"pxp: {exc.message}; its links are not shown again", file=sys.stderr)
            continue
        done.append(made.room_id)
        print(f"pxp: imported room {made.room_id}; its links (shown once):", file=sys.stderr)
        kinds: tuple[LinkKind, ...] = ("seat", "principal")
        for seat in ("A", "B"):
            for kind in kinds:
                print(f"  {seat} {kind:9} {made.link(public_url, seat, kind)}", file=sys.stderr)
    return done


def run_serve(args: argparse.Namespace, *, sock: socket.socket | None = None) -> int:
    """Run ``pxp serve`` until interrupted; return the exit status.

    ``sock``: the socket ``pxp serve`` bound for ``args.host``/``args.port`` before
    anything else, which the server listens on.
    """
    try:
        from .server import serve, service_for_url
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise PxpError(
            "extra_missing",
            f"pxp serve needs the extras principal-protocols[mcp,http] ({exc.name} is missing)",
        ) from None
    config = server_config(args)
    days = getattr(args, "link_days", 30.0)
    if not (isinstance(days, float | int) and 0 <= days <= 36500):
        raise PxpError("config_invalid", "--link-days must lie between 0 and 36500")
    # each --import source is read once (standard input and a pipe can be read only once;
    # a file replaced meanwhile is not imported unchecked: review cli #2), then every room is
    # imported into a throwaway in-memory service first: an export that cannot be read, or
    # a room that would be refused, is refused before the room store is created (the same
    # checks as the real import, run once more)
    exports = [(path, read_export(path)) for path in getattr(args, "imports", [])]
    if exports:
        rehearsal = service_for_url(":memory:", max_turns=args.max_turns)
        for _, rooms in exports:
            for room in rooms:
                try:
                    rehearsal.import_room(room)
                except PxpError as exc:
                    if exc.code != "room_exists":  # a repeated room is skipped, not refused
                        raise
    url = getattr(args, "state", None) or f"sqlite:{args.db}"
    service = service_for_url(
        url,
        max_turns=args.max_turns,
        confirm_on_web=args.confirm_cards_on_web,
        link_ttl=timedelta(days=days) if days else None,
    )
    for path, rooms in exports:
        import_rooms(service, path, config.public_url, rooms=rooms)
    sign_in = "on" if config.agent_keys else "off"
    from ppstore import parse_url

    print(
        f"pxp: MCP endpoint {config.public_url}/mcp (rooms in {parse_url(url)}; sign-in {sign_in})",
        file=sys.stderr,
    )
    try:
        serve(service, config, host=args.host, port=args.port, sock=sock)
    except SystemExit as exc:  # uvicorn's own exit: the server could not start
        if exc.code in (None, 0):
            raise
        raise PxpError(
            "listen_failed",
            f"the server stopped before it listened on {args.host[:80]}:{args.port}"
            " (the line above says why)",
        ) from None
    return 0
