"""A fork server that runs the console scripts as real processes, without the import cost.

    python -P tests/cli_forkserver.py FD

Imports the five command lines once, then serves requests on the Unix socket ``FD``
(``SOCK_SEQPACKET``): each request is one message holding the JSON object ``{"prog", "argv",
"cwd", "env"}`` with three file descriptors attached (the new process's standard input,
output and error). For each, the server forks; the child puts those descriptors on 0, 1 and
2, changes folder and environment, and runs the command as its console script does
(``sys.exit(main())``) and ends as CPython ends it (the status, the final flush of standard
output and error, a failed flush reported; see ``_exit``). The server answers ``{"pid"}`` at
once, then ``{"status"}`` when the child ends (negative: killed by that signal). A real
process, its own descriptors, its own signals; only the imports are shared (copy on write).
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import importlib
import json
import os
import signal
import socket
import sys
from collections.abc import Callable
from typing import NoReturn

ENTRIES: dict[str, Callable[[], int]] = {
    name: importlib.import_module(f"{package}._cli").main
    for name, package in (
        ("pxp", "pxp"),
        ("handoff", "handoff"),
        ("vxp", "vxp"),
        ("parley", "parley"),
        ("ppcheck", "ppcheck"),
        ("errand", "ppbind"),
    )
}

# What the servers import on first use (seconds on a busy machine), imported once here.
for _lazy in ("pxp.server", "pxp._server_cli", "uvicorn", "parley._http"):
    with contextlib.suppress(ImportError):
        importlib.import_module(_lazy)


def _die_with_parent() -> None:
    """Linux: the child is killed when the server ends (a test stopped by its timeout)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _child(control: socket.socket, request: dict[str, object], fds: list[int]) -> int:
    _die_with_parent()
    control.close()
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(str(request["cwd"]))
    env = request["env"]
    assert isinstance(env, dict)
    os.environ.update({str(k): str(v) for k, v in env.items()})
    prog = str(request["prog"])
    argv = request["argv"]
    assert isinstance(argv, list)
    sys.argv = [prog, *map(str, argv)]
    return ENTRIES[prog]()


def _exit(
    child: Callable[[socket.socket, dict[str, object], list[int]], int],
    control: socket.socket,
    request: dict[str, object],
    fds: list[int],
) -> NoReturn:
    """End the child as the interpreter ends a console script, minus the teardown.

    ``sys.exit(main())``: a ``SystemExit`` code becomes the status (a text code is printed,
    status 1); then standard output and error are flushed, and a flush that fails is
    reported and gives status 120, both as CPython's own exit does. The module teardown
    that follows in a real exit (seconds on a busy machine, for a heap this size) is
    skipped with ``os._exit``.
    """
    try:
        code: object = child(control, request, fds)
    except SystemExit as stop:
        code = stop.code
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:
        print(code, file=sys.stderr)
        status = 1
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        try:
            stream.flush()
        except Exception as exc:  # exactly what CPython prints at exit
            with contextlib.suppress(Exception):
                sys.__stderr__.write(
                    f"Exception ignored in: {stream!r}\n{type(exc).__name__}: {exc}\n"
                )
                sys.__stderr__.flush()
            status = 120
    os._exit(status & 0xFF)


def serve(control: socket.socket) -> None:
    while True:
        message, fds, _, _ = socket.recv_fds(control, 1 << 20, 3)
        if not message:
            return
        request = json.loads(message)
        pid = os.fork()
        if pid == 0:
            _exit(_child, control, request, fds)
        for fd in fds:
            os.close(fd)
        control.send(json.dumps({"pid": pid}).encode())
        _, status = os.waitpid(pid, 0)
        control.send(json.dumps({"status": os.waitstatus_to_exitcode(status)}).encode())


if __name__ == "__main__":
    gc.freeze()  # the children share the imported heap; a collection would copy it all
    serve(socket.socket(fileno=int(sys.argv[1])))
