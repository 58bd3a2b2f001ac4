"""``parley serve`` and ``parley call`` from a terminal (a real child process over stdio).

Private imports: it drives the command line in process through ``parley._cli.main(argv)``:
the CLI's public contract is its argv, output and exit status, which these tests hold (our
decision: no public ``cli`` modules).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from parley._cli import main

from ..listening import listening
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
        deadline = time.monotonic() + 60
        while not listening(proc.pid, port):  # this child, not whoever else took the port
            assert proc.poll() is None, "the server could not listen"
            assert time.monotonic() < deadline, "the server never listened"
            time.sleep(0.05)
        assert main(["call", url, "ask", "shop.search", "--params", '{"query":"mocha"}']) == 0
        assert "mocha" in capsys.readouterr().out
        assert (tmp_path / "state" / "shop.example.sqlite").exists()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        if proc.stderr is not None:
            proc.stderr.close()


@pytest.mark.parametrize("require", ["", "1"])
def test_http_tests_skip_without_uvicorn_unless_required(
    monkeypatch: pytest.MonkeyPatch, require: str
) -> None:
    # A uvicorn that cannot be imported (None in sys.modules makes `import uvicorn` raise
    # ImportError) stands for a machine without the http extra; the real HTTP test is run
    # in this process (a pytest child process cost seconds and proved nothing more).
    from .test_runtime_transports import test_over_http_bridge

    monkeypatch.setitem(sys.modules, "uvicorn", None)
    monkeypatch.setenv("PP_REQUIRE_UVICORN", require)
    if require:
        with pytest.raises(pytest.fail.Exception) as failed:
            test_over_http_bridge()
        assert "PP_REQUIRE_UVICORN=1 but uvicorn is missing" in str(failed.value)
    else:
        with pytest.raises(pytest.skip.Exception) as skipped:
            test_over_http_bridge()
        assert "principal-protocols[http]" in str(skipped.value)


def test_serve_http_without_uvicorn_names_the_extra(tmp_path: Path) -> None:
    shadow = tmp_path / "shadow" / "uvicorn"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('no http extra here')\n")
    env = {**os.environ, "PYTHONPATH": str(shadow.parent), "PARLEY_HOME": str(tmp_path)}
    argv = ["serve", "http://127.0.0.1:1/", "--app", f"{SHOP_FILE}:build_service"]
    done = subprocess.run(
        [sys.executable, "-m", "parley", *argv, "--state", ":memory:"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert "pip install 'principal-protocols[http]'" in done.stderr


def test_keygen_key_intent_then_commit_by_id(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import parley

    monkeypatch.setenv("PARLEY_HOME", str(tmp_path))
    assert main(["keygen"]) == 0
    agent = capsys.readouterr().out.strip()
    token = parley.mint_grant(
        PRINCIPAL,
        agent,
        [{"svc": ["shop.example"]}, {"per": {"max": 2000, "currency": "USD"}}, {"risk": "low"}],
        iat=int(time.time()),
        nonce="cli",
    )
    url = (
        f"stdio:{sys.executable} -m parley serve stdio: --app {SHOP_FILE}:build_service"
        f" --trust {PRINCIPAL.public}"
    )
    # a throwaway key: the CLI says its proposals can never be committed
    assert main(["call", url, "intent", "shop.order", "--params", '{"item":"latte"}']) == 0
    assert "can never be committed" in capsys.readouterr().err
    auth = ["--key", "agent", "--grant", token]
    intent = ["call", url, "intent", "shop.order", "--params", '{"item":"latte"}', "--json"]
    assert main([*intent, *auth]) == 0
    out, err = capsys.readouterr()
    assert "never be committed" not in err
    proposal = json.loads(out.splitlines()[-1])["proposals"][0]
    # the next process finds the proposal by id (the state outlived the first server)
    assert main(["call", url, "commit", proposal["id"], *auth, "--json"]) == 0
    receipt = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert (receipt["kind"], receipt["receipt"]["proposal"]) == ("RECEIPT", proposal["id"])
    # the key file of keygen is a seed file too: the same key, so a replay
    seed_file = tmp_path / "keys" / "agent.json"
    argv = ["call", url, "commit", proposal["id"], "--seed-file", str(seed_file)]
    assert main([*argv, "--grant", token, "--json"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["replay"] is True
    assert main(["call", url, "commit", "p_unknown", *auth]) == 1
    assert "last parley call intent" in capsys.readouterr().err
