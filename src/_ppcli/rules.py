"""The rules every console script of principal-protocols shares (private; docs/cli.md).

``pxp``, ``handoff``, ``vxp``, ``parley`` and ``ppcheck`` are independent packages: none
imports another's protocol code. What a command line needs around any of them is the same
for all five and lives here, once, using the standard library only (``ppcheck.pyz``
carries this module too)::

    from _ppcli.rules import Parser, run

    def main(argv=None):
        return run(lambda: _main(argv), prog="pxp")

and ``Parser`` in place of :class:`argparse.ArgumentParser`. The rules (docs/cli.md):

- every failure is one line on standard error, ``error: <code>: <sentence>``;
- exit status 0: done; 1: the package's own error, or the command found what it reports
  (a rejected record, a failed case); 2: bad arguments (``error: usage: …``);
  130: interrupted (Ctrl-C, SIGINT); 143: terminated (SIGTERM, as a supervisor stops a
  service), each with one line; 141: standard output was closed (``… | head``),
  which ends the command quietly, like a program killed by SIGPIPE; 70: a bug
  (``error: internal: …``; ``PP_TRACEBACK=1`` shows the traceback instead);
- what the machine refuses is ``error: io: '<file>': <why>`` (an :class:`OSError`: a name
  too long, a folder where a file was expected, no permission) and a
  SQLite store that cannot be used is ``error: store_unreadable: …``, both with status 1.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import logging
import os
import signal
import socket
import sqlite3
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import NoReturn

__all__ = [
    "EXIT_FAILED",
    "EXIT_INTERNAL",
    "EXIT_INTERRUPTED",
    "EXIT_PIPE",
    "EXIT_TERMINATED",
    "EXIT_USAGE",
    "LOG_LEVELS",
    "MAX_INPUT_BYTES",
    "InputTooLargeError",
    "Parser",
    "add_log_level",
    "bind_listen",
    "cannot_listen",
    "port",
    "print_out",
    "probe_listen",
    "read_input",
    "run",
    "start_logging",
]

EXIT_FAILED = 1
"""The package's own error, or the command found what it reports (a rejected record)."""
EXIT_USAGE = 2
"""Bad arguments: an unknown option, a missing argument, a value out of range."""
EXIT_INTERNAL = 70
"""A bug (``EX_SOFTWARE``): an exception the command did not turn into its own error."""
EXIT_INTERRUPTED = 130
"""Interrupted by Ctrl-C (SIGINT): 128 + 2, as a shell reports it."""
EXIT_PIPE = 141
"""Standard output was closed by its reader: 128 + SIGPIPE, as a shell reports it."""
EXIT_TERMINATED = 143
"""Stopped by SIGTERM (``kill``, systemd, Docker): 128 + 15, as a shell reports it."""


MAX_INPUT_BYTES = 64 * 1024 * 1024
"""The most a command reads from one input file or standard input: 64 MiB (docs/cli.md).

More is ``error: input_too_large: …`` with status 2, before anything is parsed: a file that
never ends (``/dev/zero``) or a huge one would otherwise grow the process until it fails
with ``MemoryError`` or the system's out-of-memory killer ends it."""

_CHUNK = 1 << 20


class InputTooLargeError(Exception):
    """An input holds more than :data:`MAX_INPUT_BYTES`; :func:`run` says it in one line."""

    def __init__(self, name: str, limit: int) -> None:
        super().__init__(
            f"{name} holds more than {limit // (1 << 20)} MiB, the most a command reads"
        )
        self.name = name
        self.limit = limit


def _read_bounded(read: Callable[[int], bytes], name: str, limit: int) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = read(min(_CHUNK, limit + 1 - total))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
        if total > limit:
            raise InputTooLargeError(name, limit)


