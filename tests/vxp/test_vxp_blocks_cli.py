"""The building-block subcommands of the ``vxp`` command line (docs/cli.md).

Private imports: ``vxp._cli.main`` is the command line's in-process entry; the CLI's
public contract is its argv, output and exit code, which these tests hold.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from joserfc.jwk import ECKey, OKPKey

import vxp
from tests.vxp import forge
from vxp._cli import main


def test_sd_jwt_commands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    issuer = ECKey.generate_key("P-256")
    token = vxp.issue_sd_jwt({"iss": "x", "name": vxp.Sd("Ada")}, issuer, typ="t").serialize()
    (tmp_path / "token").write_text(token)
    (tmp_path / "jwk.json").write_text(json.dumps(issuer.as_dict(private=False)))
    assert main(["sd-jwt-decode", str(tmp_path / "token")]) == 0
    decoded = json.loads(capsys.readouterr().out)
    assert decoded["disclosures"][0]["name"] == "name"
    args = ["sd-jwt-verify", str(tmp_path / "token"), "--issuer-jwk", str(tmp_path / "jwk.json")]
    assert main([*args, "--typ", "t", "--now", "0"]) == 0
    assert json.loads(capsys.readouterr().out)["claims"] == {"iss": "x", "name": "Ada"}
    assert main([*args, "--typ", "other", "--now", "0"]) == 1
    assert "typ_mismatch" in capsys.readouterr().err
    assert main([*args, "--typ", "t", "--aud", "a"]) == 1
    assert "cli_usage" in capsys.readouterr().err


def test_merkle_and_checkpoint_commands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = []
    for i in range(5):
        f = tmp_path / f"leaf{i}"
        f.write_bytes(bytes([i]) * i)
        files.append(str(f))
    assert main(["merkle-root", *files]) == 0
    out = json.loads(capsys.readouterr().out)
    hashes = [vxp.merkle.leaf_hash(bytes([i]) * i) for i in range(5)]
    assert out == {"tree_size": 5, "root": vxp.codec.encode_hash(vxp.merkle.tree_hash(hashes))}
    proof = {
        "leaf_hash": vxp.codec.encode_hash(hashes[2]),
        "index": 2,
        "tree_size": 5,
        "proof": [vxp.codec.encode_hash(p) for p in vxp.merkle.inclusion_proof(hashes, 2)],
        "root": out["root"],
    }
    (tmp_path / "p.json").write_text(json.dumps(proof))
    assert main(["merkle-verify", str(tmp_path / "p.json")]) == 0
    (tmp_path / "p.json").write_text(json.dumps({**proof, "index": 3}))
    assert main(["merkle-verify", str(tmp_path / "p.json")]) == 1
    assert "root_mismatch" in capsys.readouterr().err
    log_key = OKPKey.generate_key("Ed25519")
    log = vxp.MerkleLog("o")
    log.extend([b"a"])
    (tmp_path / "cp.json").write_text(json.dumps(log.checkpoint(log_key).to_json()))
    (tmp_path / "log.json").write_text(json.dumps(log_key.as_dict(private=False)))
    cmd = ["checkpoint-verify", str(tmp_path / "cp.json"), "--log-jwk", str(tmp_path / "log.json")]
    assert main(cmd) == 0
    assert json.loads(capsys.readouterr().out)["checkpoint"]["tree_size"] == 1
    assert main([*cmd, "--quorum", "1"]) == 1
    assert main(["merkle-verify", str(tmp_path / "missing.json")]) == 1


def test_cli_decode_prints_lone_surrogates_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``sd-jwt-decode`` prints a disclosed lone surrogate as a JSON escape, never crashing
    on output (docs/cli.md)."""
    b64 = vxp.codec.b64url_encode
    disclosure = b64(b'["salt", "name", "\\ud800"]')
    payload = {"iss": "i", "_sd": [b64(hashlib.sha256(disclosure.encode()).digest())]}
    issuer = ECKey.generate_key("P-256")
    jws = forge.jws(b'{"alg":"ES256","typ":"t"}', json.dumps(payload).encode(), issuer)
    (tmp_path / "token").write_text(jws + "~" + disclosure + "~")
    assert main(["sd-jwt-decode", str(tmp_path / "token")]) == 0
    assert json.loads(capsys.readouterr().out)["disclosures"][0]["value"] == "\ud800"
