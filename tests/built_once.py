"""Build something once per test run and share it with every pytest-xdist worker.

Under ``pytest -n`` each worker is its own process with its own base temporary folder, and
a ``scope="session"`` fixture runs once per worker. The workers' folders share a parent
that belongs to this run alone, so an expensive artefact (the wheel installed in a fresh
environment, ``ppcheck.pyz``) is built there once, under a lock file: the first worker
builds it while the others wait, then every worker uses it. A serial run builds it in its
own base folder.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: every worker builds its own
    fcntl = None  # type: ignore[assignment]


def built_once(
    tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]
) -> Path:
    """Return the folder ``name``, filled by ``build(folder)`` once for the whole run.

    A build that raises leaves no mark of completion, so the next worker to ask builds
    again (and reports the same error in its own tests).
    """
    base = tmp_path_factory.getbasetemp()
    shared = "PYTEST_XDIST_WORKER" in os.environ and fcntl is not None
    root = base.parent if shared else base
    folder = root / f"built-{name}"
    with open(root / f"built-{name}.lock", "w", encoding="ascii") as lock:
        if fcntl is not None:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not (folder / ".built").exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            build(folder)
            (folder / ".built").touch()
    return folder
