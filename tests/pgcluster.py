"""A throwaway PostgreSQL cluster for the tests: ``initdb`` + ``pg_ctl`` on a temp folder.

The server listens on a Unix socket in its own folder only (no TCP port, so parallel runs
never collide). As root (CI runs as root) ``initdb`` refuses to run, so the cluster is
created and started as the ``postgres`` system user (``runuser -u postgres --``), its
folder owned by that user. Each test gets a fresh database (``CREATE DATABASE … TEMPLATE
template0``), dropped after it. The session stops the cluster (``pg_ctl stop``, then
SIGKILL of the postmaster if it lingers) so no server process outlives the run.

Absent binaries or psycopg make the PostgreSQL tests skip with the reason;
``PP_REQUIRE_POSTGRES=1`` (set by ``.ci/run``) turns that skip into a failure.
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

__all__ = ["Cluster", "find_bindir", "require_postgres", "start_cluster"]


def find_bindir() -> Path | None:
    """Where ``initdb``/``pg_ctl`` live: ``pg_config --bindir``, else Debian's versioned folder."""
    candidates: list[str] = []
    pg_config = shutil.which("pg_config")
    if pg_config:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            out = subprocess.run(
                [pg_config, "--bindir"], capture_output=True, text=True, timeout=20, check=True
            )
            candidates.append(out.stdout.strip())
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    for folder in candidates:
        if folder and all((Path(folder) / tool).is_file() for tool in ("initdb", "pg_ctl")):
            return Path(folder)
    return None


def require_postgres(reason: str) -> None:
    """Skip with ``reason``, or fail when ``PP_REQUIRE_POSTGRES=1``."""
    if os.environ.get("PP_REQUIRE_POSTGRES") == "1":
        pytest.fail(f"PP_REQUIRE_POSTGRES=1 but the PostgreSQL tests cannot run: {reason}")
    pytest.skip(f"PostgreSQL tests skipped: {reason}")


class Cluster:
    """A running throwaway cluster: make databases, hand out their URLs, stop it."""

    def __init__(
        self, bindir: Path, root: Path, as_postgres: bool, *, durable: bool = False
    ) -> None:
        self.bindir = bindir
        self.root = root
        self.data = root / "data"
        self.socket = root / "sock"
        self.as_postgres = as_postgres
        self.durable = durable
        self.user = "postgres"
        self._names = itertools.count(1)
        self.pid: int | None = None
        self._watchdog: subprocess.Popen[bytes] | None = None

    def _run(self, *argv: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        cmd = [str(self.bindir / argv[0]), *argv[1:]]
        if self.as_postgres:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        return subprocess.run(
            cmd, capture_output=True, text=True, timeout=timeout, check=False, cwd=self.root
        )

    def url(self, database: str = "postgres") -> str:
        """A libpq URL of ``database`` over the cluster's Unix socket."""
        return f"postgresql:///{database}?host={self.socket}&user={self.user}"

    def start(self) -> None:
        """``initdb`` and ``pg_ctl start`` (durability off unless ``durable``: the data is
        thrown away; the benchmark keeps it on, to compare like with like)."""
        self.socket.mkdir()
        if self.as_postgres:
            shutil.chown(self.root, "postgres", "postgres")
            shutil.chown(self.socket, "postgres", "postgres")
        done = self._run(
            "initdb", "-D", str(self.data), "-U", self.user, "--auth=trust", "-E", "UTF8",
            "--no-sync", "--locale=C",
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"initdb failed: {done.stderr.strip()[-600:]}")
        options = (
            f"-c listen_addresses='' -c unix_socket_directories='{self.socket}'"
            " -c max_connections=200 -c shared_buffers=32MB"
        )
        if not self.durable:
            options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        done = self._run(
            "pg_ctl", "-D", str(self.data), "-l", str(self.root / "server.log"), "-o", options,
            "-w", "-t", "90", "start",
        )  # fmt: skip
        if done.returncode != 0:
            log = (self.root / "server.log").read_text(errors="replace")[-600:]
            raise RuntimeError(f"pg_ctl start failed: {done.stderr.strip()[-300:]} {log}")
        self.pid = int((self.data / "postmaster.pid").read_text().split()[0])
        self._watch()

    def _watch(self) -> None:
        """A watchdog process that stops the cluster if this process dies without doing it
        (killed by a timeout, SIGKILL): no server outlives the test run."""
        stop = [str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop"]
        if self.as_postgres:
            stop = ["runuser", "-u", "postgres", "--", *stop]
        self._watchdog = subprocess.Popen(
            [sys.executable, "-c", _WATCHDOG, str(os.getpid()), json.dumps(stop), str(self.root)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )

    def create_database(self) -> str:
        """A fresh empty database; return its URL."""
        import psycopg

        name = f"t{os.getpid()}_{next(self._names)}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE template0')
        return self.url(name)

    def drop_database(self, url: str) -> None:
        """Drop the database of ``url`` (closing whatever is still connected to it)."""
        import psycopg

        name = url.split("?")[0].rsplit("/", 1)[1]
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def stop(self) -> None:
        """Stop the server; kill the postmaster if it does not go; remove the folder."""
        if self._watchdog is not None:
            self._watchdog.kill()
            self._watchdog.wait(timeout=30)
            self._watchdog = None
        if self.pid is not None:
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop", timeout=60)
            deadline = time.monotonic() + 30
            while _alive(self.pid) and time.monotonic() < deadline:
                time.sleep(0.1)
            if _alive(self.pid):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.pid, signal.SIGKILL)
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.pid, signal.SIGKILL)
            self.pid = None
        shutil.rmtree(self.root, ignore_errors=True)

    def running(self) -> bool:
        """Whether the postmaster is alive."""
        return self.pid is not None and _alive(self.pid)


_WATCHDOG = """
import json, os, shutil, subprocess, sys, time
parent, stop, root = int(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3]
while True:
    try:
        os.kill(parent, 0)
    except ProcessLookupError:
        break
    time.sleep(1)
subprocess.run(stop, capture_output=True, timeout=60, check=False)
shutil.rmtree(root, ignore_errors=True)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie child counts as gone
    with contextlib.suppress(OSError):
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rpartition(")")[2].split()[0] != "Z"
    return True


def start_cluster(*, durable: bool = False) -> Cluster | str:
    """Start a cluster, or return why one cannot be started here."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg is not installed (pip install 'principal-protocols[postgres]')"
    bindir = find_bindir()
    if bindir is None:
        return (
            "no PostgreSQL server binaries (initdb, pg_ctl) were found "
            "(install Debian's postgresql package)"
        )
    as_postgres = os.geteuid() == 0
    if as_postgres:
        if shutil.which("runuser") is None:
            return "running as root and runuser is missing (initdb refuses root)"
        try:
            import pwd

            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and there is no postgres system user (initdb refuses root)"
    root = Path(tempfile.mkdtemp(prefix="pp-pg-"))
    cluster = Cluster(bindir, root, as_postgres, durable=durable)
    try:
        cluster.start()
    except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
        cluster.stop()
        return f"the throwaway cluster did not start: {exc}"
    return cluster