def read_input(source: str | os.PathLike[str], *, limit: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of the file ``source`` (``"-"``: standard input), at most ``limit``.

    Raises :class:`InputTooLargeError` past ``limit`` (a file that never ends included) and
    :class:`OSError` naming ``source`` (``'standard input'`` for ``"-"``), a folder too,
    which opens but then cannot be read. A named pipe is read as ``cat`` reads it: its
    writer is waited for, then it is read to its end (bounded), like standard input.
    """
    try:
        return _read_input(source, limit)
    except OSError as exc:
        # a folder opens but cannot be read: the read's error names no file, and the
        # line would say only "Is a directory" (docs/cli.md: ``error: io: '<file>': …``)
        if exc.filename is None:
            stdin = os.fspath(source) == "-"
            exc.filename = "standard input" if stdin else os.fspath(source)
        raise


def _read_input(source: str | os.PathLike[str], limit: int) -> bytes:
    if os.fspath(source) == "-":
        stream = getattr(sys.stdin, "buffer", None)
        if stream is None:  # a text stream without bytes under it
            data = sys.stdin.read(limit + 1).encode("utf-8", "surrogateescape")
            if len(data) > limit:
                raise InputTooLargeError("standard input", limit)
            return data
        return _read_bounded(stream.read, "standard input", limit)
    # a named pipe is opened as cat opens it: waiting for its writer (Ctrl-C ends the wait);
    # opened without waiting, a pipe whose writer comes a moment later read as empty
    fd = os.open(source, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        return _read_bounded(lambda size: os.read(fd, size), repr(os.fspath(source))[:120], limit)
    finally:
        os.close(fd)


def _say(line: str) -> None:
    """Write one line on standard error; a closed standard error is not worth a traceback."""
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(line.replace("\n", " ").replace("\r", " ") + "\n")
        sys.stderr.flush()


def print_out(text: str) -> None:
    """Print ``text`` on standard output and flush it now: a command that must undo what
    it made when nobody could see its output (``parley keygen > /dev/full``) learns it
    here. A failure is the :class:`OSError`, naming ``standard output``."""
    if sys.stdout is None:  # file descriptor 1 was closed (``>&-``): print() would drop it
        raise OSError(errno.EBADF, "standard output is closed", "standard output")
    try:
        print(text, flush=True)
    except OSError as exc:
        raise _naming_stdout(exc) from None


def _naming_stdout(exc: OSError) -> OSError:
    if exc.filename is None and not isinstance(exc, BrokenPipeError):
        exc.filename = "standard output"
    return exc


def _drop_stdout() -> None:
    """Point standard output at the null device: what is still buffered goes nowhere."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, sys.stdout.fileno())
        finally:
            os.close(null)


class Parser(argparse.ArgumentParser):
    """An :class:`argparse.ArgumentParser` whose usage errors are one coded line.

    ``error: usage: <prog>: <what was wrong> (<prog> --help lists the options)``, exit
    status 2. Subcommand parsers made by ``add_subparsers`` inherit the class.
    """

    def error(self, message: str) -> NoReturn:
        """Print the usage error as one line and exit with status 2."""
        _say(f"error: usage: {self.prog}: {message} ({self.prog} --help lists the options)")
        raise SystemExit(EXIT_USAGE)


def port(text: str) -> int:
    """An :mod:`argparse` type: a TCP port number, 0 (any free port) to 65535."""
    try:
        value = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text[:40]!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"a port lies between 0 and 65535, not {text[:40]}")
    return value


def _os_error(exc: OSError) -> str:
    """``exc`` as one short sentence: what was refused, and the file it names."""
    what = exc.strerror or str(exc) or type(exc).__name__
    name = exc.filename if exc.filename is not None else None
    shown = "" if name is None else f"{str(name)[:120]!r}: "
    return f"{shown}{what}"


