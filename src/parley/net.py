"""Transports beyond :func:`parley.connect` and :func:`parley.serve`: one server per transport.

Importing this module loads :mod:`asyncio` and :mod:`ssl`; ``import parley`` alone does not
(the top-level :func:`parley.connect`, :func:`parley.serve` and
:func:`parley.serve_forever` load their transports when first used).

>>> from parley.net import serve_tcp
>>> callable(serve_tcp)
True
"""

from __future__ import annotations

from ._http import asgi_app, serve_http
from ._http_client import discover
from ._transport_stdio import serve_stdio
from ._transport_tcp import serve_tcp

__all__ = ["asgi_app", "discover", "serve_http", "serve_stdio", "serve_tcp"]
