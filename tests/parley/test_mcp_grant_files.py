"""Grants and consents kept in PARLEY_HOME for the MCP bridge: ``--save``, and the files.

``parley grant --save`` and ``parley approve --save`` run on a real pseudo-terminal (the
principal types ``yes``); the token files are checked as key files are.

Private imports: it holds the on-disk layout of the agent's token folders (file names,
modes, sizes, links), the store that ``parley grant --save`` and ``parley approve --save``
write and ``parley mcp`` reads, through its reader and writers in ``parley._grant_files``.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

import parley
from parley._grant_files import MAX_TOKEN, load_tokens, save_pending, save_token

from .runtime_harness import AGENT, PRINCIPAL, grant
from .test_core_tty import _keygen, _on_pty

NOW = 1790000000


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    out = dict(os.environ)
    out["PARLEY_HOME"] = str(tmp_path / "agent")
    out["PARLEY_PRINCIPAL_HOME"] = str(tmp_path / "principal")
    return out


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty")
def test_grant_and_approve_save_into_the_agent_home(env: dict[str, str], tmp_path: Path) -> None:
    principal = _keygen(env, "--principal")
    agent = _keygen(env)
    code, out = _on_pty(
        ["grant", "--to", agent, "--svc", "shop.example", "--ttl", "600", "--save"], env, b"yes\n"
    )
    assert code == 0, out
    token = next(w for w in out.split() if w.startswith("pg1."))
    home = Path(env["PARLEY_HOME"])
    (saved,) = (home / "grants").iterdir()
    assert saved.name == parley.decode_grant(token).id + ".pg"
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600
    assert stat.S_IMODE((home / "grants").stat().st_mode) == 0o700
    assert load_tokens(home, "grants") == [token]

    # the file the bridge writes for the user: the consent and the proposal it showed
    proposal = {
        "id": "p_1",
        "capability": "shop.gift_card",
        "summary": "Send a 50 USD gift card",
        "effects": [{"op": "charge", "target": "card on file", "to": 5000}],
        "cost": {"amount": 5000, "currency": "USD"},
        "risk": "medium",
        "undo": None,
        "expires": NOW + 600,
    }
    proposal["hash"] = parley.proposal_hash(proposal)
    consent = parley.consent_request(proposal, service="shop.example", principal=principal)
    pending = save_pending(home, consent, proposal)
    assert stat.S_IMODE(pending.stat().st_mode) == 0o600
    argv = ["approve", str(pending), "--agent", agent, "--now", str(NOW), "--save"]
    code, out = _on_pty(argv, env, b"yes\n")
    assert code == 0, out
    assert "effect" in out  # the proposal in the file was shown, not only the summary
    assert '"to": 5000' in out
    (consent_file,) = (home / "consents").iterdir()
    assert consent_file.name == proposal["hash"] + ".pg"
    assert stat.S_IMODE(consent_file.stat().st_mode) == 0o600

    # a file whose proposal does not match its consent is refused before anything is shown
    json.loads(pending.read_text())
    lying = {"consent": consent, "proposal": {**proposal, "summary": "A free coffee"}}
    pending.write_text(json.dumps(lying))
    code, out = _on_pty(["approve", str(pending), "--agent", agent, "--now", str(NOW)], env, None)
    assert code == 1
    assert "conflict" in out


def test_token_files_are_refused_like_key_files(tmp_path: Path) -> None:
    home = tmp_path / "agent"
    token = grant()
    path = save_token(home, "grants", token)
    assert load_tokens(home, "grants") == [token]
    assert load_tokens(home, "consents") == []  # no folder: no tokens

    os.chmod(path, 0o644)
    with pytest.raises(parley.ParleyError) as caught:
        load_tokens(home, "grants")
    assert caught.value.reason == "key_store_permissions"
    os.chmod(path, 0o600)

    os.chmod(home / "grants", 0o755)  # noqa: S103 - the mistake under test
    with pytest.raises(parley.ParleyError) as caught:
        load_tokens(home, "grants")
    assert caught.value.reason == "key_store_permissions"
    os.chmod(home / "grants", 0o700)

    link = home / "grants" / "link.pg"
    link.symlink_to(path)
    with pytest.raises(parley.ParleyError) as caught:
        load_tokens(home, "grants")
    assert caught.value.reason == "key_store_permissions"
    link.unlink()

    huge = home / "grants" / "huge.pg"
    fd = os.open(huge, os.O_WRONLY | os.O_CREAT, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write("x" * (MAX_TOKEN + 1))
    with pytest.raises(parley.ParleyError) as caught:
        load_tokens(home, "grants")
    assert "over" in caught.value.message
    huge.unlink()

    # a FIFO would block open() (and the bridge's event loop): refused at once
    fifo = home / "grants" / "fifo.pg"
    os.mkfifo(fifo, 0o600)
    with pytest.raises(parley.ParleyError) as caught:
        load_tokens(home, "grants")
    assert "not a plain file" in caught.value.message
    fifo.unlink()
    # a hard link to a file elsewhere is not the folder's own file
    outside = tmp_path / "outside.pg"
    os.link(path, outside)
    with pytest.raises(parley.ParleyError) as caught:
        load_tokens(home, "grants")
    assert "hard link" in caught.value.message
    outside.unlink()
    # nor is a folder that is a link to another
    elsewhere = tmp_path / "elsewhere"
    os.rename(home / "consents", elsewhere) if (home / "consents").exists() else None
    elsewhere.mkdir(mode=0o700, exist_ok=True)
    (home / "consents").symlink_to(elsewhere)
    with pytest.raises(parley.ParleyError) as caught:
        load_tokens(home, "consents")
    assert "symbolic link" in caught.value.message
    (home / "consents").unlink()
    assert load_tokens(home, "grants") == [token]

    # only grants are saved, and a name cannot leave the folder
    with pytest.raises(parley.ParleyError):
        save_token(home, "grants", "not a token")
    with pytest.raises(parley.ParleyError):
        save_token(home, "keys", token)
    saved = save_token(home, "consents", token, "../../escape")
    assert saved.parent == home / "consents"
    assert saved.name == "______escape.pg"
    assert parley.decode_grant(load_tokens(home, "consents")[0]).holder == AGENT.public
    assert PRINCIPAL.public == parley.decode_grant(token).principal
