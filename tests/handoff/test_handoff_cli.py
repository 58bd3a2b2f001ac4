"""The ``handoff`` command line: validate, state, add.

Private imports: ``handoff._cli.main`` drives the command line in process, ``main(argv)``;
the command's public contract is its argv, output and exit status, which these tests hold.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from handoff._cli import main

from .handoff_helpers import ROLES, amended, raised, settled


@pytest.fixture
def config(tmp_path: Path) -> str:
    path = tmp_path / "config.json"
    path.write_text(
        json.dumps(
            {
                "roles": ROLES.to_json(),
                "extensions": [
                    {"name": "demo-keep", "version": "0.3", "kind": "act",
                     "outcomes": ["done", "declined"], "reasons": ["obsolete"]}
                ],
            }
        ),
        encoding="utf-8",
    )  # fmt: skip
    return str(path)


def _jsonl(tmp_path: Path, records: list[object], extra: str = "") -> str:
    path = tmp_path / "records.jsonl"
    text = "".join(json.dumps(r) + "\n" for r in records) + extra
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_validate(tmp_path: Path, config: str, capsys: pytest.CaptureFixture[str]) -> None:
    good = _jsonl(tmp_path, [raised(), settled("s1"), raised("x", ext="travel/0.3")], "\n")
    assert main(["validate", good, "--config", config]) == 0
    out = capsys.readouterr().out
    assert "2 accepted, 1 ignored, 0 rejected" in out
    bad = _jsonl(tmp_path, [raised(), {**raised("n2"), "terms_rev": 1.0}], '{"a":1,"a":2}\n')
    assert main(["validate", bad, "--config", config]) == 1
    out = capsys.readouterr().out
    assert ":2: rejected schema/record_schema" in out
    assert ":3: rejected parse/duplicate_member" in out


def test_state(tmp_path: Path, config: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = _jsonl(tmp_path, [raised(), amended("n2", 2, ["n1"]), settled("s1")])
    assert main(["state", path, "--config", config]) == 0
    out = capsys.readouterr().out
    assert "demo-keep/house/k1  settled  done  stale" in out
    assert main(["state", path, "--config", config, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["items"][0]["stale"] is True
    assert data["rejected"] == 0
    bad = _jsonl(tmp_path, [raised()], "not json\n")
    assert main(["state", bad, "--config", config]) == 1
    assert "rejected parse" in capsys.readouterr().err


def test_add_and_state_from_db(
    tmp_path: Path, config: str, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "h.sqlite")
    path = _jsonl(tmp_path, [raised(), raised(), settled("s1")])
    assert main(["add", path, "--db", db, "--config", config]) == 0
    out = capsys.readouterr().out
    assert out.count("accepted") == 2
    assert "duplicate" in out
    assert main(["state", "--db", db, "--config", config]) == 0
    assert "settled  done" in capsys.readouterr().out


def test_errors(tmp_path: Path, config: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["state", "--config", config]) == 1
    assert main(["validate", str(tmp_path / "nope.jsonl"), "--config", config]) == 1
    assert main(["validate", "x.jsonl", "--config", str(tmp_path / "nope.json")]) == 1
    broken = tmp_path / "broken.json"
    broken.write_text('{"roles": 3}', encoding="utf-8")
    assert main(["validate", "x.jsonl", "--config", str(broken)]) == 1
    assert capsys.readouterr().err.count("error:") == 4


def test_config_extensions_default_and_builtin_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"roles": ROLES.to_json()}), encoding="utf-8")
    unknown = _jsonl(tmp_path, [raised()])  # demo-keep is not built in: ignored
    assert main(["validate", unknown, "--config", str(path)]) == 0
    assert "0 accepted, 1 ignored" in capsys.readouterr().out
    path.write_text(
        json.dumps({"roles": ROLES.to_json(), "extensions": ["nope/0.3"]}), encoding="utf-8"
    )
    assert main(["validate", unknown, "--config", str(path)]) == 1
    assert "no built-in extension" in capsys.readouterr().err
