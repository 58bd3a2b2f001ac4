"""Acts §4 (ext.; second review I1): an act's text never carries raw HTML into the state document.

A requester's act text ``Pay <img src=x onerror=...>`` was admitted and written into
STATE.md verbatim, where a Markdown viewer renders it. ``<`` is now refused in an act's
text (``record``/``text_invalid``), and a hand-written STATE.md line holding it is not
read as an act. The CLI runs as a real subprocess.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import handoff

from .ext_fixtures import ROLES, ROLES_JSON, TS, rec

HTML = "Pay <img src=x onerror=alert(1)>"


def test_raw_html_in_act_text_is_refused() -> None:
    record = rec("n1", "raised", "requester", "agent-1", "k1", terms={"text": HTML}, terms_rev=1)
    with pytest.raises(handoff.HandoffError) as caught:
        handoff.check_record(record, roles=ROLES, extensions=handoff.EXTENSIONS)
    assert (caught.value.code, caught.value.reason) == ("record", "text_invalid")


def test_md_sync_never_writes_html_from_a_line(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"roles": ROLES_JSON}), encoding="utf-8")
    document = tmp_path / "STATE.md"
    document.write_text(f"## Acts\n\n- [ ] {HTML}\n- [ ] Pay the roofer\n", encoding="utf-8")
    records = tmp_path / "records.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "handoff", "md", "sync", str(document), "--records",
         str(records), "--config", str(config), "--project", "web", "--registrar",
         "registrar", "--now", TS],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    held = [json.loads(x) for x in records.read_text(encoding="utf-8").splitlines()]
    assert [r["terms"]["text"] for r in held] == ["Pay the roofer"]
    assert f"- [ ] {HTML}\n" in document.read_text(encoding="utf-8")  # left as written
