"""The HTTP bridge of SPEC.md section 2.4 as an ASGI application.

``POST <endpoint>`` with one request frame answers ``200 application/x-ndjson``: the
``EVENT`` frames, then the final reply; Parley errors are ``200`` too. ``GET <endpoint>``
and ``GET /.well-known/parley`` answer the ``BRIEF`` to a default ``HELLO`` as one JSON
object. A body over 1 MiB is refused from its ``Content-Length`` or while it streams in,
without buffering it; a malformed body is a ``bad_frame`` reply; a client that disconnects
mid-request is dropped quietly. No request can take the server down. Serve it with any
ASGI server (``uvicorn`` from the ``http`` extra: :func:`serve_http`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from ._frames import MAX_FRAME, error_reply
from ._service import Service
from ._transport_tcp import MAX_CONNECTIONS, MAX_PER_PEER, _encoded

__all__ = ["WELL_KNOWN", "asgi_app", "serve_http"]

WELL_KNOWN = "/.well-known/parley"
"""The discovery path (SPEC.md section 2.4)."""

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def _too_large() -> bytes:
    message = f"the request body is over the frame limit of {MAX_FRAME} bytes"
    return _encoded(error_reply("h0", None, "bad_frame", message, reason="too_large"))


BODY_TIMEOUT = 30.0
"""**Ours:** seconds a client may take to send a request body (a slowloris body is
answered ``408`` and dropped)."""


def asgi_app(
    service: Service, *, endpoint: str = "/", body_timeout: float | None = BODY_TIMEOUT
) -> ASGIApp:
    """Return the ASGI application bridging HTTP to ``service`` at path ``endpoint``."""

    async def respond(send: Send, status: int, kind: bytes, body: bytes) -> None:
        with contextlib.suppress(Exception):
            await send(
                {
                    "type": "http.response.start",
                    "status": status,
                    "headers": [
                        (b"content-type", kind),
                        (b"content-length", str(len(body)).encode()),
                        (b"cache-control", b"no-store"),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body})

    async def lifespan(receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def read_body(scope: Scope, receive: Receive) -> bytes | None:
        """The body, ``b""`` when too large, ``None`` when the client went away."""
        for name, value in scope.get("headers", []):
            if name.lower() == b"content-length":
                try:
                    if int(value) > MAX_FRAME:
                        return b""
                except ValueError:
                    return b""
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > MAX_FRAME:
                return b""
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    async def answer(send: Send, data: bytes) -> None:
        """Run the request; stream EVENTs as they come, then the final reply."""
        loop = asyncio.get_running_loop()
        events: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

        def emit(frame: dict[str, Any]) -> None:  # from the worker thread
            loop.call_soon_threadsafe(events.put_nowait, frame)

        work = asyncio.ensure_future(asyncio.to_thread(service.handle, data, emit=emit))
        streaming = False
        while True:
            getter = asyncio.ensure_future(events.get())
            done, _ = await asyncio.wait({getter, work}, return_when=asyncio.FIRST_COMPLETED)
            if getter not in done:
                getter.cancel()
                break
            if not streaming:
                streaming = True
                await send(
                    {
                        "type": "http.response.start",
                        "status": 200,
                        "headers": [
                            (b"content-type", b"application/x-ndjson"),
                            (b"cache-control", b"no-store"),
                        ],
                    }
                )
            await send(
                {"type": "http.response.body", "body": _encoded(getter.result()), "more_body": True}
            )
        rest = []
        while not events.empty():
            rest.append(events.get_nowait())
        out = b"".join(_encoded(frame) for frame in [*rest, *work.result()])
        if streaming:
            await send({"type": "http.response.body", "body": out})
        else:
            await respond(send, 200, b"application/x-ndjson", out)

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        try:
            method, path = scope.get("method", ""), scope.get("path", "")
            if method == "GET" and path in (endpoint, WELL_KNOWN):
                hello = {"parley": 1, "id": "well-known", "verb": "HELLO"}
                brief = await asyncio.to_thread(service.handle, hello)
                body = json.dumps(brief[-1], ensure_ascii=False, separators=(",", ":"))
                await respond(send, 200, b"application/json", body.encode())
            elif method == "POST" and path == endpoint:
                try:
                    data = await asyncio.wait_for(read_body(scope, receive), body_timeout)
                except TimeoutError:
                    await respond(send, 408, b"text/plain", b"the request body came too slowly\n")
                    return
                if data is None:
                    return
                if not data:
                    await respond(send, 200, b"application/x-ndjson", _too_large())
                    return
                await answer(send, data)
            elif path in (endpoint, WELL_KNOWN):
                await respond(send, 405, b"text/plain", b"use GET or POST\n")
            else:
                await respond(send, 404, b"text/plain", b"not a Parley endpoint\n")
        except Exception:  # never let a request take the server down
            await respond(send, 500, b"text/plain", b"internal error\n")

    return app


HEADER_TIMEOUT = 10.0
"""**Ours:** seconds an HTTP connection may take to send a request line and headers, from
when it opened or, on a kept-alive connection, from the first byte of the next request (a
header trickled a byte at a time is closed)."""


def _guarded_protocol(
    base: type[Any], *, max_connections: int, max_per_peer: int, header_timeout: float
) -> type[Any]:
    """uvicorn's h11 protocol with the limits of the TCP transport (see ``serve_tcp``).

    A peer address holding ``max_per_peer`` connections has further ones closed at once;
    a connection that has not sent a complete request head ``header_timeout`` seconds
    after it opened is closed; when ``max_connections`` are open, a new one closes the
    oldest connection with no request in flight (or is closed itself when all are busy).
    """

    class Guarded(base):  # type: ignore[misc]
        def connection_made(self, transport: asyncio.Transport) -> None:
            super().connection_made(transport)
            self._parley_last = self.loop.time()
            self._parley_head: asyncio.TimerHandle | None = None
            self._parley_arm()
            peer = self.client[0] if self.client else None
            same = [c for c in self.connections if c.client and c.client[0] == peer]
            if peer is not None and len(same) > max_per_peer:
                transport.abort()
                return
            if len(self.connections) > max_connections:
                idle = [c for c in self.connections if c is not self and c._parley_idle()]
                if not idle:
                    transport.abort()
                    return
                oldest = min(idle, key=lambda c: c._parley_last)
                oldest.transport.abort()

        def _parley_idle(self) -> bool:
            return bool(self.cycle is None or self.cycle.response_complete)

        def _parley_arm(self) -> None:
            # a request head is awaited: it must be complete within header_timeout, on
            # the first request and on every later one of a kept-alive connection (F5)
            self._parley_waiting = self.cycle
            self._parley_head = self.loop.call_later(header_timeout, self._parley_slow_head)

        def _parley_slow_head(self) -> None:
            if self.cycle is self._parley_waiting and not self.transport.is_closing():
                self.transport.abort()

        def data_received(self, data: bytes) -> None:
            self._parley_last = self.loop.time()
            if self._parley_head is None and self._parley_idle():  # a next request begins
                self._parley_arm()
            super().data_received(data)
            if self._parley_head is not None and self.cycle is not self._parley_waiting:
                self._parley_head.cancel()  # its head is complete
                self._parley_head = None

        def connection_lost(self, exc: Exception | None) -> None:
            if self._parley_head is not None:
                self._parley_head.cancel()
            super().connection_lost(exc)

    return Guarded


async def serve_http(
    service: Service,
    host: str = "127.0.0.1",
    port: int = 8080,
    *,
    endpoint: str = "/",
    ssl_certfile: str | None = None,
    ssl_keyfile: str | None = None,
    body_timeout: float | None = BODY_TIMEOUT,
    max_connections: int = MAX_CONNECTIONS,
    max_per_peer: int = MAX_PER_PEER,
    header_timeout: float = HEADER_TIMEOUT,
) -> Any:
    """Start uvicorn serving the bridge in the background; return the started server.

    Needs the ``http`` extra (``uvicorn``). The bound port is
    ``server.servers[0].sockets[0].getsockname()[1]``; stop with ``server.should_exit =
    True`` and await the returned server's ``task`` attribute. Connections are limited as
    by :func:`~parley.net.serve_tcp`: ``max_per_peer`` per address, a request head within
    ``header_timeout`` seconds, and a full server closes its oldest idle connection.
    """
    import uvicorn
    from uvicorn.protocols.http.h11_impl import H11Protocol

    protocol = _guarded_protocol(
        H11Protocol,
        max_connections=max_connections,
        max_per_peer=max_per_peer,
        header_timeout=header_timeout,
    )
    config = uvicorn.Config(
        asgi_app(service, endpoint=endpoint, body_timeout=body_timeout),
        host=host,
        port=port,
        log_level="warning",
        lifespan="on",
        access_log=False,
        http=protocol,  # h11 with bounded header size (below) and the limits above
        h11_max_incomplete_event_size=64 * 1024,
        limit_concurrency=max_connections + 1,  # the protocol keeps within max_connections
        backlog=1024,
        ssl_certfile=ssl_certfile,
        ssl_keyfile=ssl_keyfile,
        timeout_graceful_shutdown=5,  # a stop waits 5 s for open requests, then closes them
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
            raise RuntimeError("uvicorn stopped before it started")
        await asyncio.sleep(0.01)
    server.task = task  # type: ignore[attr-defined]
    return server
