"""The ``stdio:`` transport: a service in a child process, NDJSON on stdin and stdout.

:func:`serve_stdio` is the child's side: it reads frames from stdin, answers each in a
worker thread and writes the replies to stdout (one lock, one request's frames in order).
:func:`connect_stdio` is the parent's: it starts ``stdio:<command line>`` and returns a
:class:`~parley._agent.Client` talking to it; closing the client ends the child.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import BinaryIO

from ._agent import Agent, Client
from ._frames import MAX_FRAME, LineBuffer, error_reply
from ._service import Service
from ._transport_tcp import MAX_INFLIGHT, _encoded, client_over
from .errors import ParleyError

__all__ = ["connect_stdio", "serve_stdio"]


def serve_stdio(
    service: Service,
    stdin: BinaryIO | None = None,
    stdout: BinaryIO | None = None,
    *,
    workers: int = 8,
) -> None:
    """Serve ``service`` on stdin/stdout until stdin closes (blocking)."""
    source = stdin if stdin is not None else sys.stdin.buffer
    sink = stdout if stdout is not None else sys.stdout.buffer
    lock = threading.Lock()
    lines = LineBuffer(limit=MAX_FRAME)
    slots = threading.BoundedSemaphore(MAX_INFLIGHT)  # a flood waits, it is not queued

    def write(frames: list[dict[str, object]]) -> None:
        with lock:
            try:
                for frame in frames:
                    sink.write(_encoded(frame))
                sink.flush()
            except (OSError, ValueError):
                pass

    def run(line: bytes) -> None:
        try:
            write(service.handle(line, emit=lambda frame: write([frame])))
        finally:
            slots.release()

    with ThreadPoolExecutor(max_workers=workers) as pool:
        refused = 0
        while True:
            data = source.read1(64 * 1024) if hasattr(source, "read1") else source.read(65536)
            if not data:
                if lines.rest() is None:  # else: answer a last frame ended by EOF
                    break
                data = b"\n"
            for line in lines.feed(data):
                if line is None:
                    refused += 1
                    message = f"the frame is over the limit of {MAX_FRAME} bytes"
                    write(
                        [error_reply(f"x{refused}", None, "bad_frame", message, reason="too_large")]
                    )
                else:
                    slots.acquire()
                    pool.submit(run, line)


async def connect_stdio(url: str, agent: Agent) -> Client:
    """Start the child of ``stdio:<command line>`` and return a client talking to it."""
    if not url.startswith("stdio:") or not url[6:].strip():
        raise ParleyError(
            "bad_config", "a stdio URL is stdio: followed by a command", reason="bad_url"
        )
    argv = shlex.split(url[6:])
    # the service is the agent's peer: it is not told where the principal's keys are
    env = {k: v for k, v in os.environ.items() if k != "PARLEY_PRINCIPAL_HOME"}
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        limit=64 * 1024,
        env=env,
    )
    assert proc.stdin is not None
    assert proc.stdout is not None

    async def end() -> None:
        try:
            await asyncio.wait_for(proc.wait(), 5)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()

    # The writer is the child's stdin: closing it tells the child to exit.
    return client_over(agent, proc.stdout, proc.stdin, extra_close=end)
