"""Talking to an adapter executable over the harness protocol (docs/conformance.md).

An adapter is started once per suite; it reads one JSON request per line on standard input
and answers one JSON line per request on standard output, in order. This module owns the
child process: it sends a request, waits for the answer up to a per-case timeout, and
restarts the adapter after it crashed or hung, so one bad case never hides the others.

The runner must never hang or crash because of an adapter: requests are written by a
writer thread (an adapter that never reads its input cannot block the runner), answers are
read by a reader thread with a bounded line length, standard error goes to a temporary file
(it can never fill a pipe), and on POSIX the adapter runs in its own session so that a
timeout kills the whole process group, children of a wrapper script included.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from ._response import response_problem

__all__ = ["MAX_LINE", "Adapter", "AdapterError", "Answer", "printable", "stderr_summary"]

MAX_LINE = 16 * 1024 * 1024
"""The longest response line (in bytes, newline included) the runner reads."""

_STDERR_TAIL = 600
_STDERR_LINES = 60


class AdapterError(Exception):
    """The adapter could not be started; the message says why."""


@dataclass(frozen=True)
class Answer:
    """The adapter's answer to one request: the response object, or a fault sentence."""

    response: dict[str, Any] | None
    """The adapter's response object, or None when it did not give one."""
    fault: str | None = None
    """A sentence naming the adapter's fault (a bad line, a wrong id, a timeout), or None."""
    ended: bool = False
    """The adapter could not be started, or exited before answering this request."""


def printable(text: str) -> str:
    r"""Return ``text`` with control characters and lone surrogates shown as escapes.

    Newlines and tabs are kept; everything else below U+0020, U+007F to U+009F,
    U+D800 to U+DFFF, U+FFFE and U+FFFF become ``\xNN`` or ``\uNNNN``, so adapter
    output can neither drive a terminal nor make a JUnit report invalid XML.
    """
    out: list[str] = []
    for char in text:
        code = ord(char)
        if (
            char in "\n\t"
            or (0x20 <= code < 0x7F)
            or (code >= 0xA0 and not 0xD800 <= code < 0xE000 and code not in (0xFFFE, 0xFFFF))
        ):
            out.append(char)
        elif code < 0x100:
            out.append(f"\\x{code:02x}")
        else:
            out.append(f"\\u{code:04x}")
    return "".join(out)


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"duplicate member {key!r}")
        result[key] = value
    return result


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _parse_line(raw: bytes) -> Any:
    """Parse one response line strictly: UTF-8, one JSON value, no duplicate members."""
    text = raw.decode("utf-8")
    return json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constants)


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


_EOF = object()
_CLOSE = object()


