"""How the two servers start and stop (docs/cli.md), as real processes on loopback.

``pxp serve`` and ``parley serve`` (TCP and HTTP) run as the installed console scripts.
Ctrl-C is typed on a real pseudo-terminal that is the server's controlling terminal, so
the kernel's line discipline sends SIGINT to the server's process group as a terminal
does; SIGTERM is sent as a supervisor (systemd, Docker) sends it.
"""

from __future__ import annotations

import fcntl
import importlib.util
import json
import os
import pty
import re
import select
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

TOP = Path(__file__).resolve().parents[1]

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


def _announced(running: Running, pattern: str) -> tuple[int, list[str]]:
    """Read the server's standard error until a line matches ``pattern`` (its group 1 is
    the port); return that port and the lines read."""
    lines: list[str] = []
    pending = b""
    stream = running.proc.stderr
    assert stream is not None
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ready, _, _ = select.select([stream], [], [], 0.2)
        if not ready:
            assert running.proc.poll() is None, lines
            continue
        chunk = os.read(stream.fileno(), 4096)
        assert chunk, f"the server ended: {lines}"
        pending += chunk
        *complete, pending = pending.split(b"\n")
        for raw in complete:
            line = raw.decode("utf-8", "replace")
            lines.append(line)
            found = re.search(pattern, line)
            if found:
                return int(found.group(1)), lines
    raise AssertionError(f"no line matched {pattern!r}: {lines}")


ANNOUNCED = {
    "pxp": r"^pxp: MCP endpoint http://127\.0\.0\.1:(\d+)/mcp ",
    "parley-tcp": r"^serving \S+ at parley://127\.0\.0\.1:(\d+) ",
    "parley-http": r"^serving \S+ at http://127\.0\.0\.1:(\d+)/ ",
}


@pytest.fixture(params=sorted(SERVERS))
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Running]:
    name = request.param
    extras, argv = SERVERS[name]
    _needs(*extras)
    # port 0 and the port the server announces: no probed port another process can take
    running = Running(argv(0, tmp_path), tmp_path)
    try:
        port, _ = _announced(running, ANNOUNCED[name])
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


