"""Decisions §5 (ext.; second review M3): the offered check is never skipped.

A settlement at a revision above anything held (terms_rev 7 against terms of revision
1) carried an outcome no terms offered and stood; and with a second, JSON-described
version of the extension configured, the highest version (no offered check) replaced
the check of the version that made the terms. Now the outcome stands only if held terms
offer it, each checked by the extension version that made them; ``state`` exits 1.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import handoff

from .ext_fixtures import ROLES, ROLES_JSON, rec, registry

ITEM = handoff.ItemId("decisions", "web", "q1")
TERMS = {
    "text": "Which supplier?",
    "options": [{"id": "a", "text": "A"}, {"id": "b", "text": "B"}],
    "assumption": "wait",
}
NEED = rec("n1", "raised", "requester", "agent-1", "q1", ext="decisions/0.3", terms=TERMS,
           terms_rev=1)  # fmt: skip
V04 = {"name": "decisions", "version": "0.4", "kind": "decide", "policy": "stop"}


def _settled(outcome: str, rev: int, ext: str = "decisions/0.3") -> dict[str, Any]:
    return rec("s1", "settled", "principal", "alice-desk", "q1", ext=ext, terms_rev=rev,
               outcome=outcome, authority={"kind": "attested", "decider": "alice-desk"},
               evidence={"basis": "phone call"})  # fmt: skip


def test_a_settlement_ahead_of_the_held_terms_is_still_checked() -> None:
    for order in itertools.permutations([NEED, _settled("approve_all_future_orders", 7)]):
        reg = registry()
        for record in order:
            reg.add(record)
        state = reg.state(ITEM)
        assert (state.state, state.outcome) == ("open", None)
        assert [(c.kind, c.ids) for c in state.conflicts] == [("outcome_unchecked", ("s1",))]
    reg = registry()
    reg.add(NEED)
    reg.add(_settled("b", 7))  # offered by the terms held: stands
    assert (reg.state(ITEM).state, reg.state(ITEM).outcome) == ("settled", "b")


def test_the_version_that_made_the_terms_checks_them() -> None:
    extensions = handoff.ExtensionRegistry(
        [handoff.EXTENSIONS.get("decisions/0.3"), handoff.Extension.from_json(V04)]
    )
    reg = handoff.Registry(roles=ROLES, extensions=extensions)
    reg.add(NEED)
    reg.add(_settled("approve_all_future_orders", 1, ext="decisions/0.4"))
    state = reg.state(ITEM)
    assert state.outcome is None
    assert [c.kind for c in state.conflicts] == ["outcome_not_offered"]


def test_cli_state_exits_1(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text(
        json.dumps({"roles": ROLES_JSON, "extensions": ["decisions/0.3", V04]}), "utf-8"
    )
    for settlement in (_settled("approve_all_future_orders", 7),
                       _settled("approve_all_future_orders", 1, ext="decisions/0.4")):  # fmt: skip
        path = tmp_path / "records.jsonl"
        path.write_text(json.dumps(NEED) + "\n" + json.dumps(settlement) + "\n", "utf-8")
        done = subprocess.run(
            [sys.executable, "-m", "handoff", "state", str(path), "--config", str(config)],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert done.returncode == 1, done.stdout + done.stderr
        assert "decisions/web/q1  open" in done.stdout
