"""``parley serve`` and ``parley call`` from a terminal (a real child process over stdio)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from parley._cli import main

from .runtime_harness import PRINCIPAL, SHOP_FILE


def test_call_over_stdio(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PARLEY_HOME", str(tmp_path))  # the default state goes here
    url = f"stdio:{sys.executable} -m parley serve stdio: --app {SHOP_FILE}:build_service"
    assert main(["call", url, "hello"]) == 0
    assert "# Example Coffee (shop.example)" in capsys.readouterr().out
    assert main(["call", url, "intent", "shop.order", "--params", '{"item":"blend"}']) == 0
    assert capsys.readouterr().out.startswith("? Which blend?")
    status = main(["call", url, "ask", "shop.search", "--params", '{"query": 5}', "--json"])
    assert status == 2
    assert json.loads(capsys.readouterr().out)["code"] == "invalid_params"


def test_serve_over_tcp(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PARLEY_HOME", str(tmp_path))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"parley://127.0.0.1:{port}"
    args = ["serve", url, "--app", f"{SHOP_FILE}:build_service", "--trust", PRINCIPAL.public]
    proc = subprocess.Popen([sys.executable, "-m", "parley", *args], stderr=subprocess.PIPE)
    try:
        assert proc.stderr is not None
        assert b"serving shop.example" in proc.stderr.readline()
        for _ in range(100):
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        assert main(["call", url, "ask", "shop.search", "--params", '{"query":"mocha"}']) == 0
        assert "mocha" in capsys.readouterr().out
        assert (tmp_path / "state" / "shop.example.sqlite").exists()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        if proc.stderr is not None:
            proc.stderr.close()
