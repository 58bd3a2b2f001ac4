"""Several rules (issue 19 #8): the smaller items, each on its real path."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import handoff

from .ext_fixtures import ROLES, ROLES_JSON, TS, ec_key, raised, registry

ITEM = handoff.ItemId("acts", "web", "k1")
P256_N = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551


def _cli(*argv: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "handoff", *argv],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _config(tmp_path: Path, side: dict[str, Any] | None = None) -> str:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"roles": ROLES_JSON, "side": side or {}}), encoding="utf-8")
    return str(path)


def test_settle_without_yes_at_end_of_input_is_a_no(tmp_path: Path) -> None:
    config = _config(tmp_path, {"jwks": handoff.public_jwks(ec_key())})
    records = tmp_path / "records.jsonl"
    records.write_text(json.dumps(raised()) + "\n", encoding="utf-8")
    key = tmp_path / "alice.jwk"
    key.write_text(json.dumps(ec_key()), encoding="utf-8")
    argv = ["settle", str(records), "--config", config, "--ext", "acts", "--project", "web"]
    argv += ["--key", "k1", "--outcome", "done", "--principal-key", str(key)]
    done = _cli(*argv, stdin="")
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert "not settled" in done.stdout
    assert len(records.read_text(encoding="utf-8").splitlines()) == 1


def test_records_equal_in_jcs_give_one_answer_in_any_order() -> None:
    one = {**raised(), "x_count": 1}
    one_point_zero = {**raised(), "x_count": 1.0}
    answers = []
    for order in ([one, one_point_zero], [one_point_zero, one]):
        reg = registry()
        assert [reg.add(r).status for r in order] == ["accepted", "duplicate"]
        answers.append((reg.records(ITEM), reg.state(ITEM)))
    shown = [json.dumps(records) + repr(state) for records, state in answers]
    assert shown[0] == shown[1]  # 1 and 1.0 compare equal in Python: compare the text
    assert '"x_count": 1.0' not in shown[0]


def _malleate(record: dict[str, Any]) -> dict[str, Any]:
    """The same ES256 proof with s replaced by n - s: a second valid signature."""
    head, _, signature = record["evidence"]["proof"].split(".")
    raw = base64.urlsafe_b64decode(signature + "=" * (-len(signature) % 4))
    r, s = raw[:32], int.from_bytes(raw[32:], "big")
    twin = r + (P256_N - s).to_bytes(32, "big")
    text = base64.urlsafe_b64encode(twin).rstrip(b"=").decode()
    return {**record, "evidence": {**record["evidence"], "proof": f"{head}..{text}"}}


def test_a_relayed_second_es256_signature_is_a_repeat(tmp_path: Path) -> None:
    reg = registry()
    reg.add(raised())
    settled = handoff.make_settlement(reg, ITEM, "done", by="alice-desk", ts=TS)
    signed = handoff.attach_proof(settled, ec_key())
    twin = _malleate(signed)
    jwks = handoff.public_jwks(ec_key())
    assert handoff.verify_proof(twin, jwks).alg == "ES256"
    assert twin != signed
    states = []
    for order in ([signed, twin], [twin, signed]):
        fresh = registry()
        fresh.add(raised())
        assert [fresh.add(r).status for r in order] == ["accepted", "duplicate"]
        state = fresh.state(ITEM)
        assert (state.state, state.conflicts) == ("settled", ())
        states.append((state, fresh.records(ITEM)))
    assert states[0] == states[1]
    with handoff.stores.SQLiteStore(
        tmp_path / "h.sqlite", roles=ROLES, extensions=handoff.EXTENSIONS
    ) as store:
        store.append(raised())
        assert store.append(signed) == "accepted"
        # a signature variant is kept beside the first (review M1), once
        assert store.append(twin) == "accepted"
        assert store.append(twin) == "duplicate"
        assert len(store) == 3
        assert store.state(ITEM).state == "settled"


def test_markdown_ids_come_from_content_not_time() -> None:
    text = "## Acts\n\n- [ ] Renew the domain\n"
    where = {"project": "web", "registrar": "registrar"}
    first = handoff.markdown.read_state_document(text, registry(), now=TS, **where)
    later = handoff.markdown.read_state_document(
        text, registry(), now="2026-12-01T08:00:00Z", **where
    )
    assert first[0]["id"] == later[0]["id"]
    reg = registry()
    assert [reg.add(r).status for r in (first[0], later[0])] == ["accepted", "duplicate"]
    assert reg.state(handoff.ItemId("acts", "web", first[0]["key"])).conflicts == ()


def test_add_with_a_missing_input_creates_nothing(tmp_path: Path) -> None:
    db = tmp_path / "h.sqlite"
    done = _cli("add", str(tmp_path / "missing.jsonl"), "--state", f"sqlite:{db}",
                "--config", _config(tmp_path))  # fmt: skip
    assert done.returncode == 1
    assert not db.exists()
    assert "cannot read" in done.stderr


def test_a_byte_order_mark_is_named(tmp_path: Path) -> None:
    records = tmp_path / "records.jsonl"
    records.write_bytes(b"\xef\xbb\xbf" + json.dumps(raised()).encode() + b"\n")
    done = _cli("validate", str(records), "--config", _config(tmp_path))
    assert done.returncode == 1
    assert "byte order mark" in done.stderr


def test_handoff_md_alone_prints_its_own_help() -> None:
    done = _cli("md")
    assert done.returncode == 0
    assert "sync" in done.stdout
    assert "validate" not in done.stdout


@pytest.mark.parametrize("argv", [["state"], ["add"]])
def test_store_url_must_be_known(tmp_path: Path, argv: list[str]) -> None:
    done = _cli(*argv, "--state", "mysql://x/y", "--config", _config(tmp_path))
    assert done.returncode == 1
    assert "error: usage" in done.stderr
    # a postgresql:// URL is a store (issue 23): an unreachable one is a store error
    done = _cli(*argv, "--state", "postgres://u:secret@host.invalid/y", "--config",
                _config(tmp_path))  # fmt: skip
    assert done.returncode == 1
    assert "error: store/store_open" in done.stderr
    assert "secret" not in done.stderr


def test_the_bulk_path_treats_repeats_as_the_plain_path_does() -> None:
    flag_true = {**raised("n9", key="k9"), "x_flag": True}
    flag_one = {**raised("n9", key="k9"), "x_flag": 1}  # equal in Python, not in JCS
    feed = [raised(), {**raised(), "x_n": 1.0}, {**raised(), "x_n": 1}, flag_true, flag_one]
    texts = [json.dumps(r) for r in feed]
    texts += [handoff.digests.canonical(r).decode() for r in feed]
    bulk, plain = registry(), registry()
    bulk.add_lines(texts)
    plain.add_many(texts)
    assert repr(bulk.states()) == repr(plain.states())
    assert bulk.state(handoff.ItemId("acts", "web", "k9")).state == "conflicted"
