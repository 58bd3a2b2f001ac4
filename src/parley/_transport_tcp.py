"""NDJSON over a byte stream: TCP (``parley://``, port 7447) and TLS (``parleys://``, 7448).

The server side reads with a :class:`~parley._frames.LineBuffer` (an oversized line is
answered ``bad_frame`` and skipped, never buffered), runs each request through
:meth:`Service.handle` in a worker thread so replies to concurrent requests may overtake
each other (they are correlated by ``re``), and writes each request's frames in order
under one lock. A peer that sends garbage, stops reading or disconnects mid-request only
ends its own connection. The client side feeds a :class:`~parley._agent.Client`.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl as _ssl
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ._agent import Agent, Client
from ._frames import MAX_FRAME, LineBuffer, encode_frame, error_reply, reply
from ._service import Service
from .errors import ParleyError

__all__ = [
    "DEFAULT_PORTS",
    "connect_stream",
    "parse_url",
    "serve_connection",
    "serve_tcp",
]

DEFAULT_PORTS = {"parley": 7447, "parleys": 7448}
"""Default ports of the stream URL schemes (SPEC.md section 2.3)."""

MAX_INFLIGHT = 64
"""**Ours:** concurrent requests handled per connection; further lines wait."""

IDLE_TIMEOUT = 3600.0
"""**Ours:** seconds a connection may sit with nothing in flight and no partial frame
before it is closed (an agent between turns keeps its connection; a forgotten one goes)."""

FRAME_TIMEOUT = 60.0
"""**Ours:** seconds from the first byte of a frame to its newline while no request of the
connection is running (a slowloris trickling a frame is cut off), and the longest wait
for a peer that stops reading its replies."""

MAX_CONNECTIONS = 1024
"""**Ours:** concurrent connections per server; when full, a new connection closes the
oldest one with no request in flight (or is closed itself when every one is busy)."""

MAX_PER_PEER = 64
"""**Ours:** concurrent connections from one peer address; more are closed at once."""

FIRST_FRAME_TIMEOUT = 30.0
"""**Ours:** seconds a new connection may take to send its first complete frame."""

HANDSHAKE_TIMEOUT = 10.0
"""**Ours:** seconds a TLS handshake may take (``parleys://``)."""


@dataclass(eq=False)
class Activity:
    """What the server knows of one connection: when it was last active, whether busy.

    :func:`serve_connection` keeps it up to date; a full :func:`serve_tcp` server closes
    the connection with the oldest ``last`` among those not ``busy`` (no request in
    flight) to make room.
    """

    peer: str = ""
    last: float = 0.0
    busy: bool = False
    writer: asyncio.StreamWriter | None = None


_CHUNK = 64 * 1024


def parse_url(url: str) -> tuple[str, str, int]:
    """Split ``parley://host[:port]`` or ``parleys://host[:port]`` into scheme, host, port."""
    try:
        parts = urlsplit(url)
        hostname = parts.hostname
        port = parts.port
    except ValueError:  # "parley://[::1": an unclosed IPv6 literal, a port out of range
        raise ParleyError(
            "bad_config", f"the URL {url[:80]!r} is malformed", reason="bad_url"
        ) from None
    if parts.scheme not in DEFAULT_PORTS or not hostname:
        raise ParleyError(
            "bad_config", f"not a parley:// or parleys:// URL: {url[:80]!r}", reason="bad_url"
        )
    return parts.scheme, hostname, DEFAULT_PORTS[parts.scheme] if port is None else port


def _encoded(frame: dict[str, Any]) -> bytes:
    try:
        return encode_frame(frame)
    except ParleyError as exc:
        if frame.get("kind") == "EVENT":  # an EVENT never ends its request early
            message = "the service sent progress that could not be encoded"
            return encode_frame(
                reply(str(frame.get("id", "s0")), frame.get("re"), "EVENT", message=message)
            )
        fallback = error_reply(
            str(frame.get("id", "s0")), frame.get("re"), exc.code, exc.message, reason=exc.reason
        )
        try:
            return encode_frame(fallback)
        except ParleyError:  # even the id or re cannot be sent: an error naming nothing
            return encode_frame(error_reply("s0", None, exc.code, exc.message, reason=exc.reason))


async def serve_connection(
    handle: Callable[..., list[dict[str, Any]]],
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    *,
    limit: int = MAX_FRAME,
    idle_timeout: float | None = IDLE_TIMEOUT,
    frame_timeout: float = FRAME_TIMEOUT,
    first_frame_timeout: float | None = None,
    activity: Activity | None = None,
) -> None:
    """Serve one stream connection with ``handle`` (usually ``Service.handle``).

    ``handle(line, emit=…)`` returns the final reply; EVENTs go to ``emit`` and are
    written as soon as they are sent. While none of its requests is running, the
    connection is closed when a frame takes longer than ``frame_timeout`` seconds from its
    first byte to its newline, or when it sits empty for ``idle_timeout`` seconds
    (``None``: forever); a peer that stops reading replies for ``frame_timeout`` is dropped.
    A connection that sends no complete frame within ``first_frame_timeout`` seconds
    (``None``: no such limit) is closed. ``activity`` is kept up to date for the server.
    """
    lock = asyncio.Lock()
    lines = LineBuffer(limit=limit)
    slots = asyncio.Semaphore(MAX_INFLIGHT)
    tasks: set[asyncio.Task[None]] = set()
    refused = 0

    async def write(frames: list[dict[str, Any]]) -> None:
        async with lock:
            for frame in frames:
                send_now(_encoded(frame))
            try:
                await asyncio.wait_for(writer.drain(), frame_timeout)
            except TimeoutError:  # the peer stopped reading: drop it, not the server
                writer.transport.abort()
            except (ConnectionError, OSError):
                pass

    loop = asyncio.get_running_loop()
    partial_since: float | None = None  # when the frame now being received began
    last_seen = opened = loop.time()
    framed = False  # a complete frame has arrived
    state = activity if activity is not None else Activity()
    state.last = last_seen

    def send_now(data: bytes) -> None:
        if not writer.is_closing():
            writer.write(data)

    def emit(frame: dict[str, Any]) -> None:  # from the worker thread: an EVENT, at once
        loop.call_soon_threadsafe(send_now, _encoded(frame))

    async def run(line: bytes) -> None:
        nonlocal last_seen
        try:
            replies = await asyncio.to_thread(handle, line, emit=emit)
            await write(replies)
        except (ConnectionError, OSError):
            pass
        finally:
            last_seen = state.last = loop.time()  # idle from the last reply
            state.busy = len(tasks) > 1
            slots.release()

    def deadline() -> float | None:
        if tasks:  # the peer is waiting for us: only wake up to look again later
            return loop.time() + frame_timeout
        limits = []
        if partial_since is not None:
            limits.append(partial_since + frame_timeout)
        if not framed and first_frame_timeout is not None:
            limits.append(opened + first_frame_timeout)
        if idle_timeout is not None:
            limits.append(last_seen + idle_timeout)
        return min(limits) if limits else None

    reading: asyncio.Future[bytes] | None = None
    ended: asyncio.Future[None] = loop.create_future()  # resolved when a request ends

    def request_ended(_: object) -> None:
        if not ended.done():
            ended.set_result(None)

    try:
        while True:
            if reading is None:
                reading = asyncio.ensure_future(reader.read(_CHUNK))
            if ended.done():
                ended = loop.create_future()
            until = deadline()
            # wake on data, on a request ending (the connection may turn idle, with its
            # own deadline), or at the deadline; the pending read is never cancelled
            waiting: set[asyncio.Future[Any]] = {reading, ended} if tasks else {reading}
            done, _ = await asyncio.wait(
                waiting,
                timeout=None if until is None else max(0.0, until - loop.time()),
                return_when=asyncio.FIRST_COMPLETED,
            )
            if reading not in done:
                until = deadline()
                if tasks or done or until is None or until > loop.time():
                    continue
                break  # idle too long, or trickling a frame that never ends
            data = reading.result()
            reading = None
            if not data:
                if lines.rest() is None:  # else: a last frame ended by EOF, not newline
                    break
                data = b"\n"
            last_seen = state.last = loop.time()
            completed = lines.feed(data)
            framed = framed or bool(completed)
            if not lines.pending:
                partial_since = None
            elif completed or partial_since is None:
                partial_since = last_seen
            for line in completed:
                if line is None:
                    refused += 1
                    message = f"the frame is over the limit of {limit} bytes"
                    await write(
                        [error_reply(f"x{refused}", None, "bad_frame", message, reason="too_large")]
                    )
                    continue
                await slots.acquire()
                state.busy = True
                task = asyncio.create_task(run(line))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
                task.add_done_callback(request_ended)  # after the discard: idle is seen
    except (ConnectionError, OSError, _ssl.SSLError, asyncio.IncompleteReadError):
        pass
    finally:
        if reading is not None:
            reading.cancel()
            with contextlib.suppress(BaseException):
                await reading
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        with contextlib.suppress(Exception):
            writer.close()
            await writer.wait_closed()


async def serve_tcp(
    service: Service,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORTS["parley"],
    *,
    ssl: _ssl.SSLContext | None = None,
    idle_timeout: float | None = IDLE_TIMEOUT,
    frame_timeout: float = FRAME_TIMEOUT,
    first_frame_timeout: float | None = FIRST_FRAME_TIMEOUT,
    max_connections: int = MAX_CONNECTIONS,
    max_per_peer: int = MAX_PER_PEER,
    handshake_timeout: float = HANDSHAKE_TIMEOUT,
) -> asyncio.Server:
    """Start serving ``service`` over TCP (or TLS with an ``ssl`` server context).

    Returns the started :class:`asyncio.Server`; ``port=0`` picks a free port (read it
    from ``server.sockets[0].getsockname()[1]``). The timeouts are passed to
    :func:`serve_connection` (TLS handshakes get ``handshake_timeout``). A peer address
    holding ``max_per_peer`` connections has further ones closed at once; when
    ``max_connections`` are open, a new connection closes the oldest connection with no
    request in flight, and is itself closed only when every connection is busy.
    """
    connections: set[Activity] = set()
    per_peer: dict[str, int] = {}

    def forget(state: Activity) -> None:
        if state in connections:
            connections.discard(state)
            per_peer[state.peer] -= 1
            if not per_peer[state.peer]:
                del per_peer[state.peer]

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peername = writer.get_extra_info("peername")
        peer = str(peername[0]) if isinstance(peername, tuple) and peername else "?"
        if per_peer.get(peer, 0) >= max_per_peer:
            writer.transport.abort()
            return
        if len(connections) >= max_connections:
            idle = [c for c in connections if not c.busy]
            if not idle:
                writer.transport.abort()
                return
            oldest = min(idle, key=lambda c: c.last)
            forget(oldest)
            if oldest.writer is not None:
                oldest.writer.transport.abort()
        state = Activity(peer, asyncio.get_running_loop().time(), False, writer)
        connections.add(state)
        per_peer[peer] = per_peer.get(peer, 0) + 1
        try:
            # A connection still open when the loop shuts down ends quietly.
            with contextlib.suppress(asyncio.CancelledError):
                await serve_connection(
                    service.handle,
                    reader,
                    writer,
                    idle_timeout=idle_timeout,
                    frame_timeout=frame_timeout,
                    first_frame_timeout=first_frame_timeout,
                    activity=state,
                )
        finally:
            forget(state)

    return await asyncio.start_server(
        on_connect,
        host,
        port,
        ssl=ssl,
        limit=_CHUNK,
        ssl_handshake_timeout=handshake_timeout if ssl is not None else None,
        backlog=1024,
    )


async def pump(reader: asyncio.StreamReader, client: Client, *, limit: int = MAX_FRAME) -> None:
    """Read reply lines from ``reader`` into ``client`` until the stream ends."""
    lines = LineBuffer(limit=limit)
    try:
        while True:
            data = await reader.read(_CHUNK)
            if not data:
                break
            for line in lines.feed(data):
                if line is not None:
                    client.deliver(line)
    except (ConnectionError, OSError, _ssl.SSLError):
        pass
    finally:
        client.lost()


def client_over(
    agent: Agent,
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    *,
    extra_close: Callable[[], Any] | None = None,
) -> Client:
    """Wrap a connected stream pair in a :class:`Client` with a background reader."""
    lock = asyncio.Lock()

    async def send(frame: dict[str, Any]) -> None:
        data = encode_frame(frame)
        async with lock:
            writer.write(data)
            await writer.drain()

    task: asyncio.Task[None] | None = None

    async def close() -> None:
        with contextlib.suppress(Exception):
            writer.close()
            await writer.wait_closed()
        if extra_close is not None:
            await extra_close()
        if task is not None:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task

    client = Client(agent, send, close=close)
    task = asyncio.create_task(pump(reader, client))
    return client


async def _open(
    scheme: str, host: str, port: int, ssl: _ssl.SSLContext | None
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    context = None
    if scheme == "parleys":
        context = ssl if ssl is not None else _ssl.create_default_context()
    try:
        return await asyncio.open_connection(host, port, ssl=context, limit=_CHUNK)
    except _ssl.SSLCertVerificationError as exc:
        raise ParleyError(
            "unavailable",
            f"TLS with {host}:{port} failed: the certificate was not accepted"
            f" ({exc.verify_message or exc.reason})",
            reason="tls",
        ) from None
    except _ssl.SSLError as exc:  # e.g. not TLS at all on that port
        raise ParleyError(
            "unavailable",
            f"TLS with {host}:{port} failed: {exc.reason or type(exc).__name__}",
            reason="tls",
        ) from None
    except OSError as exc:
        raise ParleyError(
            "unavailable",
            f"cannot connect to {host}:{port}: {type(exc).__name__}",
            reason="connect",
        ) from None


RECONNECT_ATTEMPTS = 6
"""**Ours:** dial attempts of a reconnecting client before a request fails ``unavailable``."""

RECONNECT_BACKOFF = 0.25
"""**Ours:** seconds before the second dial attempt; doubled each time, at most 10 s, with
up to 50% random jitter so many agents do not redial in step."""


async def connect_stream(
    url: str,
    agent: Agent,
    *,
    ssl: _ssl.SSLContext | None = None,
    reconnect: bool = False,
    attempts: int = RECONNECT_ATTEMPTS,
    backoff: float = RECONNECT_BACKOFF,
) -> Client:
    """Connect to ``parley://host[:port]`` or ``parleys://host[:port]``; return a client.

    ``parleys`` uses ``ssl`` or the default verifying client context. With ``reconnect``,
    a connection the server closed (idle timeout, restart) is dialled again when the next
    request is sent, up to ``attempts`` times with exponential ``backoff``; requests that
    were in flight when it closed still fail ``unavailable`` (they are never resent: a
    ``COMMIT`` retried by the caller is answered from the receipt, so that is safe to do
    deliberately).
    """
    scheme, host, port = parse_url(url)
    if not reconnect:
        reader, writer = await _open(scheme, host, port, ssl)
        return client_over(agent, reader, writer)
    return await _redialling(agent, scheme, host, port, ssl, max(1, attempts), backoff)


async def _redialling(
    agent: Agent,
    scheme: str,
    host: str,
    port: int,
    ssl: _ssl.SSLContext | None,
    attempts: int,
    backoff: float,
) -> Client:
    lock = asyncio.Lock()
    link: dict[str, Any] = {"writer": None, "task": None}

    async def dial() -> asyncio.StreamWriter:
        delay = backoff
        for attempt in range(attempts):
            try:
                reader, writer = await _open(scheme, host, port, ssl)
            except ParleyError:
                if attempt == attempts - 1:
                    raise
                jitter = 1 + agent.rand(1)[0] / 510  # up to +50%
                await asyncio.sleep(delay * jitter)
                delay = min(delay * 2, 10.0)
                continue

            async def read(reader: asyncio.StreamReader = reader) -> None:
                await pump(reader, client)

            link["task"] = asyncio.create_task(read())
            return writer
        raise ParleyError("unavailable", "cannot connect", reason="connect")  # pragma: no cover

    async def send(frame: dict[str, Any]) -> None:
        data = encode_frame(frame)
        async with lock:
            writer = link["writer"]
            task = link["task"]
            if writer is None or writer.is_closing() or task is None or task.done():
                if writer is not None:
                    writer.close()
                link["writer"] = writer = await dial()
            try:
                writer.write(data)
                await writer.drain()
            except (ConnectionError, OSError):
                raise ParleyError("unavailable", "the connection closed", reason="closed") from None

    async def close() -> None:
        writer, task = link["writer"], link["task"]
        if writer is not None:
            with contextlib.suppress(Exception):
                writer.close()
                await writer.wait_closed()
        if task is not None:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task

    client = Client(agent, send, close=close, reconnect=True)
    async with lock:
        link["writer"] = await dial()
    return client
