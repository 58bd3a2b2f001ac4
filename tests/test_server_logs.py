"""Both servers log each request, refusal and recovery in one line (issue 24 item 6).

``pxp serve`` and ``parley serve`` run as real processes on loopback with
``--log-level info``; the lines are read from their standard error. The library itself
only has a ``NullHandler`` per package.

Private imports: two tests hold ``_ppcli.rules`` itself, the private package every console
script shares: its log line formatter (``_OneLine``) and its filter of the framework's
shutdown noise (``_Shutdown``), on records no live server can be made to produce on demand.
"""

from __future__ import annotations

import asyncio
import http.client
import importlib.util
import logging
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

import parley
from _ppcli.rules import _OneLine, _Shutdown

from .parley.test_runtime_durable import Server, _client, _commit_first, _spend_grant

TOP = Path(__file__).resolve().parents[1]


def _port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _listening(port: int, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the server ended"
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise AssertionError("the server never listened")


def _interrupt(proc: subprocess.Popen[str]) -> list[str]:
    """Ctrl-C the server; return its standard error; it must end with status 130."""
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    lines = err.splitlines()
    assert proc.returncode == 130, err
    assert lines[-1].startswith("error: interrupted: "), err
    assert "Traceback" not in err
    return lines


async def _refused_tool_call(base: str) -> str:
    """Open a room over MCP, then seal a card that is no card: a refused tool call."""
    from .pxp._mcp_harness import call, mcp_client, refused

    async with mcp_client(base) as client:
        room = await call(
            client, "create_room", {"topic": "t", "your_principal": "P", "counterpart": "C"}
        )
        link = str(room["your_link"])
        await refused(client, "seal_intent_card", {"link": link, "card": {"goal": 1}})
    return link


def test_the_library_has_a_null_handler_per_package() -> None:
    for name in ("pxp", "handoff", "vxp", "parley", "ppcheck"):
        __import__(name)
        handlers = logging.getLogger(name).handlers
        assert any(isinstance(h, logging.NullHandler) for h in handlers), name


def test_a_log_line_cannot_be_forged_by_a_peer() -> None:
    record = logging.LogRecord(
        "parley.service", logging.INFO, __file__, 1, "ASK %r -> %s", ("x", "a\nINFO b\x1b[2J"), None
    )
    line = _OneLine("%(levelname)s %(name)s: %(message)s").format(record)
    assert "\n" not in line
    assert "\x1b" not in line
    assert line == "INFO parley.service: ASK 'x' -> a\\x0aINFO b\\x1b[2J"


def _kept(exc: BaseException | None, msg: str = "Exception in 'lifespan' protocol") -> bool:
    exc_info = None if exc is None else (type(exc), exc, None)
    record = logging.LogRecord("uvicorn.error", logging.ERROR, __file__, 1, msg, (), exc_info)
    return _Shutdown().filter(record)


def test_only_a_task_cut_short_by_the_interrupt_leaves_the_framework_log() -> None:
    """Review i24 #3: uvicorn's record of its lifespan task cancelled by a second Ctrl-C is
    dropped; any other error, even one raised while handling a cancellation, is kept."""
    assert not _kept(asyncio.CancelledError())
    assert not _kept(KeyboardInterrupt())
    starlette = "Traceback (most recent call last):\n  File ...\nasyncio.CancelledError\n"
    assert not _kept(None, starlette)
    assert _kept(ValueError("a real failure"))
    late = RuntimeError("cleanup failed")
    late.__context__ = asyncio.CancelledError()
    assert _kept(late)
    assert _kept(None, "Traceback (most recent call last):\n  File ...\nValueError: bad\n")
    assert _kept(None, "[Errno 98] error while attempting to bind on address")


@pytest.mark.slow
def test_pxp_serve_logs_each_request_without_its_link(tmp_path: Path) -> None:
    if importlib.util.find_spec("mcp") is None or importlib.util.find_spec("uvicorn") is None:
        reason = "pxp serve needs the extras principal-protocols[mcp,http]"
        if os.environ.get("PP_REQUIRE_MCP") == "1":
            pytest.fail(f"PP_REQUIRE_MCP=1 but {reason}")
        pytest.skip(reason)
    port = _port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "pxp", "serve", "--port", str(port), "--log-level", "info"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _listening(port, proc)
        secret = "S3cr3tLinkToken0123456789abcdef"
        for path in (f"/p/room1/{secret}?x={secret}", "/"):
            with pytest.raises(urllib.error.HTTPError):
                urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=30)
        link = asyncio.run(_refused_tool_call(f"http://127.0.0.1:{port}"))
        time.sleep(0.3)  # the line is written when the response has gone out
    finally:
        lines = _interrupt(proc)
    text = "\n".join(lines)
    assert secret not in text
    assert link.rsplit("/", 1)[-1] not in text  # the seat link's secret
    assert re.search(r" INFO pxp\.server: refused a tool call: card_invalid$", text, re.M), text
    assert re.search(r" INFO pxp\.server: POST /mcp 200 \d+ ms$", text, re.M), text
    assert re.search(r" INFO pxp\.server: refused GET /p/room1/… 404 \d+ ms$", text, re.M), text
    assert re.search(r" INFO pxp\.server: refused GET / 404 \d+ ms$", text, re.M), text


