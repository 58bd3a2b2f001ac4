"""Principal key isolation, key stores and the authorization-core CLI subcommands."""

from __future__ import annotations

import io
import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import parley
from parley import _cli, _cli_core
from parley._keystore import PrincipalKeyStore

NOW = 1790000000


@pytest.fixture
def homes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    agent, principal = tmp_path / "agent", tmp_path / "principal"
    monkeypatch.setenv("PARLEY_HOME", str(agent))
    monkeypatch.setenv("PARLEY_PRINCIPAL_HOME", str(principal))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return agent, principal


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = _cli.main(argv)
    out, err = capsys.readouterr()
    return code, out.strip(), err.strip()


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_keygen_writes_private_files(homes: tuple[Path, Path], capsys: Any) -> None:
    agent_home, principal_home = homes
    code, principal, _ = run(["keygen", "--principal"], capsys)
    assert code == 0
    assert principal.startswith("ed25519:")
    code, agent, _ = run(["keygen"], capsys)
    assert code == 0
    assert agent != principal
    for home in (agent_home, principal_home):
        assert _mode(home) == 0o700
        assert _mode(home / "keys") == 0o700
        for file in (home / "keys").iterdir():
            assert _mode(file) == 0o600
    assert run(["keygen"], capsys)[0] == 1  # never overwrites a key


def test_loose_permissions_are_refused(homes: tuple[Path, Path]) -> None:
    agent_home, _ = homes
    store = parley.keys.AgentKeyStore()
    store.create("agent")
    os.chmod(agent_home / "keys" / "agent.json", 0o644)
    with pytest.raises(parley.ParleyError) as caught:
        store.key()
    assert caught.value.reason == "key_store_permissions"


def test_agent_side_api_cannot_reach_the_principal_key(
    homes: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, principal_home = homes
    principal = PrincipalKeyStore()
    public = principal.create("principal")
    # The agent-side store refuses the principal folder, inside it, or around it ...
    for home in (principal_home, principal_home / "keys", principal_home.parent):
        with pytest.raises(parley.ParleyError) as caught:
            parley.keys.AgentKeyStore(home)
        assert caught.value.reason == "principal_key_isolation"
    # ... and any folder holding a principal store, wherever the environment points.
    monkeypatch.setenv("PARLEY_PRINCIPAL_HOME", str(tmp_path / "elsewhere"))
    with pytest.raises(parley.ParleyError):
        parley.keys.AgentKeyStore(principal_home)
    # The default agent store looks only in its own folder.
    monkeypatch.setenv("PARLEY_PRINCIPAL_HOME", str(principal_home))
    with pytest.raises(parley.ParleyError) as caught:
        parley.keys.AgentKeyStore().key("principal")
    assert caught.value.reason == "key_missing"
    # The principal store is not part of the public API and hands out no key.
    assert "PrincipalKeyStore" not in parley.__all__
    assert not any(
        name.startswith(("load", "key", "seed", "private", "sign")) for name in dir(principal)
    )
    assert principal.public("principal") == public


def test_principal_signing_needs_a_confirmation(homes: tuple[Path, Path]) -> None:
    store = PrincipalKeyStore()
    store.create("principal")
    agent = parley.generate_key().public
    with pytest.raises(parley.ParleyError) as caught:
        store.mint(agent, [], confirm=lambda prompt: False, iat=NOW)
    assert caught.value.reason == "not_approved"
    prompts: list[str] = []
    token = store.mint(
        agent, [{"risk": "low"}], confirm=lambda p: prompts.append(p) or True, iat=NOW
    )
    assert agent in prompts[0]
    assert parley.decode_grant(token).holder == agent


def _consent(principal: str) -> dict[str, Any]:
    proposal = {
        "id": "p_1",
        "capability": "shop.order",
        "summary": "Order 2 coffees",
        "effects": [],
        "cost": None,
        "risk": "high",
        "undo": None,
        "expires": NOW + 600,
    }
    return parley.consent_request(proposal, service="shop.example", principal=principal)


def test_approve_without_a_terminal_is_refused(homes: tuple[Path, Path], tmp_path: Path) -> None:
    principal = PrincipalKeyStore().create("principal")
    consent = tmp_path / "consent.json"
    consent.write_text(json.dumps(_consent(principal)), encoding="utf-8")
    agent = parley.generate_key().public
    done = subprocess.run(
        [sys.executable, "-m", "parley", "approve", str(consent), "--agent", agent],
        input="yes\n",
        capture_output=True,
        text=True,
        check=False,
        start_new_session=True,  # no controlling terminal: piping "yes" must not approve
        env=dict(os.environ),
    )
    assert done.returncode == 1
    assert "interactive terminal" in done.stderr
    assert "pg1." not in done.stdout


def test_approve_with_confirmation(
    homes: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    principal = PrincipalKeyStore().create("principal")
    agent = parley.generate_key().public
    frame = {"kind": "ERROR", "code": "consent_required", "consent": _consent(principal)}
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(frame)))
    seen: list[str] = []
    monkeypatch.setattr(_cli_core, "_tty_confirm", lambda p: seen.append(p) or False)
    code, out, err = run(["approve", "-", "--agent", agent, "--now", str(NOW)], capsys)
    assert code == 1
    assert "not_approved" in err
    assert not out
    assert "shop.example" in seen[0]
    assert "Order 2 coffees" in seen[0]
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(frame)))
    monkeypatch.setattr(_cli_core, "_tty_confirm", lambda p: True)
    code, out, _ = run(["approve", "-", "--agent", agent, "--now", str(NOW)], capsys)
    assert code == 0
    caveats = parley.decode_grant(out).blocks[0].raw_caveats
    assert caveats == parley.grants.consent_caveats(frame["consent"])


def test_grant_delegate_inspect_est(
    homes: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, capsys: Any, tmp_path: Path
) -> None:
    monkeypatch.setattr(_cli_core, "_tty_confirm", lambda p: True)
    _, principal, _ = run(["keygen", "--principal"], capsys)
    _, agent, _ = run(["keygen"], capsys)
    sub = parley.generate_key().public
    code, token, err = run(
        [
            "grant",
            "--to",
            agent,
            "--svc",
            "shop.example",
            "--can",
            "shop.*",
            "--per",
            "5000",
            "--spend",
            "20000",
            "--risk",
            "medium",
            "--ttl",
            "3600",
            "--now",
            str(NOW),
        ],
        capsys,
    )
    assert code == 0, err
    code, child, err = run(
        ["delegate", token, "--to", sub, "--can", "shop.order", "--per", "1000", "--now", str(NOW)],
        capsys,
    )
    assert code == 0, err
    code, out, _ = run(["inspect", child, "--json"], capsys)
    info = json.loads(out)
    assert info["principal"] == principal
    assert info["holder"] == sub
    assert info["signatures"]
    assert {"per": {"max": 1000, "currency": "USD"}} in info["caveats"]
    code, out, _ = run(["inspect", child], capsys)
    assert "valid" in out
    assert "delegation 1" in out
    assert principal in out
    code, _, err = run(["delegate", token, "--to", sub, "--risk", "high"], capsys)
    assert code == 1
    assert "caveat_wider" in err
    text = tmp_path / "t.txt"
    text.write_text("hello world", encoding="utf-8")
    assert run(["est", str(text)], capsys)[1] == "2"
    code, _, err = run(["inspect", "pg1.nope"], capsys)
    assert code == 1
    assert err.startswith("error: unauthorized/bad_token")
