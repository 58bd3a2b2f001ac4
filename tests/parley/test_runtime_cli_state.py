"""``parley state list`` and ``parley state resolve`` on bad input (review F6, F8).

A refused resolve leaves the claim exactly as it found it (never half applied); a
read-only command never creates a store; a state file is created private (0600).

Private imports: it drives the command line in process through ``parley._cli.main(argv)``:
the CLI's public contract is its argv, output and exit status, which these tests hold (our
decision: no public ``cli`` modules).
"""

from __future__ import annotations

import sqlite3
import stat
import time
from pathlib import Path

import pytest

import parley
from parley._cli import main

from .runtime_harness import AGENT, PRINCIPAL, grant, load_shop

SHOP = load_shop()


def _unresolved(db: Path) -> tuple[parley.stores.SQLiteStore, str, str]:
    """A store holding one commit and one undo left unresolved: (store, proposal, receipt)."""
    store = parley.stores.SQLiteStore(str(db))
    svc = SHOP.build_service(trusted=[PRINCIPAL.public], store=store)
    agent = parley.Agent(AGENT, [grant()], service=svc.id)
    now = int(time.time())
    [shown] = svc.handle(agent.intent("shop.order", {"item": "latte"}), now=now)
    first, second = shown["proposals"][:2]
    done = svc.handle(agent.commit(first), now=now)[-1]["receipt"]
    gone = parley.stores.Lease("", now - 10, 0, AGENT.public, PRINCIPAL.public, second["hash"])
    assert store.begin_commit(second["id"], [], 0, "", now=now, lease=gone) == "new"
    assert store.begin_undo(done["id"], lease=gone) == "new"
    return store, second["id"], done["id"]


def _resolve(db: Path, *argv: str) -> int:
    return main(["state", "resolve", "--state", f"sqlite:{db}", *argv])


@pytest.mark.parametrize(
    ("argv", "reason"),
    [
        (["commit", "{P}", "--happened", "--result", "{bad"], "not_json"),
        (["commit", "{P}", "--not-happened", "--result", "{}"], "bad_result"),
        (["undo", "{R}", "--not-happened", "--result", "1"], "bad_result"),
    ],
)
def test_a_refused_resolve_leaves_the_claim_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], reason: str
) -> None:
    db = tmp_path / "s.sqlite"
    store, pid, rid = _unresolved(db)
    before = (store.lease("commit", pid), store.lease("undo", rid))
    argv = [a.replace("{P}", pid).replace("{R}", rid) for a in argv]
    assert _resolve(db, *argv) == 1
    assert reason in capsys.readouterr().err
    assert (store.lease("commit", pid), store.lease("undo", rid)) == before


def test_resolving_a_commit_whose_proposal_is_gone_leaves_the_claim(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "s.sqlite"
    store, pid, _ = _unresolved(db)
    before = store.lease("commit", pid)
    with sqlite3.connect(db) as raw:
        raw.execute("DELETE FROM proposals WHERE id = ?", (pid,))
    assert _resolve(db, "commit", pid, "--happened") == 1
    assert "unknown_proposal" in capsys.readouterr().err
    assert store.lease("commit", pid) == before
    assert _resolve(db, "commit", pid, "--not-happened") == 0  # releasing needs no proposal
    assert store.lease("commit", pid) is None


def test_resolving_an_undo_of_an_unreadable_receipt_is_an_error_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "s.sqlite"
    store, _, rid = _unresolved(db)
    before = store.lease("undo", rid)
    with sqlite3.connect(db) as raw:
        raw.execute("UPDATE receipts SET record = '{}' WHERE id = ?", (rid,))
    assert _resolve(db, "undo", rid, "--happened") == 1
    assert "bad_store" in capsys.readouterr().err
    assert store.lease("undo", rid) == before


def test_read_only_state_commands_never_create_a_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Review F8: a typo in --service created state/<typo>.sqlite and answered "nothing".
    monkeypatch.setenv("PARLEY_HOME", str(tmp_path / "home"))
    assert main(["state", "list", "--service", "shop.exampel"]) == 1
    assert "no_state" in capsys.readouterr().err
    new = tmp_path / "new" / "dir" / "x.sqlite"
    assert main(["state", "list", "--state", f"sqlite:{new}"]) == 1
    assert main(["state", "resolve", "--state", f"sqlite:{new}", "commit", "p", "--happened"]) == 1
    assert not (tmp_path / "home").exists()
    assert not (tmp_path / "new").exists()


def test_a_state_file_is_created_private(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite"
    parley.open_store(f"sqlite:{db}").add_proposal  # noqa: B018 - opening creates it
    assert stat.S_IMODE(db.stat().st_mode) == 0o600
    store = parley.stores.SQLiteStore(str(tmp_path / "direct.sqlite"))
    store.close()
    assert stat.S_IMODE((tmp_path / "direct.sqlite").stat().st_mode) == 0o600


def _open_files(path: Path) -> int:
    """How many file descriptors of this process are open on the database ``path``."""
    fds = Path("/proc/self/fd")
    if not fds.is_dir():
        pytest.skip("needs /proc/self/fd to count open files")
    count = 0
    for fd in fds.iterdir():
        try:
            target = fd.readlink()
        except OSError:  # closed meanwhile (the listing's own descriptor)
            continue
        count += target == path
    return count


@pytest.mark.parametrize(
    "argv",
    [
        ["state", "list"],
        ["state", "resolve", "commit", "{P}", "--not-happened"],
        ["state", "resolve", "undo", "{R}", "--happened", "--result", "{}"],
        ["state", "resolve", "commit", "no-such-commit", "--happened"],  # refused: not in flight
    ],
    ids=["list", "resolve-commit", "resolve-undo", "resolve-refused"],
)
def test_state_commands_close_the_store_they_open(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    import gc

    db = tmp_path / "s.sqlite"
    store, pid, rid = _unresolved(db)
    store.close()
    assert _open_files(db) == 0
    argv = [a.replace("{P}", pid).replace("{R}", rid) for a in argv]
    argv[2:2] = ["--state", f"sqlite:{db}"]
    gc.disable()  # a store left to the garbage collector would look closed after a collection
    try:
        assert main(argv) == (1 if "no-such-commit" in argv else 0), capsys.readouterr()
        assert _open_files(db) == 0
    finally:
        gc.enable()