class _Process:
    """One running adapter process with its reader and writer threads."""

    def __init__(self, argv: list[str], log: Path | None = None) -> None:
        self.log = log
        try:
            self.stderr: IO[bytes] = (
                tempfile.TemporaryFile()  # noqa: SIM115 - closed in reap()
                if log is None
                else open(log, "w+b")  # noqa: SIM115 - closed in reap()
            )
        except OSError as exc:
            raise AdapterError(f"cannot create the adapter's stderr log {log}: {exc}") from exc
        options: dict[str, Any] = {"start_new_session": True} if os.name == "posix" else {}
        try:
            self.popen = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, **options
            )
        except (OSError, ValueError) as exc:
            self.stderr.close()
            raise AdapterError(f"cannot start the adapter {argv[0]!r}: {exc}") from exc
        self.lines: queue.Queue[object] = queue.Queue()
        self._outbox: queue.Queue[object] = queue.Queue()
        stdin, stdout = self.popen.stdin, self.popen.stdout
        assert stdin is not None
        assert stdout is not None
        threading.Thread(target=self._read, args=(stdout,), daemon=True).start()
        threading.Thread(target=self._write, args=(stdin,), daemon=True).start()

    def _read(self, stdout: IO[bytes]) -> None:
        # This thread alone touches stdout (closing it from another thread could block on
        # the buffer lock while this one is stuck in a read).
        try:
            while True:
                raw = stdout.readline(MAX_LINE + 1)
                if not raw:
                    break
                self.lines.put(raw)
                if len(raw) > MAX_LINE:
                    break
        except (OSError, ValueError):
            pass
        finally:
            self.lines.put(_EOF)
            with contextlib.suppress(OSError, ValueError):
                stdout.close()

    def _write(self, stdin: IO[bytes]) -> None:
        # This thread alone touches stdin: an adapter that never reads blocks only it.
        try:
            while True:
                item = self._outbox.get()
                if item is _CLOSE:
                    break
                assert isinstance(item, bytes)
                stdin.write(item)
                stdin.flush()
        except (OSError, ValueError):
            pass
        finally:
            with contextlib.suppress(OSError, ValueError):
                stdin.close()

    def send(self, data: bytes) -> None:
        self._outbox.put(data)

    def close_input(self) -> None:
        self._outbox.put(_CLOSE)

    def wait(self, timeout: float) -> int | None:
        """Wait for the exit status; ``None`` if the process is still running."""
        try:
            return self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def kill(self) -> None:
        """Kill the adapter and, on POSIX, every process left in its group."""
        if os.name == "posix":
            with contextlib.suppress(OSError):
                os.killpg(self.popen.pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            self.popen.kill()

    def reap(self) -> int:
        """Kill what is left, collect the exit status, release the streams.

        A kept stderr log that stayed empty is removed.
        """
        self.kill()
        status = self.popen.wait()
        self.close_input()
        empty = True
        with contextlib.suppress(OSError, ValueError):
            empty = self.stderr.seek(0, os.SEEK_END) == 0
        self.stderr.close()
        if self.log is not None and empty:
            with contextlib.suppress(OSError):
                self.log.unlink()
        return status

    def stderr_tail(self) -> str:
        """Return ``; its stderr ends: …`` (the error lines first kept), or ``""``."""
        try:
            size = self.stderr.seek(0, os.SEEK_END)
            self.stderr.seek(max(0, size - 64 * 1024))
            text = self.stderr.read().decode("utf-8", "replace")
        except (OSError, ValueError):
            return ""
        summary = stderr_summary(text)
        where = f" (whole log: {self.log})" if self.log is not None else ""
        return f"; its stderr ends: {summary}{where}" if summary else where


def stderr_summary(text: str) -> str:
    """Return the telling part of an adapter's standard error, at most about 600 characters.

    Stack frames are indented in every common runtime (Python, Node.js, the JVM, .NET), while
    the error line is not, and Node.js prints the error line *before* its frames: so the
    last lines are kept without their indented ones, joined by `` | ``, and the end of that
    is shown. The whole log is in the file the fault names.
    """
    lines = [line.rstrip() for line in text.splitlines()[-_STDERR_LINES:]]
    kept = [line for line in lines if line and not line[0].isspace()]
    joined = " | ".join(kept).strip()
    if len(joined) > _STDERR_TAIL:
        joined = "..." + joined[-(_STDERR_TAIL - 3) :]
    return printable(joined)


class Adapter:
    """One adapter process for one suite, restarted on demand after a fault.

    :meth:`ask` never raises for anything the adapter does: a fault of one case becomes
    that case's :class:`Answer`; a fault between cases (output nobody asked for, an exit
    before its input closed, a non-zero exit status at the end) is added to
    :attr:`faults`, the adapter's faults for the suite as a whole.
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        timeout: float,
        stderr_dir: Path | None = None,
        label: str = "adapter",
    ) -> None:
        if not argv:
            raise ValueError("the adapter command line is empty")
        if not timeout > 0:
            raise ValueError("the timeout must be a positive number of seconds")
        self._argv = list(argv)
        self._timeout = timeout
        self._stderr_dir = stderr_dir
        self._label = "".join(c if c.isalnum() or c in "._-" else "_" for c in label)
        self._starts = 0
        self._proc: _Process | None = None
        self._last: str | None = None
        self.faults: list[str] = []
        """Faults of the adapter not tied to one case, in the order they were seen."""

    def _after(self) -> str:
        return f"after answering {self._last!r}" if self._last is not None else "at start"

    def _check_between_cases(self, proc: _Process) -> _Process | None:
        """Notice output or an exit nobody asked for; return the process if still usable."""
        stray: list[bytes] = []
        ended = False
        while True:
            try:
                item = proc.lines.get_nowait()
            except queue.Empty:
                break
            if item is _EOF:
                ended = True
                break
            assert isinstance(item, bytes)
            stray.append(item)
        if stray:
            self.faults.append(
                f"wrote {len(stray)} line(s) nobody asked for {self._after()}, "
                f"the first: {_clip(repr(stray[0]))}"
            )
        status = proc.popen.poll()
        if ended or status is not None:
            status = proc.wait(self._timeout) if status is None else status
            tail = proc.stderr_tail()
            proc.reap()
            what = "closed its output" if status is None else f"exited with status {status}"
            self.faults.append(f"{what} {self._after()}, before its input closed{tail}")
            return None
        return proc

    def _fail(
        self, proc: _Process, message: str, *, tail: bool = False, ended: bool = False
    ) -> Answer:
        text = message + (proc.stderr_tail() if tail else "")
        proc.reap()
        self._proc = None
        return Answer(None, f"{text} (adapter restarted)", ended)

    def ask(self, request: dict[str, Any]) -> Answer:
        """Send one request; return the validated response or a fault (never raises it)."""
        proc = self._proc
        if proc is not None:
            proc = self._check_between_cases(proc)
        if proc is None:
            self._proc = None
            self._starts += 1
            log = (
                None
                if self._stderr_dir is None
                else self._stderr_dir / f"{self._label}.{self._starts}.stderr"
            )
            try:
                proc = _Process(self._argv, log)
            except AdapterError as exc:
                return Answer(None, str(exc), True)
            self._proc = proc
        line = json.dumps(request, ensure_ascii=True, separators=(",", ":")) + "\n"
        proc.send(line.encode("ascii"))
        try:
            raw = proc.lines.get(timeout=self._timeout)
        except queue.Empty:
            return self._fail(proc, f"no answer within {self._timeout:g} s")
        if raw is _EOF:
            status = proc.wait(self._timeout)
            what = "closed its output" if status is None else f"exited with status {status}"
            return self._fail(proc, f"the adapter {what} before answering", tail=True, ended=True)
        assert isinstance(raw, bytes)
        if len(raw) > MAX_LINE:
            return self._fail(proc, f"answered a line longer than {MAX_LINE} bytes")
        if not raw.endswith(b"\n"):
            return self._fail(
                proc, f"answered a line without a final newline: {_clip(repr(raw))}", tail=True
            )
        try:
            response = _parse_line(raw)
        except UnicodeDecodeError as exc:
            return self._fail(
                proc, f"answered a line that is not UTF-8 ({exc.reason}): {_clip(repr(raw))}"
            )
        except (ValueError, RecursionError) as exc:
            return self._fail(
                proc,
                f"answered a line that is not JSON ({_clip(str(exc), 80)}): {_clip(repr(raw))}",
            )
        problem = response_problem(response)
        if problem is not None:
            return Answer(None, f"answered a malformed response ({problem}): {_clip(repr(raw))}")
        if response["id"] != request["id"]:
            return self._fail(
                proc,
                f"answered id {_clip(repr(response['id']))} to request {request['id']!r} "
                "(a second answer to an earlier request, or answers out of order)",
            )
        self._last = request["id"]
        return Answer(response)

    def abort(self) -> None:
        """Kill the adapter (and its process group) now, without judging it."""
        proc, self._proc = self._proc, None
        if proc is not None:
            proc.reap()

    def close(self) -> int | None:
        """Close standard input, let the adapter finish, and return its exit status.

        Anything the adapter wrote after its last answer, an exit status other than 0 and
        an adapter that does not exit within the timeout are added to :attr:`faults`.
        """
        proc, self._proc = self._proc, None
        if proc is None:
            return None
        proc.close_input()
        stray: list[bytes] = []
        status: int | None = None
        try:
            while True:
                item = proc.lines.get(timeout=self._timeout)
                if item is _EOF:
                    break
                assert isinstance(item, bytes)
                stray.append(item)
            status = proc.wait(self._timeout)
        except queue.Empty:
            pass
        if stray:
            self.faults.append(
                f"wrote {len(stray)} line(s) nobody asked for {self._after()}, "
                f"the first: {_clip(repr(stray[0]))}"
            )
        tail = proc.stderr_tail()
        if status is None:
            self.faults.append(
                f"did not exit within {self._timeout:g} s after its input closed (killed)"
            )
            proc.reap()
            return None
        proc.reap()
        if status != 0:
            self.faults.append(f"exited with status {status} at the end of the suite{tail}")
        return status
