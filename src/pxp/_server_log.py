"""One log line per HTTP request of the room server, with the links taken out.

``pxp serve --log-level info`` shows them on standard error (logger ``pxp.server``)::

    GET /p/r1/… 404 3 ms
    POST /mcp 200 41 ms

Paths under ``/p/`` and ``/s/`` carry a link's secret after the room id: only the room id
is kept. A path of any other shape (a prefix a proxy did not strip, a double slash, the
room id left out) is logged as ``/…``: a secret can sit anywhere in it. The query string
is never logged. A response of 400 to 499 is a refusal
(``INFO``), 500 and more, or none at all, a failure (``ERROR``).
"""

from __future__ import annotations

import logging
import re
import time
from typing import Any

__all__ = ["RequestLog", "shown_path"]

_log = logging.getLogger("pxp.server")

_PLAIN = frozenset({"/", "/mcp", "/mcp/"})
"""Paths that never carry anything of a link, logged as they are."""

_SECRET_PREFIXES = ("p", "s")

_ROOM_SHOWN = re.compile(r"[A-Za-z0-9_-]{1,32}")
"""A room id short enough never to be a link's secret (43 characters): minted room ids are
11; a longer one (an imported room's) is not shown either."""


def shown_path(path: str) -> str:
    """``path`` as logged, never holding a link's secret (review i24 #6).

    ``/p/<room>/…`` and ``/s/<room>/…`` (and ``/room/<room>``) keep the room id, when the
    path has that shape exactly and the id is short; ``/`` and ``/mcp`` are kept; any other
    path is ``/…``.
    """
    if path in _PLAIN:
        return path
    parts = path.split("/")
    if len(parts) >= 4 and parts[0] == "" and parts[1] in _SECRET_PREFIXES:
        room = parts[2]
        if _ROOM_SHOWN.fullmatch(room):
            return f"/{parts[1]}/{room}/…"
        return f"/{parts[1]}/…"
    if len(parts) == 3 and parts[:2] == ["", "room"] and _ROOM_SHOWN.fullmatch(parts[2]):
        return path
    return "/…"


class RequestLog:
    """ASGI middleware: log each HTTP request in one line (method, path, status, time)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """Pass the request on; log it once the response is finished (or failed)."""
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 0

        async def sending(message: Any) -> None:
            nonlocal status
            if message.get("type") == "http.response.start":
                status = int(message.get("status", 0))
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            ms = (time.perf_counter() - started) * 1000
            method = str(scope.get("method", "?"))[:10]
            path = shown_path(str(scope.get("path", "")))
            if status >= 500 or status == 0:
                _log.error("failed %s %s %s %.0f ms", method, path, status or "-", ms)
            elif status >= 400:
                _log.info("refused %s %s %s %.0f ms", method, path, status, ms)
            else:
                _log.info("%s %s %s %.0f ms", method, path, status, ms)
