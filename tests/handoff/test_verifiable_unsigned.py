"""§12 verifiable side (second review L2): on a verifiable side, unsigned records are reported,
never ticked.

An unsigned ``reopened`` naming the principal side reopened a verified settlement with
no report, and an unsigned attested settlement was ticked by ``md sync``. Now the
reopening's evidence is reported (``unverified``) and ``md sync`` ticks only verified
settlements on a verifiable side. The CLI runs as a real subprocess on real files.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import handoff

from .ext_fixtures import ROLES_JSON, TS, ed_key, rec, registry

N1 = rec("n1", "raised", "requester", "agent-1", "roof", terms={"text": "Pay 800"}, terms_rev=1)
M1 = rec("m1", "raised", "requester", "agent-1", "wire", terms={"text": "Wire 9000"}, terms_rev=1)
ATT = rec("s-evil", "settled", "principal", "alice-desk", "wire", terms_rev=1, outcome="done",
          authority={"kind": "attested", "decider": "alice-desk"},
          evidence={"basis": "she said so"})  # fmt: skip


def _files(tmp_path: Path) -> tuple[str, str]:
    reg = registry()
    reg.add(N1)
    item = handoff.ItemId("acts", "web", "roof")
    signed = handoff.make_settlement(reg, item, "done", by="alice-desk", ts=TS)
    signed = handoff.attach_proof(signed, ed_key())
    reopen = rec("r-evil", "reopened", "principal", "alice-desk", "roof",
                 supersedes=[signed["id"]])  # fmt: skip
    path = tmp_path / "records.jsonl"
    path.write_text(
        "".join(json.dumps(r) + "\n" for r in (N1, signed, reopen, M1, ATT)), encoding="utf-8"
    )
    config = tmp_path / "config.json"
    side = {"jwks": handoff.public_jwks(ed_key()), "verifiable": True}
    config.write_text(json.dumps({"roles": ROLES_JSON, "side": side}), encoding="utf-8")
    return str(path), str(config)


def _cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "handoff", *argv], capture_output=True,
                          text=True, timeout=60, check=False)  # fmt: skip


def test_state_reports_an_unsigned_reopening(tmp_path: Path) -> None:
    path, config = _files(tmp_path)
    done = _cli("state", path, "--config", config, "--json")
    items = {i["key"]: i for i in json.loads(done.stdout)["items"]}
    assert items["roof"]["state"] == "open"
    assert items["roof"]["evidence"]["verdict"] == "unverified"
    assert items["roof"]["evidence"]["proof"] == "absent"
    assert items["wire"]["evidence"]["verdict"] == "unverified"


def test_md_sync_ticks_only_verified_settlements_on_a_verifiable_side(tmp_path: Path) -> None:
    path, config = _files(tmp_path)
    document = tmp_path / "STATE.md"
    document.write_text(
        "## Acts\n\n- [ ] Pay 800 <!-- act:roof -->\n- [ ] Wire 9000 <!-- act:wire -->\n", "utf-8"
    )
    argv = ["md", "sync", str(document), "--records", path, "--config", config]
    done = _cli(*argv, "--project", "web", "--registrar", "registrar", "--now", TS)
    text = document.read_text(encoding="utf-8")
    assert "[x]" not in text, text
    assert "unverified wire" in done.stdout
    assert done.returncode == 1
