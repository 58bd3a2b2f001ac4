"""The pxp command line and the demo.

Private imports: ``pxp._cli.main`` is the ``pxp`` command's in-process ``main(argv)``; the
command's public contract is its argv, output and exit code, which these tests hold (no
public cli module, by decision).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import pxp
from pxp._cli import main

SAMPLE = (
    Path(__file__).resolve().parents[2] / "vectors" / "third_party" / "pxp" / "sample-room.json"
)


def test_seal_prints_the_hash(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    card = tmp_path / "card.json"
    card.write_text(
        json.dumps(
            {
                "principal": {"name": "Fixture A", "role": "tester"},
                "goal": "Reach a fixture deal",
                "must_haves": ["A fixed must-have"],
            }
        )
    )
    assert main(["seal", str(card)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["card_hash"] == "83a05bea371eca4164e405717c3fdd17c7c2785b36d8bee359f0f36511f58dd7"


def test_seal_refuses_a_bad_card(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    card = tmp_path / "card.json"
    card.write_text('{"goal": 1}')
    assert main(["seal", str(card)]) == 1
    assert capsys.readouterr().err.startswith("error: card_invalid")
    assert main(["seal", str(tmp_path / "missing.json")]) == 1
    assert "file_unreadable" in capsys.readouterr().err


def test_ledger_verify(capsys: pytest.CaptureFixture[str]) -> None:
    head = json.loads(SAMPLE.read_text())["ledger"][-1]["hash"]
    assert main(["ledger", "verify", str(SAMPLE), "--head", head]) == 0
    assert head in capsys.readouterr().out
    assert main(["ledger", "verify", str(SAMPLE), "--head", "1" * 64]) == 1
    err = capsys.readouterr().err
    assert "ledger_invalid/head_mismatch" in err
    assert "entry index 5" in err


def test_ledger_verify_reports_the_first_bad_entry(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ledger = json.loads(SAMPLE.read_text())["ledger"]
    ledger[2]["at"] = "2027-01-01T00:00:00.000Z"
    path = tmp_path / "ledger.json"
    path.write_text(json.dumps(ledger))
    assert main(["ledger", "verify", str(path)]) == 1
    assert "entry index 2" in capsys.readouterr().err


def test_brief_and_simulate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    export = tmp_path / "room.json"
    assert main(["simulate", "--export", str(export)]) == 0
    assert "**Outcome: agreed.**" in capsys.readouterr().out
    assert main(["brief", str(export)]) == 0
    brief = json.loads(capsys.readouterr().out)
    assert brief == pxp.simulate().brief()
    assert main(["brief", str(export), "--markdown"]) == 0
    assert capsys.readouterr().out.startswith("# Decision brief")
    assert main(["simulate", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["outcome"] == "agreed"


def test_brief_of_a_paused_room_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["brief", str(SAMPLE)]) == 1
    assert "invalid_transition/paused_brief" in capsys.readouterr().err


def test_demo_runs(capsys: pytest.CaptureFixture[str]) -> None:
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "examples" / "demo_pxp.py"
    spec = importlib.util.spec_from_file_location("demo_pxp", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main()
    out = capsys.readouterr().out
    assert "breaks the chain at entry 4" in out
    assert "matches the brief: True" in out
