"""CLI inputs that used to end in a traceback or a hang get a one-line error (review F7)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from .runtime_harness import ROOT

pytestmark = pytest.mark.slow  # real processes


def _parley(argv: list[str], home: Path) -> subprocess.CompletedProcess[str]:
    """``python -m parley ARGV`` as a child process, bounded (a hang fails, not waits)."""
    env = {"PYTHONPATH": str(ROOT / "src"), "PARLEY_HOME": str(home), "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [sys.executable, "-m", "parley", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
        errors="surrogateescape",
    )


@pytest.mark.parametrize(
    ("argv", "reason"),
    [
        (["call", "http://[::1", "hello"], "bad_url"),
        (["call", "parley://[::1", "hello"], "bad_url"),
        (["serve", "http://[::1", "--state", ":memory:"], "bad_url"),
        (["serve", "parley://999.1.1.1:1", "--state", ":memory:"], "listen"),
        (["serve", "parley://127.0.0.1:0", "--state", ":memory:", "--app", "json:loads"], "app"),
        (["serve", "parley://127.0.0.1:0", "--state", ":memory:", "--trust", "garbage"], "bad_key"),
        (["state", "resolve", "--state", ":memory:", "commit", "\udcff", "--happened"], "bad_id"),
    ],
    ids=[
        "call-ipv6",
        "call-parley-ipv6",
        "serve-ipv6",
        "serve-bad-host",
        "serve-app",
        "trust",
        "id",
    ],
)
def test_bad_cli_input_is_one_error_line(argv: list[str], reason: str, tmp_path: Path) -> None:
    done = _parley(argv, tmp_path)
    assert done.returncode == 1, done.stderr
    last = done.stderr.strip().splitlines()[-1]  # after `serve`'s :memory: warning
    assert last.startswith("error: "), done.stderr
    assert reason in last, done.stderr
    assert "Traceback" not in done.stderr


def test_call_gives_up_on_a_peer_that_never_replies(tmp_path: Path) -> None:
    # `cat` echoes the HELLO back as a request, never a reply: the call used to wait forever
    done = _parley(["call", "stdio:cat", "hello", "--timeout", "1"], tmp_path)
    assert done.returncode == 1, done.stderr
    assert "timeout" in done.stderr
    assert "Traceback" not in done.stderr
