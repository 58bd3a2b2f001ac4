"""A small asyncio HTTP/1.1 client for the bridge (no third-party code).

One connection per request (``Connection: close``); the response may be sized by
``Content-Length``, chunked, or end at close. Bodies are capped at 64 MiB.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl as _ssl
from collections.abc import Callable
from typing import Any
from urllib.parse import SplitResult, urlsplit

from ._agent import Agent, Client
from ._frames import MAX_FRAME, LineBuffer, encode_frame, parse_frame
from ._http import WELL_KNOWN
from .errors import ParleyError

__all__ = ["connect_http", "discover", "http_request", "split_http_url"]

MAX_RESPONSE = 64 * 1024 * 1024

MAX_HEADERS = 100
"""**Ours:** response header lines the client reads before giving up."""


def _unavailable(message: str) -> ParleyError:
    return ParleyError("unavailable", message, reason="http")


def split_http_url(url: str) -> SplitResult:
    """``urlsplit`` of an ``http(s)://`` URL whose host and port can be read; ``bad_url``."""
    try:
        parts = urlsplit(url)
        ok = parts.scheme in ("http", "https") and bool(parts.hostname)
        parts.port  # noqa: B018 - raises ValueError for a port out of range
    except ValueError:  # "http://[::1": an unclosed IPv6 literal
        ok = False
    if not ok:
        raise ParleyError("bad_config", f"not an http(s) URL: {url[:80]!r}", reason="bad_url")
    return parts


async def http_request(
    url: str,
    method: str = "POST",
    body: bytes = b"",
    *,
    content_type: str = "application/json",
    ssl: _ssl.SSLContext | None = None,
    timeout: float = 30.0,
    on_chunk: Callable[[bytes], None] | None = None,
) -> tuple[int, dict[str, str], bytes]:
    """Send one HTTP/1.1 request; return ``(status, headers, body)``.

    With ``on_chunk``, every piece of a chunked body is passed on as it arrives (and the
    returned body is empty); other bodies are passed on once, whole.
    """
    parts = split_http_url(url)
    port = (443 if parts.scheme == "https" else 80) if parts.port is None else parts.port
    context = None
    if parts.scheme == "https":
        context = ssl if ssl is not None else _ssl.create_default_context()
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    host = parts.hostname if parts.port is None else f"{parts.hostname}:{parts.port}"
    head = (
        f"{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n"
        f"Accept: application/x-ndjson, application/json\r\n"
    )
    if method == "POST":
        head += f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
    try:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(parts.hostname, port, ssl=context), timeout
        )
    except _ssl.SSLCertVerificationError as exc:
        raise ParleyError(
            "unavailable",
            f"TLS with {host} failed: the certificate was not accepted"
            f" ({exc.verify_message or exc.reason})",
            reason="tls",
        ) from None
    except _ssl.SSLError as exc:
        raise ParleyError(
            "unavailable",
            f"TLS with {host} failed: {exc.reason or type(exc).__name__}",
            reason="tls",
        ) from None
    except (OSError, TimeoutError) as exc:
        raise _unavailable(f"cannot connect to {host}: {type(exc).__name__}") from None
    try:
        writer.write(head.encode("latin-1") + b"\r\n" + body)
        await writer.drain()
        return await asyncio.wait_for(_read_response(reader, on_chunk), timeout)
    except (OSError, TimeoutError, asyncio.IncompleteReadError, ValueError) as exc:
        raise _unavailable(f"the HTTP exchange failed: {type(exc).__name__}") from None
    finally:
        with contextlib.suppress(Exception):
            writer.close()
            await writer.wait_closed()


async def _read_response(
    reader: asyncio.StreamReader, on_chunk: Callable[[bytes], None] | None = None
) -> tuple[int, dict[str, str], bytes]:
    status_line = await reader.readline()
    fields = status_line.decode("latin-1").split(" ", 2)
    if len(fields) < 2 or not fields[0].startswith("HTTP/1."):
        raise ValueError("bad status line")
    status = int(fields[1])
    headers: dict[str, str] = {}
    for count in range(MAX_HEADERS + 1):
        line = await reader.readline()
        if line in (b"\r\n", b"\n", b""):
            break
        if count == MAX_HEADERS:
            raise ValueError("too many response headers")
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    if headers.get("transfer-encoding", "").lower() == "chunked":
        chunks, size = [], 0
        while True:
            length = int((await reader.readline()).split(b";")[0].strip(), 16)
            if length == 0:
                await reader.readline()
                break
            size += length
            if size > MAX_RESPONSE:
                raise ValueError("response too large")
            piece = await reader.readexactly(length)
            await reader.readexactly(2)
            if on_chunk is not None and status == 200:
                on_chunk(piece)
            else:
                chunks.append(piece)
        return status, headers, b"".join(chunks)
    if "content-length" in headers:
        length = int(headers["content-length"])
        if length > MAX_RESPONSE:
            raise ValueError("response too large")
        body = await reader.readexactly(length)
    else:
        body = await reader.read(MAX_RESPONSE + 1)
        if len(body) > MAX_RESPONSE:
            raise ValueError("response too large")
    if on_chunk is not None and status == 200:
        on_chunk(body)
        return status, headers, b""
    return status, headers, body


async def discover(url: str, *, ssl: _ssl.SSLContext | None = None) -> dict[str, Any]:
    """``GET /.well-known/parley`` of the URL's origin: the service's ``BRIEF`` frame."""
    parts = split_http_url(url)
    status, _, body = await http_request(
        f"{parts.scheme}://{parts.netloc}{WELL_KNOWN}", "GET", ssl=ssl
    )
    if status != 200:
        raise _unavailable(f"discovery answered HTTP {status}")
    try:
        brief: dict[str, Any] = parse_frame(body)
    except ParleyError:  # not JSON, too deep, too large, not a frame: never a raw exception
        raise _unavailable("discovery did not answer a Parley frame") from None
    return brief


async def connect_http(url: str, agent: Agent, *, ssl: _ssl.SSLContext | None = None) -> Client:
    """Return a client that POSTs each request frame to the bridge at ``url``."""

    async def send(frame: dict[str, Any]) -> None:
        lines = LineBuffer(limit=MAX_FRAME)

        def on_chunk(piece: bytes) -> None:  # EVENTs reach the client as they stream in
            for line in lines.feed(piece):
                if line is not None:
                    client.deliver(line)

        status, _, _ = await http_request(
            url, "POST", encode_frame(frame), ssl=ssl, on_chunk=on_chunk
        )
        if status != 200:
            raise _unavailable(f"the bridge answered HTTP {status}")
        on_chunk(b"\n")
        if frame["id"] in client.agent.pending:
            raise _unavailable("the bridge answered without a final reply")

    client = Client(agent, send)
    return client
