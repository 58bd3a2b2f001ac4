"""One entry point per side for every transport of SPEC.md section 2.3."""

from __future__ import annotations

import asyncio
import ssl as _ssl
from typing import Any

from ._agent import Agent, Client
from ._http import serve_http
from ._http_client import connect_http, split_http_url
from ._service import Service
from ._transport_stdio import connect_stdio
from ._transport_tcp import (
    RECONNECT_ATTEMPTS,
    RECONNECT_BACKOFF,
    connect_stream,
    parse_url,
    serve_tcp,
)
from .errors import ParleyError

__all__ = ["connect", "serve", "serve_forever"]


async def connect(
    url: str,
    agent: Agent,
    *,
    ssl: _ssl.SSLContext | None = None,
    reconnect: bool = False,
    attempts: int = RECONNECT_ATTEMPTS,
    backoff: float = RECONNECT_BACKOFF,
) -> Client:
    """Connect ``agent`` to a service by URL and return an async :class:`Client`.

    ``parley://host[:port]`` (TCP, 7447), ``parleys://host[:port]`` (TLS, 7448; ``ssl`` is
    the client context, default verifying), ``stdio:<command line>`` (a child process),
    ``http://…`` / ``https://…`` (the HTTP bridge, a connection per request). For the
    stream URLs, ``reconnect=True`` dials again after the server closed the connection
    (``attempts`` tries, exponential ``backoff`` seconds); see :func:`connect_stream`.
    A URL that is not a string is ``bad_config``, an ``agent`` that is not an
    :class:`parley.Agent` ``bad_argument`` (both usage errors).
    """
    _check_url(url)
    if not isinstance(agent, Agent):
        raise ParleyError("bad_argument", "connect() takes a parley.Agent", reason="bad_argument")
    if url.startswith(("parley://", "parleys://")):
        return await connect_stream(
            url, agent, ssl=ssl, reconnect=reconnect, attempts=attempts, backoff=backoff
        )
    if url.startswith("stdio:"):
        return await connect_stdio(url, agent)
    if url.startswith(("http://", "https://")):
        return await connect_http(url, agent, ssl=ssl)
    raise ParleyError("bad_config", f"unknown Parley URL form: {url[:80]!r}", reason="bad_url")


async def serve(
    url: str,
    service: Service,
    *,
    ssl: _ssl.SSLContext | None = None,
    certfile: str | None = None,
    keyfile: str | None = None,
) -> Any:
    """Start serving ``service`` at a ``parley://``, ``parleys://`` or ``http(s)://`` URL.

    ``parleys`` needs an ``ssl`` server context or ``certfile``/``keyfile``; ``https``
    needs ``certfile``/``keyfile``. Returns the started server (an
    :class:`asyncio.Server`, or uvicorn's server for HTTP). A URL that is not a string is
    ``bad_config``, a ``service`` that is not a :class:`parley.Service` ``bad_argument``.
    """
    _check_url(url)
    if not isinstance(service, Service):
        raise ParleyError("bad_argument", "serve() takes a parley.Service", reason="bad_argument")
    if url.startswith(("parley://", "parleys://")):
        scheme, host, port = parse_url(url)
        context = None
        if scheme == "parleys":
            context = ssl
            if context is None:
                if certfile is None:
                    raise ParleyError(
                        "bad_config", "parleys:// needs a certificate", reason="no_cert"
                    )
                context = _ssl.create_default_context(_ssl.Purpose.CLIENT_AUTH)
                context.load_cert_chain(certfile, keyfile)
        return await serve_tcp(service, host, port, ssl=context)
    if url.startswith(("http://", "https://")):
        parts = split_http_url(url)
        default = 443 if parts.scheme == "https" else 80
        return await serve_http(
            service,
            parts.hostname or "127.0.0.1",
            default if parts.port is None else parts.port,
            endpoint=parts.path or "/",
            ssl_certfile=certfile if parts.scheme == "https" else None,
            ssl_keyfile=keyfile if parts.scheme == "https" else None,
        )
    raise ParleyError("bad_config", f"cannot serve at {url[:80]!r}", reason="bad_url")


def _check_url(url: object) -> None:
    if not isinstance(url, str):
        raise ParleyError("bad_config", "a Parley URL is a string", reason="bad_url")


async def serve_forever(url: str, service: Service, **options: Any) -> None:
    """Serve ``service`` at ``url`` until cancelled (see :func:`serve`)."""
    server = await serve(url, service, **options)
    if isinstance(server, asyncio.Server):
        async with server:
            await server.serve_forever()
    else:
        await server.task
