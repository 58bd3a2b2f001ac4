"""``handoff settle`` and ``handoff md sync`` on real files.

Private imports: ``handoff._cli.main`` drives the command line in process, ``main(argv)``;
the command's public contract is its argv, output and exit status, which these tests hold.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import handoff
from handoff._cli import main

from .ext_fixtures import ROLES_JSON, TS, ec_key, ed_key, raised, registry


def _setup(tmp_path: Path, jwks_key: dict[str, object]) -> tuple[Path, Path, Path]:
    config = tmp_path / "config.json"
    config.write_text(
        json.dumps({"roles": ROLES_JSON, "side": {"jwks": handoff.public_jwks(jwks_key)}}),
        encoding="utf-8",
    )
    records = tmp_path / "records.jsonl"
    records.write_text(json.dumps(raised()) + "\n", encoding="utf-8")
    key = tmp_path / "alice.jwk"
    return config, records, key


def _settle(config: Path, records: Path, key: Path, *extra: str) -> int:
    return main(
        [
            "settle",
            str(records),
            "--config",
            str(config),
            "--ext",
            "acts",
            "--project",
            "web",
            "--key",
            "k1",
            "--outcome",
            "done",
            "--principal-key",
            str(key),
            "--now",
            "2026-11-30T10:00:00Z",
            *extra,
        ]
    )


def test_settle_shows_presented_and_appends_a_signed_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    principal = ed_key()
    config, records, key = _setup(tmp_path, principal)
    key.write_text(json.dumps(principal), encoding="utf-8")
    assert _settle(config, records, key, "--yes") == 0
    out = capsys.readouterr().out
    assert "evidence.presented = sha-256:" in out
    lines = records.read_text(encoding="utf-8").splitlines()
    settled = json.loads(lines[-1])
    assert settled["authority"] == {"kind": "principal", "decider": "alice"}
    assert handoff.verify_proof(settled, handoff.public_jwks(principal)).alg == "Ed25519"
    assert settled["evidence"]["presented"] in out


def test_settle_with_a_key_the_side_does_not_list_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config, records, key = _setup(tmp_path, ed_key())
    key.write_text(json.dumps(ec_key()), encoding="utf-8")  # not the principal's listed key
    before = records.read_text(encoding="utf-8")
    assert _settle(config, records, key, "--yes") == 1
    assert "proof/kid_unknown" in capsys.readouterr().err
    assert records.read_text(encoding="utf-8") == before


def test_settle_asks_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    principal = ed_key()
    config, records, key = _setup(tmp_path, principal)
    key.write_text(json.dumps(principal), encoding="utf-8")
    monkeypatch.setattr("builtins.input", lambda _prompt: "n")
    before = records.read_text(encoding="utf-8")
    assert _settle(config, records, key) == 1
    assert "not settled" in capsys.readouterr().out
    assert records.read_text(encoding="utf-8") == before


def test_md_sync_round_trip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"roles": ROLES_JSON}), encoding="utf-8")
    records = tmp_path / "records.jsonl"
    state = tmp_path / "STATE.md"
    state.write_text("# Web\n\n## Acts\n\n- [ ] Renew the domain\n", encoding="utf-8")
    argv = [
        "md",
        "sync",
        str(state),
        "--records",
        str(records),
        "--config",
        str(config),
        "--project",
        "web",
        "--registrar",
        "registrar",
        "--now",
        "2026-11-30T10:00:00Z",
    ]
    assert main(argv) == 0
    assert "1 records appended" in capsys.readouterr().out
    first = state.read_text(encoding="utf-8")
    assert "<!-- act:act-" in first
    assert main(argv) == 0
    assert "0 records appended" in capsys.readouterr().out
    assert state.read_text(encoding="utf-8") == first
    assert len(records.read_text(encoding="utf-8").splitlines()) == 1


def test_settle_a_decision_with_an_es256_key(tmp_path: Path) -> None:
    principal = ec_key()
    config, records, key = _setup(tmp_path, principal)
    key.write_text(json.dumps(principal), encoding="utf-8")
    decision = {
        "ph": "0.3",
        "ext": "decisions/0.3",
        "id": "d1",
        "type": "raised",
        "origin": "requester",
        "by": "agent-1",
        "key": "plan",
        "project": "web",
        "ts": "2026-11-30T09:00:00Z",
        "terms_rev": 1,
        "terms": {
            "text": "Which plan?",
            "options": [{"id": "small", "text": "Small"}],
            "assumption": "small",
        },
    }
    with records.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(decision) + "\n")
    argv = [
        "settle",
        str(records),
        "--config",
        str(config),
        "--ext",
        "decisions",
        "--project",
        "web",
        "--key",
        "plan",
        "--principal-key",
        str(key),
        "--yes",
    ]
    assert main([*argv, "--outcome", "medium"]) == 1  # not an option offered
    assert main([*argv, "--outcome", "small"]) == 0
    settled = json.loads(records.read_text(encoding="utf-8").splitlines()[-1])
    assert settled["outcome"] == "small"
    assert handoff.verify_proof(settled, handoff.public_jwks(principal)).alg == "ES256"


def test_settle_prompt_escapes_what_a_terminal_would_not_show(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from .ext_fixtures import ROLES_JSON, ed_key
    from .ext_fixtures import raised as act_raised

    principal = ed_key()
    config = tmp_path / "config.json"
    config.write_text(
        json.dumps({"roles": ROLES_JSON, "side": {"jwks": handoff.public_jwks(principal)}}),
        encoding="utf-8",
    )
    terms = {"text": "Pay the invoice", "how_to": "Card \u202e4242\x9b2J ok"}
    records = tmp_path / "records.jsonl"
    records.write_text(json.dumps(act_raised(terms=terms)) + "\n", encoding="utf-8")
    key = tmp_path / "alice.jwk"
    key.write_text(json.dumps(principal), encoding="utf-8")
    argv = ["settle", str(records), "--config", str(config), "--ext", "acts"]
    argv += ["--project", "web", "--key", "k1", "--outcome", "done", "--yes"]
    argv += ["--principal-key", str(key), "--now", "2026-11-30T10:00:00Z"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "\u202e" not in out
    assert "\x9b" not in out
    assert "\\u202e4242\\u009b2J" in out


def _forked() -> tuple[handoff.Registry, handoff.ItemId]:
    from .ext_fixtures import raised as act_raised
    from .ext_fixtures import rec as act_rec

    reg = registry()
    reg.add(act_raised())

    def amend(rid: str, text: str) -> dict[str, Any]:
        terms = {"text": text}
        return act_rec(
            rid, "amended", "requester", "agent-1", terms=terms, terms_rev=2, supersedes=["n1"]
        )

    mallory = amend("a-first-by-id", "Pay 1000 EUR to mallory")
    honest = next(
        r
        for r in (amend(f"b{n}", f"Pay 10 EUR ({n})") for n in range(1000))
        if handoff.digests.digest(r) < handoff.digests.digest(mallory)
    )
    reg.add(mallory)
    reg.add(honest)
    return reg, handoff.ItemId("acts", "web", "k1")


def test_the_presented_digest_is_over_the_terms_shown_with_a_forked_need() -> None:
    reg, item = _forked()
    state = reg.state(item)
    assert str(state.terms["text"]).startswith("Pay 10 EUR")  # type: ignore[index]
    record = handoff.make_settlement(reg, item, "done", by="alice-desk", ts=TS)
    shown = handoff.evidence.presentation_for(reg, record)
    assert shown is not None
    assert shown["terms"] == dict(state.terms)  # type: ignore[arg-type]
    assert handoff.evidence.terms_at(reg, item, 2) == state.terms
    handoff.check_principal_side_record(record, reg, handoff.PrincipalSide())


def test_settle_prompt_shows_what_is_digested(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from .ext_fixtures import ROLES_JSON, ed_key

    reg, item = _forked()
    principal = ed_key()
    config = tmp_path / "config.json"
    config.write_text(
        json.dumps({"roles": ROLES_JSON, "side": {"jwks": handoff.public_jwks(principal)}}),
        encoding="utf-8",
    )
    records = tmp_path / "records.jsonl"
    records.write_text("".join(json.dumps(r) + "\n" for r in reg.records(item)), encoding="utf-8")
    key = tmp_path / "alice.jwk"
    key.write_text(json.dumps(principal), encoding="utf-8")
    argv = ["settle", str(records), "--config", str(config), "--ext", "acts"]
    argv += ["--project", "web", "--key", "k1", "--outcome", "done", "--yes"]
    argv += ["--principal-key", str(key), "--now", "2026-11-30T10:00:00Z"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "mallory" not in out
    assert "several heads" in out
    settled_line = json.loads(records.read_text(encoding="utf-8").splitlines()[-1])
    shown = out.split("digested):\n", 1)[1].split("\n", 1)[0]
    assert (
        handoff.digests.presented_digest(json.loads(shown)) == settled_line["evidence"]["presented"]
    )
