"""``python -m parley serve`` as a child process, for the tests that kill and restart servers.

The durable-state tests (``test_runtime_durable.py``) and the PostgreSQL replica tests
(``test_runtime_replicas.py``) run real servers on loopback and SIGKILL them;
``tests/parley/conftest.py`` gives each test a ``servers`` list that is killed at the end.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..listening import listening
from .runtime_harness import PRINCIPAL, ROOT


def _port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class ServeProcess:
    """``python -m parley serve URL --trust PRINCIPAL --app APP:build_service ARGS``.

    ``home`` is its ``PARLEY_HOME``; ``env`` is added to the environment. The port is probed
    free, then handed to the child, so another process can take it in between (more likely
    with pytest -n running tests side by side): a child that ends because the address is
    in use is started again on another port.
    """

    def __init__(
        self,
        home: Path,
        app: Path,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.log: list[str] = []
        for _ in range(5):
            try:
                if self._start(home, app, args, env or {}):
                    return
            except BaseException:
                if hasattr(self, "proc"):
                    self.stop()  # a child that failed to start is reaped, never left running
                raise
        raise AssertionError(f"no free port after 5 tries: {self.log}")

    def _start(self, home: Path, app: Path, args: Sequence[str], env: Mapping[str, str]) -> bool:
        self.port = _port()
        self.url = f"parley://127.0.0.1:{self.port}"
        argv = [sys.executable, "-m", "parley", "serve", self.url, "--trust", PRINCIPAL.public]
        argv += ["--app", f"{app}:build_service", *args]
        full = {**os.environ, "PARLEY_HOME": str(home), "PYTHONPATH": str(ROOT / "src"), **env}
        self.proc = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, env=full)
        self.log = []
        assert self.proc.stderr is not None
        while True:
            line = self.proc.stderr.readline()
            assert line, f"the server ended: {self.log}"
            self.log.append(line.strip())
            if line.startswith("serving"):
                break
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:  # it could not listen
                self.log += [line.strip() for line in self.proc.stderr]
                self.proc.stderr.close()
                assert any("in use" in line for line in self.log), self.log
                return False
            if listening(self.proc.pid, self.port):  # this child, not whoever took the port
                return True
            time.sleep(0.025)
        raise AssertionError("the server never listened")

    def killed(self) -> int:
        """Wait for the process to end (it kills itself, or was killed); return its status."""
        try:
            return self.proc.wait(timeout=60)
        finally:
            if self.proc.stderr is not None:
                self.proc.stderr.close()

    def stop(self) -> None:
        """SIGKILL the server (no clean shutdown) and reap it."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.killed()