# The secret in every shape a path can take: a prefix a proxy did not strip, a double slash
# of a hand-typed link, the room id left out, the secret where the room id goes, encoded
# slashes (the server sees them decoded), another case, another route's prefix.
SECRET_PATHS = (
    "//p/r1/{s}",
    "/pxp/p/r1/{s}",
    "/mcp/p/r1/{s}",
    "/x/s/r1/{s}",
    "/p/{s}",
    "/s/{s}",
    "/p/{s}/x",
    "/p//{s}",
    "/P/r1/{s}",
    "/p%2Fr1%2F{s}",
    "/{s}",
    "/room/r1/{s}",
    "/p/r1/{s}/answer",
    "/p/r1/{s}/../../x",
    "/mcp/{s}",
    "/p/r1;{s}",
    "/p/r1/x{s}",
)


@pytest.mark.slow
def test_pxp_serve_logs_no_link_secret_whatever_the_path_shape(tmp_path: Path) -> None:
    """Review i24 #6: only ``/p/<room>/<secret>`` at the start of the path was hidden."""
    if importlib.util.find_spec("mcp") is None or importlib.util.find_spec("uvicorn") is None:
        reason = "pxp serve needs the extras principal-protocols[mcp,http]"
        if os.environ.get("PP_REQUIRE_MCP") == "1":
            pytest.fail(f"PP_REQUIRE_MCP=1 but {reason}")
        pytest.skip(reason)
    port = _port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "pxp", "serve", "--port", str(port), "--log-level", "info"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    secret = secrets.token_urlsafe(32)
    try:
        _listening(port, proc)
        for shape in SECRET_PATHS:
            for method in ("GET", "POST"):
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                try:
                    connection.request(method, shape.format(s=secret))
                    connection.getresponse().read()
                finally:
                    connection.close()
        time.sleep(0.3)  # the line is written when the response has gone out
    finally:
        lines = _interrupt(proc)
    requests = [line for line in lines if " pxp.server: " in line]
    assert len(requests) == 2 * len(SECRET_PATHS), lines
    for part in (secret, secret[:16], secret[-16:]):
        assert part not in "\n".join(lines)
    text = "\n".join(requests)
    assert re.search(r" INFO pxp\.server: refused GET /… 404 \d+ ms$", text, re.M), text


@pytest.mark.slow
def test_pxp_serve_logs_no_request_at_the_default_level(tmp_path: Path) -> None:
    if importlib.util.find_spec("mcp") is None or importlib.util.find_spec("uvicorn") is None:
        pytest.skip("pxp serve needs the extras principal-protocols[mcp,http]")
    port = _port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "pxp", "serve", "--port", str(port)],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _listening(port, proc)
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(f"http://127.0.0.1:{port}/p/room1/x", timeout=30)
    finally:
        lines = _interrupt(proc)
    assert not [line for line in lines if "pxp.server" in line]


@pytest.mark.slow
def test_parley_serve_logs_recovery_requests_and_refusals(tmp_path: Path) -> None:
    token = _spend_grant()
    state = ["--state", f"sqlite:{tmp_path / 'shop.sqlite'}", "--log-level", "info"]
    crashing = Server(tmp_path, state, {"PARLEY_TEST_CRASH": "after_effect"})
    try:
        proposal = asyncio.run(_commit_first(crashing, token))
        assert crashing.killed() == -signal.SIGKILL
    finally:
        crashing.stop()
    server = Server(tmp_path, state)
    try:
        recovered = f" INFO parley.service: recovered commit {proposal['id']!r}: done"
        assert any(line.endswith(recovered) for line in server.log), server.log

        async def talk() -> None:
            client = await _client(server, [token])
            async with client:
                await client.ask("shop.orders")
            stranger = await parley.connect(server.url, parley.Agent(parley.generate_key()))
            async with stranger:
                await stranger.hello()
                refused = await stranger.ask("no.such.capability")
                assert refused.reply is not None
                assert refused.reply["kind"] == "ERROR"

        asyncio.run(talk())
        time.sleep(0.3)
        assert server.proc.stderr is not None
        lines = server.log + _interrupt(server.proc)
    finally:
        server.stop()
    text = "\n".join(lines)
    assert re.search(r" INFO parley\.service: HELLO '[^']+' -> BRIEF \(\d+ ms\)$", text, re.M)
    assert re.search(r" INFO parley\.service: ASK '[^']+' -> ANSWER \(\d+ ms\)$", text, re.M)
    refused = r" INFO parley\.service: ASK '[^']+' -> refused [a-z_]+/[a-z_]+ \(\d+ ms\)$"
    assert re.search(refused, text, re.M), text
    assert token not in text
