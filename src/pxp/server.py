"""PXP over MCP: the room server any MCP-capable agent can sit in (seed §8).

Needs the optional extras ``principal-protocols[mcp,http]`` (the official MCP Python SDK and
uvicorn), which is why it is a submodule of its own: ``import pxp`` stays light.

Embed the ASGI app::

    from pxp.server import RoomService, ServerConfig, create_app, sqlite_service

    service = sqlite_service("rooms.sqlite")
    app = create_app(service, ServerConfig(public_url="http://127.0.0.1:8765"))

or run ``pxp serve --db rooms.sqlite`` (see ``docs/guide/pxp-mcp.md``); replicas on one
PostgreSQL database: ``pxp serve --state postgresql://…`` (:func:`service_for_url`).
"""

from __future__ import annotations

import contextlib
import socket
import sys
from datetime import timedelta
from pathlib import Path

from ._mcp_server import SIGN_IN_REFUSAL, ServerConfig, create_app, create_mcp_server
from ._server_links import (
    INVITE_ONLY,
    LINK_EXPIRED,
    LINK_REVOKED,
    UNKNOWN_LINK,
    LinkStore,
    MemoryLinkStore,
    MintedLinks,
    SeatGrant,
    SqliteLinkStore,
    check_link,
    mint_links,
    parse_link,
)
from ._server_rooms import DEFAULT_LINK_TTL, JOIN_RETRY_WINDOW, MAX_AGENTS_PER_SEAT, RoomService
from ._server_tools import TOOL_SPECS, ToolSpec
from ._store import SqliteRoomStore
from .errors import PxpError

__all__ = [
    "INVITE_ONLY",
    "JOIN_RETRY_WINDOW",
    "LINK_EXPIRED",
    "LINK_REVOKED",
    "MAX_AGENTS_PER_SEAT",
    "SIGN_IN_REFUSAL",
    "TOOL_SPECS",
    "UNKNOWN_LINK",
    "LinkStore",
    "MemoryLinkStore",
    "MintedLinks",
    "RoomService",
    "SeatGrant",
    "ServerConfig",
    "SqliteLinkStore",
    "ToolSpec",
    "check_link",
    "create_app",
    "create_mcp_server",
    "mint_links",
    "parse_link",
    "serve",
    "service_for_url",
    "sqlite_service",
]

_SHUTDOWN_GRACE_SECONDS = 5  # how long a stop waits for open requests before closing them
_STARTUP_FAILURE = 3  # uvicorn's exit status for a server that could not start


def sqlite_service(
    path: str | Path,
    *,
    max_turns: int = 10,
    confirm_on_web: bool = False,
    link_ttl: timedelta | None = DEFAULT_LINK_TTL,
) -> RoomService:
    """Return a :class:`RoomService` whose rooms and link digests live in one SQLite file.

    Rooms, seats and ledgers survive a restart; only link digests are stored. Links expire
    ``link_ttl`` after they are issued (``None``: never).
    """
    return RoomService(
        SqliteRoomStore(path),
        SqliteLinkStore(path),
        max_turns=max_turns,
        confirm_on_web=confirm_on_web,
        link_ttl=link_ttl,
    )


def service_for_url(
    url: str,
    *,
    max_turns: int = 10,
    confirm_on_web: bool = False,
    link_ttl: timedelta | None = DEFAULT_LINK_TTL,
) -> RoomService:
    """Return a :class:`RoomService` on the store ``url`` names (issue 23).

    ``sqlite:PATH`` is :func:`sqlite_service`; ``postgresql://…`` keeps rooms, ledgers,
    seat tokens and link digests in one PostgreSQL database shared by server replicas
    (the ``postgres`` extra), whose writes wake each other's waiters (``LISTEN``);
    ``:memory:`` keeps them in this process only.
    """
    from ppstore import StoreError, parse_url

    from ._store import MemoryRoomStore, RoomStore

    try:
        found = parse_url(url)
    except StoreError as exc:
        raise PxpError("config_invalid", exc.message) from None
    if found.kind == "sqlite":
        return sqlite_service(
            found.path, max_turns=max_turns, confirm_on_web=confirm_on_web, link_ttl=link_ttl
        )
    if found.kind == "memory":
        rooms: RoomStore = MemoryRoomStore()
        links: LinkStore = MemoryLinkStore()
    else:
        from .postgres import PostgresLinkStore, PostgresRoomStore

        rooms, links = PostgresRoomStore(found.dsn), PostgresLinkStore(found.dsn)
    return RoomService(
        rooms, links, max_turns=max_turns, confirm_on_web=confirm_on_web, link_ttl=link_ttl
    )


def serve(
    service: RoomService,
    config: ServerConfig,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    sock: socket.socket | None = None,
) -> None:
    """Run the server with uvicorn until interrupted.

    uvicorn's access log stays off (paths carry links); the ``pxp.server`` logger has one
    line per request instead, with the links taken out (``pxp serve --log-level info``).
    ``sock``: a socket already bound (``_ppcli.rules.bind_listen``; ``pxp serve`` binds
    its port before it creates its room store, so no other program can take the port
    meanwhile); the server listens on it, and ``host`` and ``port`` only name it. A server
    that cannot start ends with :class:`SystemExit` (status 3), as ``uvicorn.run`` does.
    """
    import uvicorn

    from ._server_log import RequestLog

    server = uvicorn.Server(
        uvicorn.Config(
            RequestLog(create_app(service, config)),  # one line per request, links taken out
            host=host,
            port=port,
            access_log=False,
            log_level="warning",
            lifespan="on",
            # the peer address tells clients apart for the wait cap: never from a header
            proxy_headers=False,
            # a stop (SIGTERM, Ctrl-C) waits this long for open requests, then closes
            # them: a client holding half a request open cannot keep the server running
            timeout_graceful_shutdown=_SHUTDOWN_GRACE_SECONDS,
        )
    )
    # what uvicorn.run does (without its reload and worker modes), plus the bound socket
    with contextlib.suppress(KeyboardInterrupt):
        server.run(sockets=None if sock is None else [sock])
    if not server.started:
        sys.exit(_STARTUP_FAILURE)
