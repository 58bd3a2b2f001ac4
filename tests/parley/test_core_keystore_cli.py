"""Principal key isolation, key stores and the authorization-core CLI subcommands.

Private imports: it drives the command line in process through ``parley._cli.main(argv)``:
the CLI's public contract is its argv, output and exit status, which these tests hold (our
decision: no public ``cli`` modules). It replaces the terminal prompt
(``parley._cli_core._tty_confirm``) and opens the principal key store behind ``parley keygen
--principal``, ``grant`` and ``approve`` (``parley._keystore.PrincipalKeyStore``),
deliberately not public: the principal's key stays with the command line, away from agent
code.
"""

from __future__ import annotations

import base64
import io
import json
import os
import stat
import subprocess
import sys
import unicodedata
from pathlib import Path
from typing import Any

import pytest

import parley
from parley import _cli, _cli_core
from parley._keystore import PrincipalKeyStore

from .orders import order

NOW = 1790000000
P = parley.key_from_seed(b"\x01" * 32)
A = parley.key_from_seed(b"\x02" * 32)
# a small-order key (the identity point): anyone can "sign" for it, so it is refused
WEAK = "ed25519:" + base64.urlsafe_b64encode(bytes([1]) + bytes(31)).rstrip(b"=").decode()


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
    proposal = order(effects=[], cost=None, risk="high", undo=None)
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


# -------------------------------- the principal's side: approval prompts, key files


A = parley.key_from_seed(b"\x02" * 32)
SPOOF = "Order 2 coffees\x1b[2K\r  service    shop.example\n\u202eevil\u2028\x9b31m"


def _spoofed_consent(principal: str) -> dict[str, Any]:
    proposal = {
        "id": "p_1\x1b[8m",
        "capability": "bank.transfer\r",
        "summary": SPOOF,
        "effects": [],
        "cost": None,
        "risk": "high",
        "undo": None,
        "expires": NOW + 600,
    }
    return parley.consent_request(proposal, service="evil.example\x07", principal=principal)


