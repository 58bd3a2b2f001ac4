"""Talking to an adapter executable over the harness protocol (docs/conformance.md).

An adapter is started once per suite; it reads one JSON request per line on standard input
and answers one JSON line per request on standard output, in order. This module owns the
child process: it sends a request, waits for the answer up to a per-case timeout, and
restarts the adapter after it crashed or hung, so one bad case never hides the others.
"""

from __future__ import annotations

import contextlib
import json
import queue
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import IO, Any

from jsonschema import Draft202012Validator

from ._vectors import data_root

__all__ = ["Adapter", "AdapterError", "Answer"]


class AdapterError(Exception):
    """The adapter broke the harness protocol or died; the message says how."""


@dataclass(frozen=True)
class Answer:
    """The adapter's answer to one request: the response object, or a fault sentence."""

    response: dict[str, Any] | None
    fault: str | None = None


def _response_validator() -> Draft202012Validator:
    schema = json.loads(
        (data_root()[1] / "conformance" / "response.schema.json").read_text(encoding="utf-8")
    )
    return Draft202012Validator(schema)


_EOF = object()


class Adapter:
    """One adapter process for one suite, restarted on demand after a fault."""

    def __init__(self, argv: Sequence[str], *, timeout: float) -> None:
        self._argv = list(argv)
        self._timeout = timeout
        self._proc: subprocess.Popen[bytes] | None = None
        self._lines: queue.Queue[object] = queue.Queue()
        self._stderr: IO[bytes] | None = None
        self._validator = _response_validator()

    def _start(self) -> subprocess.Popen[bytes]:
        # Kept open for the life of the process; closed in _kill.
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115
        try:
            proc = subprocess.Popen(
                self._argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
            )
        except OSError as exc:
            raise AdapterError(f"cannot start the adapter {self._argv[0]!r}: {exc}") from exc
        lines: queue.Queue[object] = queue.Queue()
        stdout = proc.stdout
        assert stdout is not None

        def pump() -> None:
            for raw in stdout:
                lines.put(raw)
            lines.put(_EOF)

        threading.Thread(target=pump, daemon=True).start()
        self._lines = lines
        self._proc = proc
        return proc

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        self._stderr.seek(0)
        tail = self._stderr.read()[-600:].decode("utf-8", "replace").strip()
        return f"; its stderr ends: {tail}" if tail else ""

    def _kill(self) -> None:
        if self._proc is not None:
            if self._proc.poll() is None:
                self._proc.kill()
            self._proc.wait()
            for stream in (self._proc.stdin, self._proc.stdout):
                if stream is not None:
                    stream.close()
            self._proc = None
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def ask(self, request: dict[str, Any]) -> Answer:
        """Send one request; return the validated response or a fault (never raises it)."""
        proc = self._proc if self._proc is not None and self._proc.poll() is None else None
        if proc is None:
            self._kill()
            try:
                proc = self._start()
            except AdapterError as exc:
                return Answer(None, str(exc))
        assert proc.stdin is not None
        line = json.dumps(request, ensure_ascii=True, separators=(",", ":")) + "\n"
        try:
            proc.stdin.write(line.encode("utf-8"))
            proc.stdin.flush()
        except (BrokenPipeError, OSError):
            return self._died("while reading the request")
        try:
            raw = self._lines.get(timeout=self._timeout)
        except queue.Empty:
            self._kill()
            return Answer(None, f"no answer within {self._timeout:g} s (adapter restarted)")
        if raw is _EOF:
            return self._died("before answering")
        assert isinstance(raw, bytes)
        try:
            response = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            self._kill()
            return Answer(None, f"answered a line that is not JSON: {raw[:200]!r}")
        errors = sorted(self._validator.iter_errors(response), key=lambda e: list(e.path))
        if errors:
            return Answer(None, f"answered a malformed response: {errors[0].message}")
        if response.get("id") != request["id"]:
            self._kill()
            return Answer(None, f"answered id {response.get('id')!r} to request {request['id']!r}")
        return Answer(response)

    def _died(self, when: str) -> Answer:
        code = self._proc.wait() if self._proc is not None else None
        tail = self._stderr_tail()
        self._kill()
        return Answer(None, f"the adapter exited with status {code} {when}{tail}")

    def close(self) -> int | None:
        """Close standard input, let the adapter finish, and return its exit status."""
        if self._proc is None:
            return None
        proc = self._proc
        if proc.stdin is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()
        try:
            status = proc.wait(timeout=self._timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            status = proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
        self._proc = None
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None
        return status
