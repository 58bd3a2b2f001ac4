"""§4 admission (issue 19 #4, #8): one admission rule on every path (file, SQLite, library).

``validate`` refused a record nested deeper than 64 levels that ``state`` folded; a 200 MB
record was parsed. Each path now gives the same verdict, from the same parse.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import handoff

from .ext_fixtures import ROLES, ROLES_JSON, raised


def _deep(levels: int) -> dict[str, Any]:
    value: Any = "bottom"
    for _ in range(levels):
        value = {"x": value}
    return {**raised("deep"), "x_nested": value}


def _cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "handoff", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(("levels", "admitted"), [(60, True), (70, False)])
def test_every_path_agrees_on_nesting(tmp_path: Path, levels: int, admitted: bool) -> None:
    record = _deep(levels)
    line = json.dumps(record)
    verdicts = []
    for admit in (
        lambda: handoff.check_record(record, roles=ROLES, extensions=handoff.EXTENSIONS),
        lambda: handoff.Registry(roles=ROLES, extensions=handoff.EXTENSIONS).add_lines([line]),
        lambda: handoff.Registry(roles=ROLES, extensions=handoff.EXTENSIONS).add(line),
        lambda: handoff.stores.SQLiteStore(
            tmp_path / f"h{levels}.sqlite", roles=ROLES, extensions=handoff.EXTENSIONS
        ).append(line),
    ):
        try:
            admit()
            verdicts.append("admitted")
        except handoff.HandoffError as exc:
            verdicts.append(exc.code)
    assert verdicts == ["admitted" if admitted else "parse"] * 4
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"roles": ROLES_JSON}), encoding="utf-8")
    path = tmp_path / "records.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    validate = _cli("validate", str(path), "--config", str(config))
    state = _cli("state", str(path), "--config", str(config))
    assert validate.returncode == state.returncode == (0 if admitted else 1)


def test_an_oversized_record_is_refused_before_parsing() -> None:
    line = json.dumps({**raised("big"), "x_pad": "a" * (2 << 20)})
    reg = handoff.Registry(roles=ROLES, extensions=handoff.EXTENSIONS)
    with pytest.raises(handoff.HandoffError) as caught:
        reg.add_lines([line])
    assert (caught.value.code, caught.value.reason) == ("parse", "too_large")


@pytest.mark.parametrize("value", [[1], "x", 3, None, ["ph", "0.3"]])
def test_admission_refuses_a_non_object_at_the_parse_stage(value: Any) -> None:
    with pytest.raises(handoff.HandoffError) as caught:
        handoff.check_record(value, roles=ROLES, extensions=handoff.EXTENSIONS)
    assert caught.value.code == "parse"
