"""§8 delivery (issue 19 #2): appends never damage a records file.

A file whose last line lacks its newline gets one before the new record (``settle``,
``md sync``); a torn last line (a write cut off by a crash) is reported and never
extended. The CLI runs as a real subprocess on real files.
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


def _setup(tmp_path: Path, text: str) -> tuple[str, str, str]:
    config = tmp_path / "config.json"
    side = {"jwks": handoff.public_jwks(ed_key())}
    config.write_text(json.dumps({"roles": ROLES_JSON, "side": side}), encoding="utf-8")
    key = tmp_path / "alice.jwk"
    key.write_text(json.dumps(ed_key()), encoding="utf-8")
    path = tmp_path / "records.jsonl"
    path.write_text(text, encoding="utf-8")
    return str(config), str(path), str(key)


def _settle(config: str, path: str, key: str) -> subprocess.CompletedProcess[str]:
    return _cli("settle", path, "--config", config, "--ext", "acts", "--project", "web",
                "--key", "k1", "--outcome", "done", "--principal-key", key, "--now", TS,
                "--yes")  # fmt: skip


def _md(config: str, path: str, doc: Path) -> subprocess.CompletedProcess[str]:
    return _cli("md", "sync", str(doc), "--records", path, "--config", config,
                "--project", "web", "--registrar", "registrar", "--now", TS)  # fmt: skip


def test_settle_after_a_last_line_without_newline(tmp_path: Path) -> None:
    config, path, key = _setup(tmp_path, json.dumps(raised()))  # no final newline
    done = _settle(config, path, key)
    assert done.returncode == 0, done.stderr
    lines = Path(path).read_text(encoding="utf-8").split("\n")
    assert lines[-1] == ""
    assert [json.loads(x)["type"] for x in lines[:-1]] == ["raised", "settled"]
    state = _cli("state", path, "--config", config)
    assert state.returncode == 0, state.stdout + state.stderr
    assert "settled  done  verified" in state.stdout


def test_md_sync_after_a_last_line_without_newline(tmp_path: Path) -> None:
    config, path, _ = _setup(tmp_path, json.dumps(raised()))
    doc = tmp_path / "STATE.md"
    doc.write_text("## Acts\n\n- [ ] Renew the domain\n", encoding="utf-8")
    done = _md(config, path, doc)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    assert [json.loads(x)["type"] for x in lines] == ["raised", "raised"]


def test_a_torn_last_line_is_reported_never_extended(tmp_path: Path) -> None:
    torn = json.dumps(raised()) + "\n" + json.dumps(raised("n2", key="k2"))[:40]
    config, path, key = _setup(tmp_path, torn)
    done = _settle(config, path, key)
    assert done.returncode == 1
    assert "records.jsonl:2" in done.stderr
    doc = tmp_path / "STATE.md"
    doc.write_text("## Acts\n\n- [ ] Renew the domain\n", encoding="utf-8")
    assert _md(config, path, doc).returncode == 1
    assert Path(path).read_text(encoding="utf-8") == torn
    state = _cli("state", path, "--config", config)
    assert state.returncode == 1
    assert ":2: rejected parse" in state.stderr


def test_a_line_torn_while_settle_waits_is_never_extended(tmp_path: Path) -> None:
    """Another writer crashes mid-write while ``settle`` asks its question: the file read
    was whole, the file appended to is not, and the append refuses to extend it."""
    config, path, key = _setup(tmp_path, json.dumps(raised()) + "\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "handoff", "settle", path, "--config", config, "--ext", "acts",
         "--project", "web", "--key", "k1", "--outcome", "done", "--principal-key", key,
         "--now", TS],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    assert proc.stdin is not None
    asked = ""
    while not asked.endswith("[y/N] "):
        char = proc.stdout.read(1)
        assert char, f"settle ended without asking: {proc.communicate(timeout=60)}"
        asked += char
    torn = Path(path).read_text(encoding="utf-8") + json.dumps(raised("n2", key="k2"))[:40]
    Path(path).write_text(torn, encoding="utf-8")
    out, err = proc.communicate("y\n", timeout=60)
    assert proc.returncode == 1, out + err
    assert "torn_line" in err
    assert err.strip().splitlines()[-1].startswith("error: io/torn_line: ")
    assert Path(path).read_text(encoding="utf-8") == torn