@pytest.mark.parametrize("name", ["pxp", "parley-http"])
def test_sigterm_stops_a_server_a_client_holds_a_request_open_on(name: str, tmp_path: Path) -> None:
    """Review i24 cli #5: a client that sent half a request kept uvicorn waiting for it with
    no deadline, so SIGTERM never stopped the server; shutdown now waits a bounded grace."""
    extras, argv = SERVERS[name]
    _needs(*extras)
    running = Running(argv(0, tmp_path), tmp_path)
    try:
        port, _ = _announced(running, ANNOUNCED[name])
        running.wait_listening(port)
        with socket.create_connection(("127.0.0.1", port), timeout=10) as held:
            path = "/mcp" if name == "pxp" else "/"
            held.sendall(
                f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{".encode()
            )
            time.sleep(0.5)
            running.proc.send_signal(signal.SIGTERM)
            status, lines = running.finish()
    finally:
        if running.proc.poll() is None:
            running.proc.kill()
            running.proc.wait()
    assert status == 143, lines
    # the request cut short is logged (uvicorn says it cancelled it); no traceback
    assert "Traceback" not in "\n".join(lines), lines
    assert re.fullmatch(r"error: terminated: \S+ stopped by SIGTERM", lines[-1]), lines


@pytest.mark.parametrize("name", sorted(SERVERS))
def test_a_server_on_port_0_announces_the_port_it_bound(name: str, tmp_path: Path) -> None:
    """Review i24 #4: both servers announced ``:0``, an address nobody can reach."""
    extras, argv = SERVERS[name]
    _needs(*extras)
    running = Running(argv(0, tmp_path), tmp_path)
    try:
        port, _ = _announced(running, ANNOUNCED[name])
        # review cli #4: parley bound the scheme's default port (7447, 80) for port 0
        assert port not in (0, 80, 443, 7447, 7448, 8765)
        running.wait_listening(port)  # pxp names its port just before uvicorn binds it
    finally:
        running.type_ctrl_c()
        status, lines = running.finish()
    assert status == 130, lines


@pytest.mark.parametrize("name", ["parley-tcp", "parley-http", "pxp"])
def test_two_servers_on_port_0_at_once_both_start(name: str, tmp_path: Path) -> None:
    """Review cli #4: the second ``parley serve parley://127.0.0.1:0`` collided with the
    first on 7447."""
    extras, argv = SERVERS[name]
    _needs(*extras)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = Running(argv(0, tmp_path / "a"), tmp_path / "a")
    second = Running(argv(0, tmp_path / "b"), tmp_path / "b")
    try:
        ports = [_announced(r, ANNOUNCED[name])[0] for r in (first, second)]
        assert ports[0] != ports[1]
        first.wait_listening(ports[0])
        second.wait_listening(ports[1])
    finally:
        for running in (first, second):
            running.type_ctrl_c()
            status, lines = running.finish()
            assert status == 130, lines


def test_pxp_serve_on_port_0_hands_out_import_links_to_the_bound_port(tmp_path: Path) -> None:
    """Review i24 #4: the links of ``--import`` were built from the requested port 0."""
    _needs("mcp", "uvicorn")
    rooms = TOP / "vectors" / "third_party" / "pxp" / "rooms.v0.json"
    argv = ["pxp", "serve", "--port", "0", "--db", str(tmp_path / "r.sqlite")]
    running = Running([*argv, "--import", str(rooms)], tmp_path)
    try:
        port, lines = _announced(running, ANNOUNCED["pxp"])
        links = [line.split()[-1] for line in lines if line.startswith("  ")]
        assert links, lines
        for link in links:
            assert link.startswith(f"http://127.0.0.1:{port}/"), (link, port)
        running.wait_listening(port)
    finally:
        running.type_ctrl_c()
        running.finish()


def test_pxp_serve_imports_the_room_pxp_simulate_exports(tmp_path: Path) -> None:
    """Our own export was refused: ``pxp simulate`` named its room ``sim-shop-rebuild``,
    an id the import refuses (room ids in links are letters and digits)."""
    _needs("mcp", "uvicorn")
    export = tmp_path / "sim.json"
    made = subprocess.run(
        [*_script("pxp"), "simulate", "--export", str(export)],
        cwd=tmp_path,
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert made.returncode == 0, made.stderr.decode()
    room_id = json.loads(export.read_text(encoding="utf-8"))["id"]
    argv = ["pxp", "serve", "--port", "0", "--db", str(tmp_path / "r.sqlite")]
    running = Running([*argv, "--import", str(export)], tmp_path)
    try:
        port, lines = _announced(running, ANNOUNCED["pxp"])
        assert f"pxp: imported room {room_id}; its links (shown once):" in lines, lines
        links = [line.split()[-1] for line in lines if line.startswith("  ")]
        assert len(links) == 4, lines
        assert all(f"127.0.0.1:{port}/" in link and room_id in link for link in links), links
        running.wait_listening(port)
    finally:
        running.type_ctrl_c()
        status, _ = running.finish()
    assert status == 130


def test_pxp_serve_that_loses_its_port_race_leaves_no_store(tmp_path: Path) -> None:
    """Another program binds the port the moment ``pxp serve`` has created its room store
    (the store used to come between the check of the port and the server's bind): the
    server must hold its port by then and serve, or, having lost it, end with
    ``listen_failed`` and leave no store behind."""
    _needs("mcp", "uvicorn")
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    store = tmp_path / "r.sqlite"
    running = Running(["pxp", "serve", "--port", str(port), "--db", str(store)], tmp_path)
    thief = socket.socket()
    try:
        deadline = time.monotonic() + 120
        while not store.exists():
            assert running.proc.poll() is None, running.proc.communicate()[1].decode()
            assert time.monotonic() < deadline, "no store was created"
            time.sleep(0.001)
        try:
            thief.bind(("127.0.0.1", port))
        except OSError:
            stolen = False  # the server held its port before it made its store
        else:
            stolen = True
            thief.listen()
        if stolen:
            status, lines = running.finish()
            assert status == 1, lines
            assert lines[-1].startswith("error: listen_failed: "), lines
            assert not list(tmp_path.glob("r.sqlite*")), lines
        else:
            running.wait_listening(port)
            running.type_ctrl_c()
            status, lines = running.finish()
            assert status == 130, lines
    finally:
        thief.close()
        if running.proc.poll() is None:
            running.proc.kill()
            running.proc.wait()


class _Piped:
    """A server whose standard input is a file (``--import -``); stderr is piped."""

    def __init__(self, argv: list[str], cwd: Path, stdin: Path) -> None:
        with stdin.open("rb") as source:
            self.proc = subprocess.Popen(
                [*_script(argv[0]), *argv[1:]],
                cwd=cwd,
                stdin=source,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                env={**os.environ, "HOME": str(cwd)},
            )


@pytest.mark.parametrize("source", ["stdin", "fifo"])
def test_pxp_serve_imports_from_stdin_or_a_fifo_read_once(tmp_path: Path, source: str) -> None:
    """Review cli #2: ``--import -`` and ``--import <(cmd)`` were read twice (a rehearsal,
    then the import): empty the second time, so a valid export was refused and the store
    left behind."""
    _needs("mcp", "uvicorn")
    rooms = TOP / "vectors" / "third_party" / "pxp" / "rooms.v0.json"
    argv = ["pxp", "serve", "--port", "0", "--db", str(tmp_path / "r.sqlite"), "--import"]
    if source == "stdin":
        running = _Piped([*argv, "-"], tmp_path, rooms)
    else:
        fifo = tmp_path / "rooms.fifo"
        os.mkfifo(fifo)
        running = _Piped([*argv, str(fifo)], tmp_path, Path(os.devnull))
        with fifo.open("wb") as writer:  # blocks until the server opens it
            writer.write(rooms.read_bytes())
    try:
        _, lines = _announced(running, ANNOUNCED["pxp"])  # type: ignore[arg-type]
        assert [line for line in lines if line.startswith("  ")], lines
    finally:
        running.proc.send_signal(signal.SIGINT)
        _, err = running.proc.communicate(timeout=60)
    assert running.proc.returncode == 130, err
