"""The in-process implementation of every vector operation: suite name to library call.

Each ``ppcheck._handlers.<protocol>`` module registers one handler per operation with
:func:`handler`. A handler takes a vector's ``input`` and returns its ``output``; a failure
is the protocol package's own error, turned here into ``{"code", "reason"}``. Any other
exception is a bug in this library and is left to propagate.
"""

from __future__ import annotations

import importlib
import pkgutil
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import handoff
import parley
import ppbind
import pxp
import vxp

__all__ = ["Handler", "Result", "handler", "handlers", "run"]

Handler = Callable[[dict[str, Any]], dict[str, Any]]
"""A vector operation: the vector's ``input`` in, its ``output`` out."""

_HANDLERS: dict[str, Handler] = {}
_PACKAGE_ERRORS: tuple[type[ValueError], ...] = (
    pxp.PxpError,
    handoff.HandoffError,
    vxp.VxpError,
    parley.ParleyError,
    ppbind.BindingError,
)


def handler(suite: str) -> Callable[[Handler], Handler]:
    """Register the decorated function as the implementation of ``suite``."""

    def register(fn: Handler) -> Handler:
        if suite in _HANDLERS:
            raise RuntimeError(f"two handlers registered for suite {suite!r}")
        _HANDLERS[suite] = fn
        return fn

    return register


_loaded = False
_loading = threading.Lock()


def handlers() -> Mapping[str, Handler]:
    """Return every registered handler, importing the handler modules on first use."""
    global _loaded
    with _loading:  # suites run in threads: one of them imports, the others wait
        if not _loaded:
            from . import _handlers

            for info in pkgutil.iter_modules(_handlers.__path__):
                importlib.import_module(f"{_handlers.__name__}.{info.name}")
            _loaded = True
    return _HANDLERS


@dataclass(frozen=True)
class Result:
    """What an implementation answered for one vector: exactly one field is set."""

    output: dict[str, Any] | None = None
    error: dict[str, str] | None = None
    unsupported: bool = False

    def as_json(self) -> dict[str, Any]:
        """Return the result in the harness message shape (without the ``id``)."""
        if self.unsupported:
            return {"unsupported": True}
        if self.error is not None:
            return {"error": dict(self.error)}
        return {"output": self.output}


def run(suite: str, input_: dict[str, Any]) -> Result:
    """Run one vector ``input_`` of ``suite`` through this library."""
    fn = handlers().get(suite)
    if fn is None:
        return Result(unsupported=True)
    try:
        output = fn(input_)
    except _PACKAGE_ERRORS as exc:
        error = {"code": str(getattr(exc, "code", "error"))}
        reason = getattr(exc, "reason", None)
        if reason is not None:
            error["reason"] = str(reason)
        return Result(error=error)
    return Result(output=output)
