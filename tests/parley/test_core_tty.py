"""``parley grant`` and ``parley approve`` under a real controlling pseudo-terminal.

The confirmation is typed on ``/dev/tty``; these tests fork the command onto a fresh
pseudo-terminal (``pty.fork`` makes it the child's controlling terminal), wait for the
prompt and type the answer, exactly as a person would (issue 18 #1).
"""

from __future__ import annotations

import json
import os
import pty
import select
import sys
import time
from pathlib import Path

import pytest

import parley

from .orders import order

pytestmark = [
    pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty"),
    pytest.mark.slow,
]

NOW = 1790000000


def _on_pty(argv: list[str], env: dict[str, str], answer: bytes | None) -> tuple[int, str]:
    """Run ``python -m parley argv`` on a new pty; type ``answer`` at the prompt."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: its controlling terminal is the pty
        try:
            os.execve(sys.executable, [sys.executable, "-m", "parley", *argv], env)  # noqa: S606
        finally:
            os._exit(127)
    out = b""
    typed = answer is None
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.5)
            if not ready:
                continue
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            out += chunk
            if not typed and b"Type 'yes'" in out:
                assert answer is not None
                os.write(fd, answer)
                typed = True
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    return os.waitstatus_to_exitcode(status), out.decode("utf-8", "replace")


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    out = dict(os.environ)
    out["PARLEY_HOME"] = str(tmp_path / "agent")
    out["PARLEY_PRINCIPAL_HOME"] = str(tmp_path / "principal")
    return out


def _keygen(env: dict[str, str], *extra: str) -> str:
    code, out = _on_pty(["keygen", *extra], env, None)
    assert code == 0, out
    return out.strip().splitlines()[-1]


def test_grant_signs_after_yes_typed_on_the_terminal(env: dict[str, str]) -> None:
    principal = _keygen(env, "--principal")
    agent = _keygen(env)
    argv = ["grant", "--to", agent, "--svc", "shop.example", "--ttl", "600"]
    code, out = _on_pty(argv, env, b"yes\n")
    assert code == 0, out
    assert f"as {principal}" in out  # the prompt was shown on the terminal
    token = next(w for w in out.split() if w.startswith("pg1."))
    grant = parley.decode_grant(token)
    assert grant.blocks[0].raw_caveats[0] == {"svc": ["shop.example"]}


def test_grant_refused_when_no_is_typed(env: dict[str, str]) -> None:
    _keygen(env, "--principal")
    agent = _keygen(env)
    code, out = _on_pty(["grant", "--to", agent, "--ttl", "60"], env, b"no\n")
    assert code == 1
    assert "not_approved" in out
    assert "pg1." not in out


def test_approve_signs_after_yes_typed_on_the_terminal(env: dict[str, str], tmp_path: Path) -> None:
    principal = _keygen(env, "--principal")
    agent = _keygen(env)
    proposal = order(effects=[], cost=None, risk="high", undo=None)
    consent = parley.consent_request(proposal, service="shop.example", principal=principal)
    path = tmp_path / "consent.json"
    path.write_text(json.dumps(consent), encoding="utf-8")
    argv = ["approve", str(path), "--agent", agent, "--now", str(NOW)]
    code, out = _on_pty(argv, env, b"yes\n")
    assert code == 0, out
    assert "Order 2 coffees" in out
    token = next(w for w in out.split() if w.startswith("pg1."))
    assert parley.decode_grant(token).blocks[0].raw_caveats == parley.grants.consent_caveats(
        consent
    )
