"""The in-process implementation of every vector operation: suite name to library call.

Each ``ppcheck._handlers.<protocol>`` module registers one handler per operation with
:func:`handler`. A handler takes a vector's ``input`` and returns its ``output``; a failure
is the protocol package's own error, turned here into ``{"code", "reason"}``. Any other
exception is a bug in this library and is left to propagate.

Handler modules are named for the protocol of their suites (``vxp`` and ``vxp_proof`` hold
``vxp.*`` suites), so :func:`run` imports only the modules, and so the package, of the suite
it runs: an adapter process started for one suite (``python -m ppcheck.adapter``, one per
suite) loads one protocol package instead of all four.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Handler", "Result", "handler", "handlers", "run"]

Handler = Callable[[dict[str, Any]], dict[str, Any]]
"""A vector operation: the vector's ``input`` in, its ``output`` out."""

_HANDLERS: dict[str, Handler] = {}
_PACKAGE_ERRORS = (
    ("pxp", "PxpError"),
    ("handoff", "HandoffError"),
    ("vxp", "VxpError"),
    ("parley", "ParleyError"),
    ("ppbind", "BindingError"),
)
"""Each protocol package and its error class: a handler's refusal, reported as a result."""


def _package_errors() -> tuple[type[BaseException], ...]:
    # A handler can raise only the error of a package already imported.
    return tuple(getattr(sys.modules[m], name) for m, name in _PACKAGE_ERRORS if m in sys.modules)


def handler(suite: str) -> Callable[[Handler], Handler]:
    """Register the decorated function as the implementation of ``suite``."""

    def register(fn: Handler) -> Handler:
        if suite in _HANDLERS:
            raise RuntimeError(f"two handlers registered for suite {suite!r}")
        _HANDLERS[suite] = fn
        return fn

    return register


_loaded: set[str] = set()
_loading = threading.Lock()


def handlers(protocol: str | None = None) -> Mapping[str, Handler]:
    """Return the registered handlers, importing the handler modules on first use.

    With ``protocol`` (a suite name's first part, ``vxp`` of ``vxp.merkle_tree_hash``) only
    that protocol's handler modules are imported first; without it, all of them.
    """
    from . import _handlers

    with _loading:  # suites run in threads: one of them imports, the others wait
        for info in pkgutil.iter_modules(_handlers.__path__):
            name = info.name
            if name in _loaded or (
                protocol is not None and name != protocol and not name.startswith(protocol + "_")
            ):
                continue
            importlib.import_module(f"{_handlers.__name__}.{name}")
            _loaded.add(name)
    return _HANDLERS


@dataclass(frozen=True)
class Result:
    """What an implementation answered for one vector: exactly one field is set."""

    output: dict[str, Any] | None = None
    """The operation's output, when it succeeded."""
    error: dict[str, str] | None = None
    """``{"code", "reason"?}`` when the implementation refused the input."""
    unsupported: bool = False
    """True when the implementation does not support the suite."""

    def __bool__(self) -> bool:
        """Refused: a result is a report (``if ppcheck.run(...):`` would read a refusal as
        a pass). Read :attr:`error`, :attr:`output` or :attr:`unsupported`."""
        raise TypeError("a Result is a report; read .error, .output or .unsupported")

    def as_json(self) -> dict[str, Any]:
        """Return the result in the harness message shape (without the ``id``)."""
        if self.unsupported:
            return {"unsupported": True}
        if self.error is not None:
            return {"error": dict(self.error)}
        return {"output": self.output}


def _input_problem(suite: str, input_: object) -> str | None:
    """Why ``input_`` is not of ``suite``'s input shape (its schema), or ``None``."""
    protocol, _, operation = suite.partition(".")
    name = f"vectors/{operation}.input.json"
    # The package's schema set: its files are read and compiled once, as for its own checks.
    schemas = importlib.import_module(f"{protocol}._schemas")
    if name not in schemas.schema_names():
        return None if isinstance(input_, dict) else "it is not a JSON object"
    errors = schemas.validator(name).iter_errors(input_)
    first = min(errors, key=lambda e: ([str(p) for p in e.absolute_path], e.message), default=None)
    if first is None:
        return None
    where = "/".join(str(p) for p in first.absolute_path) or "(the input)"
    return f"{where}: {first.message} ({protocol} schema {name})"


def run(suite: str, input_: dict[str, Any]) -> Result:
    """Run one vector ``input_`` of ``suite`` through this library.

    ``input_`` is first held to the suite's input schema: input of another shape is the
    caller's mistake and raises :class:`RunnerError` naming the member, never reaching the
    library (so a library exception other than the package's own error is a bug).
    """
    fn = handlers(suite.partition(".")[0]).get(suite)
    if fn is None:
        return Result(unsupported=True)
    problem = _input_problem(suite, input_)
    if problem is not None:
        from ._runner import RunnerError

        raise RunnerError(f"the input of {suite} is not of its shape: {problem}")
    try:
        output = fn(input_)
    except _package_errors() as exc:
        error = {"code": str(getattr(exc, "code", "error"))}
        reason = getattr(exc, "reason", None)
        if reason is not None:
            error["reason"] = str(reason)
        return Result(error=error)
    return Result(output=output)
