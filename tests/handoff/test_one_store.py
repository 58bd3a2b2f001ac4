"""§8 stores (issue 19 #6): one store URL and one configuration form for every command.

``settle`` and ``md sync`` read and append a SQLite store by ``--state sqlite:PATH``
(``--db`` stays an alias), and accept the configuration form handoff.md shows
(``"extensions": ["acts/0.3", {...}]``). The CLI runs as a real subprocess.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import handoff

from .ext_fixtures import ROLES_JSON, TS, ed_key, raised


def _cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "handoff", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _config(tmp_path: Path) -> str:
    config = tmp_path / "config.json"
    value = {
        "roles": ROLES_JSON,
        "extensions": ["acts/0.3", {"name": "chores", "version": "0.3", "kind": "act"}],
        "side": {"jwks": handoff.public_jwks(ed_key()), "verifiable": True},
    }
    config.write_text(json.dumps(value), encoding="utf-8")
    return str(config)


def test_every_command_on_one_sqlite_store(tmp_path: Path) -> None:
    config = _config(tmp_path)
    records = tmp_path / "records.jsonl"
    records.write_text(json.dumps(raised()) + "\n", encoding="utf-8")
    db = tmp_path / "h.sqlite"
    url = f"sqlite:{db}"
    assert _cli("add", str(records), "--state", url, "--config", config).returncode == 0
    key = tmp_path / "alice.jwk"
    key.write_text(json.dumps(ed_key()), encoding="utf-8")
    settle = _cli("settle", "--state", url, "--config", config, "--ext", "acts",
                  "--project", "web", "--key", "k1", "--outcome", "done",
                  "--principal-key", str(key), "--now", TS, "--yes")  # fmt: skip
    assert settle.returncode == 0, settle.stdout + settle.stderr
    doc = tmp_path / "STATE.md"
    doc.write_text("## Acts\n\n- [ ] Renew the domain\n", encoding="utf-8")
    sync = _cli("md", "sync", str(doc), "--db", str(db), "--config", config,
                "--project", "web", "--registrar", "registrar", "--now", TS)  # fmt: skip
    assert sync.returncode == 0, sync.stdout + sync.stderr
    assert "- [x] Pay the hosting invoice <!-- act:k1 -->" in doc.read_text(encoding="utf-8")
    state = _cli("state", "--state", url, "--config", config, "--json")
    assert state.returncode == 0, state.stderr
    items = {i["key"]: i for i in json.loads(state.stdout)["items"]}
    assert items["k1"]["state"] == "settled"
    assert items["k1"]["evidence"]["verdict"] == "verified"
    assert len(items) == 2  # the new line of the document was raised in the store
    assert records.read_text(encoding="utf-8").count("\n") == 1  # the file was not touched
