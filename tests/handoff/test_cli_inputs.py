"""Command line §7 (ext.; second review L3): a missing records file and an unusable JWKS are errors.

``handoff state nosuch.jsonl`` reported 0 items and exited 0; a config whose
``side.jwks`` is not a key set loaded, then every genuine settlement showed ``forged``.
Both are now refused with a coded one-line error (exit 1). Real subprocesses.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from .ext_fixtures import ROLES_JSON


def _cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "handoff", *argv], capture_output=True,
                          text=True, timeout=60, check=False)  # fmt: skip


def test_a_missing_records_file_is_an_error(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"roles": ROLES_JSON}), encoding="utf-8")
    for command in ("state", "validate"):
        done = _cli(command, str(tmp_path / "nosuch.jsonl"), "--config", str(config))
        assert done.returncode == 1, done.stdout
        assert done.stderr.startswith("error: io"), done.stderr


@pytest.mark.parametrize(
    "jwks", [{"keys": "x"}, {"keys": [{"kty": "OKP", "crv": "Ed25519", "x": "AA"}]}, {}]
)
def test_an_unusable_jwks_is_refused_at_load(tmp_path: Path, jwks: object) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"roles": ROLES_JSON, "side": {"jwks": jwks}}), "utf-8")
    records = tmp_path / "records.jsonl"
    records.write_text("", encoding="utf-8")
    done = _cli("state", str(records), "--config", str(config))
    assert done.returncode == 1
    assert done.stderr.startswith("error: config/config_invalid"), done.stderr
    assert "\n" not in done.stderr.strip()
