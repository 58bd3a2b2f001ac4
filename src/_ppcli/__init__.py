"""The console scripts of principal-protocols: each imports its command line, then runs it.

``pyproject.toml`` points every console script here (``pxp = "_ppcli:pxp"``). This module
imports nothing but :mod:`sys` and :mod:`importlib` (both already loaded when Python
starts), so that the second a command line takes to import runs under the shared rules:
Ctrl-C while it loads is ``error: interrupted: …`` and status 130, not a traceback. The
rules themselves are in :mod:`_ppcli.rules` (docs/cli.md).
"""

from __future__ import annotations

import importlib
import sys

__all__ = ["errand", "handoff", "launch", "parley", "ppcheck", "pxp", "vxp"]

_INTERRUPTED = 130  # _ppcli.rules.EXIT_INTERRUPTED, not imported: that is what takes time


def launch(prog: str, package: str | None = None) -> int:
    """Run the console script ``prog``: import ``<package>._cli`` (``package`` defaults to
    ``prog``), then call its ``main``."""
    try:
        module = importlib.import_module(f"{package or prog}._cli")
    except KeyboardInterrupt:
        try:
            sys.stderr.write(f"error: interrupted: {prog} stopped by Ctrl-C (SIGINT)\n")
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        return _INTERRUPTED
    status: int = module.main()
    return status


def pxp() -> int:
    """Console script ``pxp``."""
    return launch("pxp")


def handoff() -> int:
    """Console script ``handoff``."""
    return launch("handoff")


def vxp() -> int:
    """Console script ``vxp``."""
    return launch("vxp")


def parley() -> int:
    """Console script ``parley``."""
    return launch("parley")


def ppcheck() -> int:
    """Console script ``ppcheck``."""
    return launch("ppcheck")


def errand() -> int:
    """Console script ``errand`` (the binding profile's audit, package :mod:`ppbind`)."""
    return launch("errand", "ppbind")
