"""Command line §7 (ext.; issue 19 #3): where the configuration names keys, every command
checks evidence.

A settlement with a forged ``presented`` digest and a junk proof, with ``side.jwks`` and
``verifiable: true`` configured, is reported ``forged`` (exit 1) by ``validate`` and
``state``, never ticked by ``md sync``; a genuine one is ``verified``. The CLI runs as a
real subprocess on real files and a real SQLite store.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import handoff

from .ext_fixtures import ROLES_JSON, TS, ed_key, rec, registry

ITEM = handoff.ItemId("acts", "web", "roof")
TERMS = {"text": "Pay the roofer", "amount": "800", "currency": "EUR"}
NEED = rec("n1", "raised", "requester", "agent-1", "roof", terms=TERMS, terms_rev=1)


def _genuine() -> dict[str, Any]:
    reg = registry()
    reg.add(NEED)
    record = handoff.make_settlement(reg, ITEM, "done", by="alice-desk", ts=TS)
    return handoff.attach_proof(record, ed_key())


def _forged() -> dict[str, Any]:
    record = _genuine()
    record["evidence"] = {"presented": "sha-256:" + "0" * 64, "proof": "abc..def"}
    return record


def _cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "handoff", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _setup(tmp_path: Path, settlement: dict[str, Any]) -> tuple[str, str]:
    config = tmp_path / "config.json"
    side = {"jwks": handoff.public_jwks(ed_key()), "verifiable": True}
    config.write_text(json.dumps({"roles": ROLES_JSON, "side": side}), encoding="utf-8")
    path = tmp_path / "records.jsonl"
    path.write_text(json.dumps(NEED) + "\n" + json.dumps(settlement) + "\n", encoding="utf-8")
    return str(config), str(path)


def test_validate_reports_a_forged_settlement(tmp_path: Path) -> None:
    config, path = _setup(tmp_path, _forged())
    done = _cli("validate", path, "--config", config)
    assert done.returncode == 1, done.stdout
    assert ":2: forged" in done.stdout
    config, path = _setup(tmp_path, _genuine())
    done = _cli("validate", path, "--config", config)
    assert done.returncode == 0, done.stdout
    assert ":2: verified" in done.stdout


def test_state_reports_forged_and_verified(tmp_path: Path) -> None:
    config, path = _setup(tmp_path, _forged())
    done = _cli("state", path, "--config", config)
    assert done.returncode == 1
    assert "acts/web/roof  settled  done  forged" in done.stdout
    shown = _cli("state", path, "--config", config, "--json")
    [item] = json.loads(shown.stdout)["items"]
    assert item["evidence"]["verdict"] == "forged"
    assert item["evidence"]["presented"] == "mismatch"
    assert item["evidence"]["proof"] == "invalid:proof_malformed"
    config, path = _setup(tmp_path, _genuine())
    done = _cli("state", path, "--config", config)
    assert done.returncode == 0, done.stderr
    assert "acts/web/roof  settled  done  verified" in done.stdout


def test_state_of_a_store_reports_forged(tmp_path: Path) -> None:
    config, path = _setup(tmp_path, _forged())
    db = f"sqlite:{tmp_path / 'h.sqlite'}"
    # a store given the keys refuses the forged settlement at append (review M1)
    refused = _cli("add", path, "--state", db, "--config", config)
    assert refused.returncode == 1
    assert ":2: rejected proof/" in refused.stdout
    # one filled without the keys holds it, and a reader with the keys reports it
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps({"roles": ROLES_JSON}), encoding="utf-8")
    db = f"sqlite:{tmp_path / 'h2.sqlite'}"
    assert _cli("add", path, "--state", db, "--config", str(plain)).returncode == 0
    done = _cli("state", "--state", db, "--config", config)
    assert done.returncode == 1
    assert "forged" in done.stdout


def test_md_sync_never_ticks_a_forged_settlement(tmp_path: Path) -> None:
    config, path = _setup(tmp_path, _forged())
    document = tmp_path / "STATE.md"
    document.write_text("## Acts\n\n- [ ] Pay the roofer <!-- act:roof -->\n", encoding="utf-8")
    argv = ["md", "sync", str(document), "--records", path, "--config", config]
    done = _cli(*argv, "--project", "web", "--registrar", "registrar", "--now", TS)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "forged roof" in done.stdout
    assert "[x]" not in document.read_text(encoding="utf-8")
    config, path = _setup(tmp_path, _genuine())
    argv = ["md", "sync", str(document), "--records", path, "--config", config]
    done = _cli(*argv, "--project", "web", "--registrar", "registrar", "--now", TS)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "- [x] Pay the roofer <!-- act:roof -->" in document.read_text(encoding="utf-8")
