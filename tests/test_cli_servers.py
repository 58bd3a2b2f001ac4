"""How the two servers start and stop (docs/cli.md), as real processes on loopback.

``pxp serve`` and ``parley serve`` (TCP and HTTP) run as the installed console scripts.
Ctrl-C is typed on a real pseudo-terminal that is the server's controlling terminal, so
the kernel's line discipline sends SIGINT to the server's process group as a terminal
does; SIGTERM is sent as a supervisor (systemd, Docker) sends it.
"""

from __future__ import annotations

import fcntl
import importlib.util
import os
import pty
import re
import signal
import socket
import subprocess
import sys
import termios
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from .listening import listening

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not hasattr(os, "fork"), reason="needs a POSIX pty and signals"),
]


def _script(prog: str) -> list[str]:
    found = Path(sys.executable).parent / prog
    return [str(found)] if found.is_file() else [sys.executable, "-m", prog]


def _needs(*modules: str) -> None:
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        reason = f"needs the extras that provide {', '.join(missing)}"
        for name in ("MCP", "UVICORN"):
            if os.environ.get(f"PP_REQUIRE_{name}") == "1":
                pytest.fail(f"PP_REQUIRE_{name}=1 but the server {reason}")
        pytest.skip(reason)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _state(d: Path) -> list[str]:
    return ["--state", f"sqlite:{d / 's.sqlite'}"]


# name -> (extras it needs, argv for a port and a folder)
SERVERS: dict[str, tuple[tuple[str, ...], Callable[[int, Path], list[str]]]] = {
    "pxp": (
        ("mcp", "uvicorn"),
        lambda port, d: ["pxp", "serve", "--port", str(port), "--db", str(d / "rooms.sqlite")],
    ),
    "parley-tcp": (
        (),
        lambda port, d: ["parley", "serve", f"parley://127.0.0.1:{port}", *_state(d)],
    ),
    "parley-http": (
        ("uvicorn",),
        lambda port, d: ["parley", "serve", f"http://127.0.0.1:{port}/", *_state(d)],
    ),
}


def _take_terminal() -> None:  # pragma: no cover - runs in the child
    """In the child, a session leader: make the pty on standard input its terminal."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class Running:
    """A server started on a fresh pty (its controlling terminal); stderr is piped."""

    def __init__(self, argv: list[str], cwd: Path) -> None:
        self.argv = argv
        self.master, slave = pty.openpty()
        env = {k: v for k, v in os.environ.items() if k != "PP_TRACEBACK"}
        env.update(HOME=str(cwd), PARLEY_HOME=str(cwd / "parley"))
        try:
            self.proc = subprocess.Popen(
                [*_script(argv[0]), *argv[1:]],
                cwd=cwd,
                stdin=slave,
                stdout=slave,
                stderr=subprocess.PIPE,
                env=env,
                start_new_session=True,
                preexec_fn=_take_terminal,
            )
        finally:
            os.close(slave)

    def wait_listening(self, port: int) -> None:
        deadline = time.monotonic() + 120
        while not listening(self.proc.pid, port):
            assert self.proc.poll() is None, self.proc.communicate()[1].decode()
            assert time.monotonic() < deadline, "the server never listened"
            time.sleep(0.05)

    def type_ctrl_c(self) -> None:
        os.write(self.master, b"\x03")

    def finish(self) -> tuple[int, list[str]]:
        try:
            _, err = self.proc.communicate(timeout=60)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            os.close(self.master)
        return self.proc.returncode, err.decode("utf-8", "replace").splitlines()


@pytest.fixture(params=sorted(SERVERS))
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Running]:
    name = request.param
    extras, argv = SERVERS[name]
    _needs(*extras)
    port = _free_port()
    running = Running(argv(port, tmp_path), tmp_path)
    try:
        running.wait_listening(port)
        yield running
    finally:
        if running.proc.poll() is None:
            running.proc.kill()
            running.proc.wait()


def _no_traceback(lines: list[str]) -> None:
    text = "\n".join(lines)
    for bad in ("Traceback", "Exception", "ERROR", "CancelledError"):
        assert bad not in text, text


def test_ctrl_c_typed_once_ends_a_server_with_130_and_one_line(
    server: Running,
) -> None:
    running = server
    running.type_ctrl_c()
    status, lines = running.finish()
    assert status == 130, lines
    _no_traceback(lines)
    assert lines[-1].startswith("error: interrupted: "), lines


def test_ctrl_c_typed_twice_during_shutdown_is_still_130_and_one_line(
    server: Running,
) -> None:
    """Review i24 #3: the second Ctrl-C landed while uvicorn shut down its lifespan, which
    logged two tracebacks."""
    running = server
    running.type_ctrl_c()
    time.sleep(0.05)
    running.type_ctrl_c()
    status, lines = running.finish()
    assert status == 130, lines
    _no_traceback(lines)
    assert [line for line in lines if line.startswith("error:")] == [lines[-1]], lines
    assert lines[-1].startswith("error: interrupted: "), lines


def test_sigterm_ends_a_server_with_143_and_one_line(server: Running) -> None:
    """Review i24 #9: systemd, Docker and Kubernetes stop a service with SIGTERM; it ended
    with no line at all (killed by the signal)."""
    running = server
    running.proc.send_signal(signal.SIGTERM)
    status, lines = running.finish()
    assert status == 143, lines
    _no_traceback(lines)
    assert re.fullmatch(r"error: terminated: \S+ stopped by SIGTERM", lines[-1]), lines
    assert [line for line in lines if line.startswith("error:")] == [lines[-1]], lines
