"""One log line per HTTP request of the room server, with the links taken out.

``pxp serve --log-level info`` shows them on standard error (logger ``pxp.server``)::

    GET /p/r1/… 404 3 ms
    POST /mcp 200 41 ms

Paths under ``/p/`` and ``/s/`` carry a link's secret after the room id: only the room id
is kept. The query string is never logged. A response of 400 to 499 is a refusal
(``INFO``), 500 and more, or none at all, a failure (``ERROR``).
"""

from __future__ import annotations

import logging
import time
from typing import Any

__all__ = ["RequestLog", "shown_path"]

_log = logging.getLogger("pxp.server")

_SECRET_PREFIXES = ("p", "s")


def shown_path(path: str) -> str:
    """``path`` as logged: after ``/p/<room>/`` or ``/s/<room>/`` nothing of the link."""
    parts = path.split("/")
    if len(parts) > 3 and parts[1] in _SECRET_PREFIXES:
        return "/".join(parts[:3]) + "/…"
    return path[:200]


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