def bind_listen(host: str, port: int) -> tuple[socket.socket | None, str | None]:
    """Bind ``host:port`` for a server and keep it: the bound socket (not yet listening)
    and ``None``, or ``None`` and why a server could not listen there.

    A server that holds its port from the moment it checks it cannot lose it to another
    program while it starts (``pxp serve`` binds before it creates its room store, then
    hands the socket to its framework). The caller closes the socket.
    """
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (OSError, UnicodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return None, f"cannot resolve the host {host[:80]!r}: {why}"
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError as exc:
        sock.close()
        return None, f"cannot listen on {host[:80]}:{port}: {exc.strerror or exc}"
    return sock, None


def probe_listen(host: str, port: int) -> tuple[int, str | None]:
    """Try to bind ``host:port`` (a probe, closed at once): the port it bound and ``None``,
    or ``port`` and why a server could not listen there.

    Said before a server starts, so an address in use or a host that does not resolve is
    one coded line, not a framework's log and traceback. For port ``0`` the port returned
    is the free one the system chose, for a server that must name its address before it
    starts. (:func:`bind_listen` keeps the socket, so the port cannot be lost meanwhile.)
    """
    sock, why = bind_listen(host, port)
    if sock is None:
        return port, why
    with sock:
        return int(sock.getsockname()[1]), None


def cannot_listen(host: str, port: int) -> str | None:
    """Why a server could not listen on ``host:port`` (see :func:`probe_listen`), or ``None``."""
    return probe_listen(host, port)[1]


_STOPPING = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def _noting_interrupts(seen: list[int]) -> Iterator[None]:
    """Raise :class:`KeyboardInterrupt` on SIGINT and SIGTERM, and remember which came.

    SIGINT does what Python does anyway; SIGTERM, which would kill the process without a
    line, stops the command the same way (every ``except KeyboardInterrupt`` that shuts
    down cleanly runs), and ``seen`` tells :func:`run` which status to end with. Once one
    came, both are ignored until the process ends. A
    framework that catches the interrupt to shut down cleanly (uvicorn does) would
    otherwise end the command with status 0. Only the main thread can set a handler; in
    any other the command runs as it is.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupted(signum: int, frame: FrameType | None) -> None:
        seen.append(signum)
        # The command stops and the process ends: a second Ctrl-C (a double key press;
        # ``timeout`` signals the child and then its group) must not cut that short with
        # a traceback, nor kill it while Python finalizes, which puts the default
        # handlers back but leaves an ignored signal ignored (review i24 #3).
        for number in _STOPPING:
            signal.signal(number, signal.SIG_IGN)
        raise KeyboardInterrupt

    previous = {number: signal.signal(number, interrupted) for number in _STOPPING}
    try:
        yield
    finally:
        if not seen:
            for number, handler in previous.items():
                signal.signal(number, handler)


LOG_LEVELS = ("debug", "info", "warning", "error")
"""The values of a server's ``--log-level`` (``info``: one line per request)."""

_CONTROL = {c: f"\\x{c:02x}" for c in (*range(0x20), 0x7F)}


def _is_interruption(exc: BaseException | None) -> bool:
    """``exc`` is an interrupt or a task's cancellation (an error raised while handling
    one is still an error, and is logged)."""
    return exc is not None and type(exc).__name__ in _INTERRUPTIONS


_INTERRUPTIONS = ("CancelledError", "KeyboardInterrupt")


def _is_interruption_text(message: str) -> bool:
    """``message`` is a formatted traceback that ends in an interrupt or a cancellation."""
    if not message.startswith("Traceback (most recent call last):"):
        return False
    last = message.rstrip().rsplit("\n", 1)[-1]
    return last.split(":", 1)[0].rsplit(".", 1)[-1] in _INTERRUPTIONS


class _Shutdown(logging.Filter):
    """Drop a server framework's record of a task cut short by Ctrl-C or SIGTERM.

    When a second Ctrl-C lands while uvicorn shuts down (review i24 #3), the application's
    lifespan task is cancelled: Starlette reports the ``CancelledError`` as a formatted
    traceback, uvicorn as ``Exception in 'lifespan' protocol`` with that exception. That is
    the interruption the command reports in its one ``interrupted`` line, not an error.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        """Keep every record but one about an interruption."""
        exc = record.exc_info[1] if record.exc_info else None
        if _is_interruption(exc):
            return False
        return not (isinstance(record.msg, str) and _is_interruption_text(record.msg))


_FRAMEWORK_LOGGERS = ("uvicorn.error", "asyncio")
"""Where a server framework reports a failed task (filtered by :class:`_Shutdown`)."""


class _OneLine(logging.Formatter):
    """Every record on one line: a newline or a terminal control that a peer put in an id
    or a message (or a traceback) is shown as an escape, so a log line cannot be forged."""

    def format(self, record: logging.LogRecord) -> str:
        return super().format(record).translate(_CONTROL)


def add_log_level(parser: argparse.ArgumentParser) -> None:
    """Add ``--log-level`` to a server's parser (docs/cli.md)."""
    parser.add_argument(
        "--log-level",
        choices=LOG_LEVELS,
        default="warning",
        help="log on standard error from this level: info shows one line per request (warning)",
    )


def start_logging(level: str, *loggers: str) -> None:
    """Send the records of ``loggers`` (a package's, e.g. ``"pxp"``) to standard error.

    One line each: ``<time> <LEVEL> <logger>: <message>``. Called by a server's command
    line only; the library itself has a :class:`logging.NullHandler` per package and never
    configures logging.
    """
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_OneLine("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    for name in loggers:
        log = logging.getLogger(name)
        log.setLevel(level.upper())
        log.addHandler(handler)
        log.propagate = False
    for name in _FRAMEWORK_LOGGERS:
        framework = logging.getLogger(name)
        if not any(isinstance(f, _Shutdown) for f in framework.filters):
            framework.addFilter(_Shutdown())


def _other_threads() -> bool:
    main = threading.main_thread()
    return any(t is not main and t.is_alive() and not t.daemon for t in threading.enumerate())


def run(main: Callable[[], int], *, prog: str) -> int:
    """Run a command's ``main`` under the rules every console script shares.

    Returns the exit status; :class:`SystemExit` (``--help``, ``--version``, usage
    errors) passes through once standard output is flushed.
    """
    stop: SystemExit | None = None
    status = 0
    seen: list[int] = []
    try:
        try:
            with _noting_interrupts(seen):
                status = main()
        except SystemExit as exc:
            stop = exc
        try:
            if sys.stdout is not None:  # None: descriptor 1 closed (``>&-``), nothing to flush
                sys.stdout.flush()  # inside the guard: a closed pipe shows up here, not at exit
        except OSError as exc:
            raise _naming_stdout(exc) from None
        if seen and stop is None and status != EXIT_INTERRUPTED:
            # a server that stops on Ctrl-C (uvicorn, asyncio) returned normally: the
            # interrupt still decides the exit status
            raise KeyboardInterrupt
    except BrokenPipeError:
        _drop_stdout()
        return EXIT_PIPE
    except KeyboardInterrupt:
        terminated = bool(seen) and seen[0] == signal.SIGTERM
        if terminated:
            _say(f"error: terminated: {prog} stopped by SIGTERM")
        else:
            _say(f"error: interrupted: {prog} stopped by Ctrl-C (SIGINT)")
        status = EXIT_TERMINATED if terminated else EXIT_INTERRUPTED
        if _other_threads():
            # a worker thread still blocked would hold the process open: leave at once
            _drop_stdout()
            os._exit(status)
        return status
    except InputTooLargeError as exc:
        _say(f"error: input_too_large: {exc}")
        return EXIT_USAGE
    except OSError as exc:
        # the machine said no (a name too long, a folder where a file was expected, a
        # permission, a certificate file that holds none): the same for every command
        _say(f"error: io: {_os_error(exc)}")
        return EXIT_FAILED
    except sqlite3.DatabaseError as exc:
        _say(f"error: store_unreadable: the SQLite store cannot be used: {exc}")
        return EXIT_FAILED
    except Exception as exc:
        if os.environ.get("PP_TRACEBACK") == "1":
            raise
        what = str(exc)[:200] or "(no message)"
        _say(
            f"error: internal: {prog} failed with {type(exc).__name__}: {what} "
            "(a bug: please report it; PP_TRACEBACK=1 shows the traceback)"
        )
        return EXIT_INTERNAL
    if stop is not None:
        raise stop
    return status
