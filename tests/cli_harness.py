"""Run the console scripts as real processes and judge what they print (docs/cli.md).

:class:`Commands` drives ``tests/cli_forkserver.py``: every run is a new process with its
own standard input, output and error, its own exit status and its own signals.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

HERE = Path(__file__).resolve().parent

CODED = re.compile(r"^error: [a-z][a-z0-9_]*(/[a-z][a-z0-9_]*)?: \S.*$")
"""The one line every failure ends with: ``error: <code>[/<reason>]: <sentence>``."""

STATUSES = {0, 1, 2, 130, 141, 143}
"""Every exit status a command may end with (docs/cli.md); 70 is a bug."""


@dataclass(frozen=True)
class Done:
    """One finished run: exit status (negative: killed by that signal) and its output."""

    argv: tuple[str, ...]
    status: int
    stdout: str
    stderr: str
    interrupted: bool

    def problems(self) -> list[str]:
        """What breaks the rules every command keeps; empty when none."""
        found = []
        if self.status not in STATUSES:
            found.append(f"exit status {self.status}")
        for bad in ("Traceback", "Exception ignored", "error: internal:"):
            if bad in self.stderr:
                found.append(f"{bad!r} on stderr")
        lines = self.stderr.splitlines()
        errors = [line for line in lines if line.startswith("error:")]
        coded = len(errors) == 1 and CODED.match(errors[0]) and lines[-1] == errors[0]
        if (self.status in (2, 130, 143) or (self.status == 1 and lines)) and not coded:
            found.append("stderr does not end in one coded 'error: <code>: ...' line")
        if self.status == 130 and "interrupted" not in self.stderr:
            found.append("exit 130 without 'interrupted'")
        if self.status == 143 and "error: terminated: " not in self.stderr:
            found.append("exit 143 without 'terminated'")
        if self.status == 141 and self.stderr:
            found.append("a closed pipe is not quiet")
        if self.status == 1 and not lines and not self.stdout:
            found.append("exit 1 says nothing")
        return found

    def __str__(self) -> str:
        return (
            f"{' '.join(self.argv)!r} -> {self.status}"
            f"{' (after SIGINT)' if self.interrupted else ''}\n"
            f"stderr: {self.stderr[-1500:]!r}\nstdout: {self.stdout[-300:]!r}"
        )


_WAITING = ("pipe", "poll", "select")
"""Kernel wait channels (``/proc/PID/wchan``) of a process waiting on input or a socket."""


def _wchan(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/wchan").read_text()
    except OSError:
        return ""


class Commands:
    """A fork server of the five command lines; :meth:`run` starts one real process."""

    def __init__(self, home: Path) -> None:
        self.home = home
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 (closed by close())
        env = {k: v for k, v in os.environ.items() if k != "PP_TRACEBACK"}
        self._pid: int | None = None
        self._server = subprocess.Popen(
            # -P: the folder of the script (tests/, with its pxp/ and parley/) is not on sys.path
            [sys.executable, "-P", str(HERE / "cli_forkserver.py"), str(theirs.fileno())],
            pass_fds=[theirs.fileno()],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self._log,
            env=env,
        )
        theirs.close()
        self._sock = ours

    def close(self) -> None:
        """Stop the fork server (and a command still running, should a test stop early)."""
        if self._pid is not None:
            with contextlib.suppress(OSError):
                os.kill(self._pid, signal.SIGKILL)
        self._sock.close()
        try:
            self._server.wait(10)
        except subprocess.TimeoutExpired:
            self._server.kill()
            self._server.wait()
        self._log.close()

    def _receive(self, deadline: float) -> dict[str, int]:
        self._sock.settimeout(max(0.01, deadline - time.monotonic()))
        data = self._sock.recv(4096)
        if not data:
            self._log.seek(0)
            raise RuntimeError(f"the fork server died: {self._log.read()[-2000:]!r}")
        value: dict[str, int] = json.loads(data)
        return value

    def run(
        self,
        prog: str,
        *argv: str,
        stdin: bytes | None = b"",
        close_stdout: bool = False,
        interrupt: bool = False,
        timeout: float = 20.0,
    ) -> Done:
        """Run ``prog argv`` in :attr:`home`; ``stdin=None`` leaves standard input open.

        ``interrupt``: send SIGINT once the process waits on its standard input (or after
        ``timeout`` in any case: a command still running then is interrupted, never left).
        """
        with tempfile.TemporaryFile() as out_file, tempfile.TemporaryFile() as err_file:
            status, interrupted = self._run(
                prog, argv, stdin, close_stdout, interrupt, timeout, out_file, err_file
            )
            out_file.seek(0)
            err_file.seek(0)
            done = Done(
                (prog, *argv),
                status,
                out_file.read().decode("utf-8", "replace"),
                err_file.read().decode("utf-8", "replace"),
                interrupted,
            )
        return done

    def _run(
        self,
        prog: str,
        argv: tuple[str, ...],
        stdin: bytes | None,
        close_stdout: bool,
        interrupt: bool,
        timeout: float,
        out_file: IO[bytes],
        err_file: IO[bytes],
    ) -> tuple[int, bool]:
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe() if close_stdout else (-1, os.dup(out_file.fileno()))
        if close_stdout:
            os.close(out_r)
        err_w = os.dup(err_file.fileno())
        if stdin is not None:
            os.write(in_w, stdin)
            os.close(in_w)
        env = {
            "HOME": str(self.home),
            "PARLEY_HOME": str(self.home / "parley"),
            "PARLEY_PRINCIPAL_HOME": str(self.home / "principal"),
            "PXP_AGENT_KEYS": "",
            "PARLEY_AGENT_SEED": "",
        }
        request = {"prog": prog, "argv": list(argv), "cwd": str(self.home), "env": env}
        socket.send_fds(self._sock, [json.dumps(request).encode()], [in_r, out_w, err_w])
        for fd in (in_r, out_w, err_w):
            os.close(fd)
        started = time.monotonic()
        pid = self._pid = self._receive(started + 30)["pid"]
        interrupted = False
        status = -1
        waiting_since = time.monotonic()
        try:
            while True:
                try:
                    status = self._receive(time.monotonic() + 0.02)["status"]
                    break
                except TimeoutError:
                    pass
                now = time.monotonic()
                late = now - started > timeout
                wchan = _wchan(pid)
                if not any(word in wchan for word in _WAITING):
                    waiting_since = now
                # a command that waits on its input, or on the network for long (a
                # server), is interrupted: what it does next is what Ctrl-C does
                waits = (interrupt and "pipe" in wchan) or now - waiting_since > 1.5
                if not interrupted and (late or waits):
                    os.kill(pid, signal.SIGINT)
                    interrupted = True
                    started = time.monotonic()
                elif interrupted and late:
                    os.kill(pid, signal.SIGKILL)
        finally:
            self._pid = None
            if stdin is None:
                os.close(in_w)
        return status, interrupted