def test_consent_text_cannot_rewrite_the_approval_prompt(homes: tuple[Path, Path]) -> None:
    store = PrincipalKeyStore()
    principal = store.create("principal")
    prompts: list[str] = []
    token = store.approve(
        _spoofed_consent(principal),
        A.public,
        confirm=lambda p: prompts.append(p) or True,
        iat=NOW,
    )
    (prompt,) = prompts
    lines = prompt.split("\n")
    assert len(lines) == 6  # the service cannot add or hide a line
    assert lines[1] == "  service    evil.example\\u0007"
    bad = [c for c in prompt if c != "\n" and unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp")]
    assert bad == []
    assert "\\u001b[2K\\u000d" in prompt
    assert "\\u202eevil\\u2028\\u009b31m" in prompt
    # the grant itself still binds the exact strings of the consent
    caveats = parley.inspect_grant(token)["blocks"][0]["caveats"]
    assert {"svc": ["evil.example\x07"]} in caveats


IDENTITY = bytes([1]) + bytes(31)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _key_text(raw: bytes) -> str:
    return "ed25519:" + _b64(raw)


WEAK = _key_text(IDENTITY)


def test_approval_checks_the_agent_key_before_prompting(homes: tuple[Path, Path]) -> None:
    store = PrincipalKeyStore()
    principal = store.create("principal")
    prompts: list[str] = []
    consent = _spoofed_consent(principal)
    for bad_agent in ("ed25519:AAAA\n  looks fine", WEAK):
        with pytest.raises(parley.ParleyError) as caught:
            store.approve(consent, bad_agent, confirm=lambda p: prompts.append(p) or True, iat=NOW)
        assert caught.value.reason == "bad_key"
        with pytest.raises(parley.ParleyError):
            store.mint(bad_agent, [], confirm=lambda p: prompts.append(p) or True, iat=NOW)
    with pytest.raises(parley.ParleyError) as caught:
        store.mint(A.public, [{"risk": "toString"}], confirm=lambda p: True, iat=NOW)
    assert caught.value.reason == "caveat_malformed"
    assert prompts == []  # nothing was shown for a request that could not be signed


def test_symlinked_key_files_are_refused(homes: tuple[Path, Path], tmp_path: Path) -> None:
    agent_home, _ = homes
    store = parley.keys.AgentKeyStore()
    store.create("real")
    link = agent_home / "keys" / "agent.json"
    os.symlink(agent_home / "keys" / "real.json", link)
    with pytest.raises(parley.ParleyError) as caught:
        store.key("agent")
    assert caught.value.reason == "key_store_permissions"
    assert store.key("real").public == store.public("real")


def test_principal_store_refuses_the_agent_folder(
    homes: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    agent_home, _ = homes
    for home in (agent_home, agent_home / "principal", agent_home.parent):
        with pytest.raises(parley.ParleyError) as caught:
            PrincipalKeyStore(home)
        assert caught.value.reason == "principal_key_isolation"
    monkeypatch.setenv("PARLEY_PRINCIPAL_HOME", str(agent_home / "p"))
    with pytest.raises(parley.ParleyError):
        PrincipalKeyStore()


P = parley.key_from_seed(b"\x01" * 32)


def test_inspect_output_escapes_terminal_controls(
    homes: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    from parley import _cli

    token = parley.mint_grant(P, A.public, [{"can": ["shop.\x9b2J\u202e*"]}], iat=NOW, nonce="n")
    assert _cli.main(["inspect", token]) == 0
    out = capsys.readouterr().out
    assert "\x9b" not in out
    assert "\u202e" not in out
    assert "\\u009b2J\\u202e" in out


def test_key_store_io_errors_are_parley_errors(homes: tuple[Path, Path], tmp_path: Path) -> None:
    in_the_way = tmp_path / "a-file"
    in_the_way.write_text("x", encoding="utf-8")
    for home in (in_the_way, in_the_way / "below", Path("/dev/null/x")):
        with pytest.raises(parley.ParleyError) as caught:
            parley.keys.AgentKeyStore(home).create("agent")
        assert caught.value.reason == "key_store"
    with pytest.raises(parley.ParleyError) as caught:
        parley.keys.AgentKeyStore().create("agent", "not a key")  # type: ignore[arg-type]
    assert caught.value.reason == "key_store"


def test_an_existing_shared_folder_is_refused_not_re_moded(
    homes: tuple[Path, Path], tmp_path: Path
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)  # noqa: S103 - like /tmp, the folder under test
    with pytest.raises(parley.ParleyError) as caught:
        parley.keys.AgentKeyStore(shared).create("agent")
    assert caught.value.reason == "key_store_permissions"
    assert shared.stat().st_mode & 0o7777 == 0o1777
    assert not (shared / "keys").exists()


def test_approve_with_the_proposal_checks_the_hash_and_shows_the_effects(
    homes: tuple[Path, Path],
) -> None:
    store = PrincipalKeyStore()
    principal = store.create("principal")
    proposal = order(effects=[{"op": "charge", "target": "card\x1b[2K", "to": 1250}], risk="medium")
    consent = parley.consent_request(proposal, service="shop.example", principal=principal)
    prompts: list[str] = []

    def confirm(prompt: str) -> bool:
        prompts.append(prompt)
        return True

    # a consent whose hash is not the hash of the proposal shown is refused unprompted
    swapped = {**proposal, "effects": [{"op": "charge", "target": "card", "to": 99999}]}
    with pytest.raises(parley.ParleyError) as caught:
        store.approve(consent, A.public, confirm=confirm, iat=NOW, proposal=swapped)
    assert caught.value.reason in ("consent_mismatch", "hash_mismatch")
    assert prompts == []
    token = store.approve(consent, A.public, confirm=confirm, iat=NOW, proposal=proposal)
    (prompt,) = prompts
    assert '  effect     {"op": "charge", "target": "card\\u001b[2K", "to": 1250}' in prompt
    assert '  cost       {"amount": 1250, "currency": "USD"}' in prompt
    assert "  risk       medium" in prompt
    assert {"only": consent["hash"]} in parley.inspect_grant(token)["blocks"][0]["caveats"]


# namedtuple's public API is spelled with a leading underscore; os/sys name their own
_UNDERSCORE_API = {"_replace", "_asdict", "_fields", "_make", "_exit", "_getframe"}


def test_the_command_line_reaches_into_no_private_member() -> None:
    """``parley keygen`` took back a key through the key store's private ``_file()``: the
    command line uses what the store offers, not what it keeps to itself."""
    import ast

    top = Path(__file__).resolve().parents[2] / "src" / "parley"
    found = []
    for path in sorted(top.glob("_cli*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Attribute)
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and node.attr not in _UNDERSCORE_API
                and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
            ):
                found.append(f"{path.name}:{node.lineno}: .{node.attr}")
    assert found == []
