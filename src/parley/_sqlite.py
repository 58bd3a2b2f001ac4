"""A SQLite :class:`~parley._state.Store` (stdlib ``sqlite3``, WAL) shared by processes.

Every transaction of the store interface is one ``BEGIN IMMEDIATE`` transaction, so the
spend check and the reservation happen under SQLite's write lock: several service
processes sharing one database file never let concurrent commits pass a ``spend`` cap
together. Within a process one connection is shared behind a lock. Maps are bounded the
same way as :class:`~parley._state.MemoryStore` (expiry, then size caps; live replay
memory and undoable receipts are never dropped: a full store answers ``limit``). **Ours:**
a commit or undo whose process died stays claimed, its reservation counted, until it is
reconciled (``Service.recover``, ``parley state resolve``): its lease says who held it.
The schema version is ``PRAGMA user_version``; opening applies the missing migrations.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Literal

from ._grants import SpendCap
from ._handles import HandleStore, handle_expired, unknown_handle
from ._state import (
    PROPOSAL_GRACE,
    REPLAY_TTL,
    AutoClaim,
    Claim,
    Lease,
    ProposalRecord,
    ReceiptRecord,
    UndoClaim,
    auto_claim,
    check_caps,
    forgotten,
    held_by,
    record_text,
    record_value,
    replayed,
    store_full,
)
from .errors import ParleyError

__all__ = ["SQLiteStore"]

MIGRATIONS: list[list[str]] = [
    [  # v1: the schema before versions were recorded (idempotent: such files hold version 0)
        "CREATE TABLE IF NOT EXISTS proposals (id TEXT PRIMARY KEY, expires INTEGER NOT NULL,"
        " record TEXT NOT NULL)",
        "CREATE TABLE IF NOT EXISTS receipts (id TEXT PRIMARY KEY, proposal TEXT NOT NULL"
        " UNIQUE, keep_until INTEGER NOT NULL, undoing INTEGER NOT NULL DEFAULT 0,"
        " record TEXT NOT NULL)",
        "CREATE TABLE IF NOT EXISTS inflight (proposal TEXT PRIMARY KEY, amount INTEGER NOT NULL,"
        " blocks TEXT NOT NULL)",
        "CREATE TABLE IF NOT EXISTS totals (block TEXT PRIMARY KEY, amount INTEGER NOT NULL)",
        "CREATE TABLE IF NOT EXISTS replay (key TEXT NOT NULL, frame TEXT NOT NULL,"
        " until INTEGER NOT NULL, reply TEXT, PRIMARY KEY (key, frame))",
        "CREATE TABLE IF NOT EXISTS handles (handle TEXT PRIMARY KEY, key TEXT,"
        " expires INTEGER NOT NULL, value TEXT NOT NULL)",
    ],
    [  # v2 (issue 18): commits and undos in flight carry a lease (owner, times, who asked),
        # and proposals say whether they can ever be committed (anonymous ones kept apart)
        "ALTER TABLE inflight ADD COLUMN lease TEXT",
        "ALTER TABLE receipts ADD COLUMN undo_lease TEXT",
        "ALTER TABLE proposals ADD COLUMN anon INTEGER NOT NULL DEFAULT 0",
        "CREATE INDEX IF NOT EXISTS proposals_anon ON proposals (anon)",
    ],
    [  # v3 (review F4): an auto INTENT still being handled records who handles it and the
        # proposal it commits, so a claim left by a crash can be settled, not answered busy
        "ALTER TABLE replay ADD COLUMN claim TEXT",
    ],
]
"""The ordered schema migrations (run by ``ppstore.migrate_sqlite``); ``PRAGMA
user_version`` counts those applied."""

SCHEMA_VERSION = len(MIGRATIONS)
"""The schema version this code reads and writes."""

_COLUMNS = {
    "proposals": ("id", "expires", "record", "anon"),
    "receipts": ("id", "proposal", "keep_until", "undoing", "record", "undo_lease"),
    "inflight": ("proposal", "amount", "blocks", "lease"),
    "totals": ("block", "amount"),
    "replay": ("key", "frame", "until", "reply", "claim"),
    "handles": ("handle", "key", "expires", "value"),
}


def _create_private(path: str) -> None:
    """Create a new database file readable by its owner only (0600): it holds plans, EXPAND
    values and who asked for what. SQLite gives its -wal and -shm files the same mode."""
    if path == ":memory:" or path.startswith("file:") or not path:
        return
    with contextlib.suppress(OSError):  # exists already, or cannot: SQLite says why
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))


class _Handles:
    def __init__(self, store: SQLiteStore) -> None:
        self._store = store

    def put(self, handle: str, value: Any, *, key: str | None, now: int, ttl: int) -> None:
        with self._store._tx() as db:
            db.execute("DELETE FROM handles WHERE expires <= ?", (now,))
            (count,) = db.execute("SELECT COUNT(*) FROM handles").fetchone()
            if count >= self._store.max_handles:
                db.execute(
                    "DELETE FROM handles WHERE handle IN (SELECT handle FROM handles"
                    " ORDER BY expires LIMIT ?)",
                    (count - self._store.max_handles + 1,),
                )
            db.execute(
                "INSERT OR REPLACE INTO handles VALUES (?, ?, ?, ?)",
                (handle, key, now + ttl, record_text(value)),
            )

    def get(self, handle: str, *, key: str | None, now: int) -> Any:
        with self._store._tx() as db:
            row = db.execute(
                "SELECT key, expires, value FROM handles WHERE handle = ?", (handle,)
            ).fetchone()
            if row is None or (row[0] is not None and row[0] != key):
                raise unknown_handle()
            if row[1] <= now:
                db.execute("DELETE FROM handles WHERE handle = ?", (handle,))
                raise handle_expired()
            return json.loads(row[2])


class SQLiteStore:
    """A :class:`~parley._state.Store` in one SQLite database file (WAL mode).

    Open one per process on the same ``path`` to share proposals, receipts, replay
    memory, handles and exact spend totals between service processes.
    """

    def __init__(
        self,
        path: str,
        *,
        max_proposals: int = 100_000,
        max_anonymous: int = 10_000,
        max_receipts: int = 100_000,
        max_replay: int = 1_000_000,
        max_handles: int = 100_000,
        receipt_ttl: int = 86_400,
        timeout: float = 30.0,
    ) -> None:
        if not isinstance(path, str) or not path:
            raise ParleyError("bad_config", "a SQLite store needs a file path", reason="bad_state")
        self.path = path
        self.max_proposals = max_proposals
        self.max_anonymous = max_anonymous
        self.max_receipts = max_receipts
        self.max_replay = max_replay
        self.max_handles = max_handles
        self.receipt_ttl = receipt_ttl
        self._lock = threading.RLock()
        _create_private(path)
        self._db = sqlite3.connect(
            path, timeout=timeout, isolation_level=None, check_same_thread=False
        )
        try:
            wrong = self._open(timeout)
        except sqlite3.OperationalError:  # busy, read-only, …: not a question of shape
            self._db.close()
            raise
        except sqlite3.DatabaseError:  # not a database at all (or a corrupt one)
            wrong = ["the file"]
        if wrong:  # a tampered or foreign database: refuse it rather than misread it
            self._db.close()
            raise ParleyError(
                "internal",
                f"the database is not a Parley store ({wrong[0]} has another shape)",
                reason="bad_store",
            )
        self.handles: HandleStore = _Handles(self)

    def _open(self, timeout: float) -> list[str]:
        """Set the pragmas, create missing tables; return the tables of another shape."""
        self._db.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
        self._db.execute("PRAGMA journal_mode = WAL")
        # FULL: a receipt, reservation or replay entry that was reported done survives a
        # power cut too (with NORMAL the last ones could vanish and a spend be counted twice
        # against nothing, or an auto INTENT run again).
        self._db.execute("PRAGMA synchronous = FULL")
        from ppstore import StoreError, migrate_sqlite

        try:
            migrate_sqlite(self._db, "parley", MIGRATIONS)
        except StoreError as exc:
            if exc.code == "store_open":
                raise sqlite3.OperationalError(exc.message) from None
            if exc.code == "schema_too_new":
                return [f"schema version {self._db.execute('PRAGMA user_version').fetchone()[0]}"]
            return ["the schema"]
        with self._lock:
            return [
                f"table {table}"
                for table, columns in _COLUMNS.items()
                if tuple(row[1] for row in self._db.execute(f"PRAGMA table_info({table})"))
                != columns
            ]

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._db.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    # ---------------------------------------------------------------- proposals

    def add_proposal(
        self, record: ProposalRecord, *, now: int, vouched: bool | None = None
    ) -> None:
        """Keep a new proposal (see :class:`~parley._state.MemoryStore`: unvouched ones apart)."""
        anon = int(record.key is None if vouched is None else not vouched)
        cap = self.max_anonymous if anon else self.max_proposals
        with self._tx() as db:
            (count,) = db.execute(
                "SELECT COUNT(*) FROM proposals WHERE anon = ?", (anon,)
            ).fetchone()
            if count >= cap:
                db.execute(
                    "DELETE FROM proposals WHERE anon = ? AND expires + ? <= ?"
                    " AND id NOT IN (SELECT proposal FROM inflight)",
                    (anon, PROPOSAL_GRACE, now),
                )
                (count,) = db.execute(
                    "SELECT COUNT(*) FROM proposals WHERE anon = ?", (anon,)
                ).fetchone()
            if count >= cap:  # forget the oldest open ones of the same pool
                db.execute(
                    "DELETE FROM proposals WHERE rowid IN (SELECT rowid FROM proposals"
                    " WHERE anon = ? AND id NOT IN (SELECT proposal FROM inflight)"
                    " ORDER BY rowid LIMIT ?)",
                    (anon, count - cap + 1),
                )
                (count,) = db.execute(
                    "SELECT COUNT(*) FROM proposals WHERE anon = ?", (anon,)
                ).fetchone()
                if count >= cap:
                    raise store_full("open proposals")
            db.execute(
                "INSERT INTO proposals VALUES (?, ?, ?, ?)",
                (record.id, int(record.proposal["expires"]), record_text(record.as_json()), anon),
            )

    def proposal(self, proposal_id: str, *, now: int) -> ProposalRecord | None:
        """The proposal or ``None``."""
        with self._lock:
            row = self._db.execute(
                "SELECT expires, record FROM proposals WHERE id = ?", (proposal_id,)
            ).fetchone()
        if row is None or forgotten(row[0], now):
            return None
        return ProposalRecord.from_json(json.loads(row[1]))

    # ---------------------------------------------------------------- receipts

    def _receipt_row(self, where: str, value: str) -> ReceiptRecord | None:
        with self._lock:
            row = self._db.execute(
                f"SELECT record FROM receipts WHERE {where} = ?",  # noqa: S608 - fixed names
                (value,),
            ).fetchone()
        return None if row is None else ReceiptRecord.from_json(json.loads(row[0]))

    def receipt(self, receipt_id: str) -> ReceiptRecord | None:
        """The receipt record or ``None``."""
        return self._receipt_row("id", receipt_id)

    def receipt_for(self, proposal_id: str) -> ReceiptRecord | None:
        """The receipt of a committed proposal or ``None``."""
        return self._receipt_row("proposal", proposal_id)

    # ---------------------------------------------------------------- spend + commit

    def _totals(self, db: sqlite3.Connection, blocks: Iterable[str]) -> dict[str, int]:
        out = {}
        for block in blocks:
            row = db.execute("SELECT amount FROM totals WHERE block = ?", (block,)).fetchone()
            out[block] = 0 if row is None else int(row[0])
        return out

    def spent(self, blocks: Iterable[str], *, excluding: str | None = None) -> dict[str, int]:
        """Committed plus reserved spend per block."""
        wanted = list(blocks)
        with self._lock:
            totals = self._totals(self._db, wanted)
            own: tuple[int, list[str]] | None = None
            if excluding is not None:
                row = self._db.execute(
                    "SELECT amount, blocks FROM inflight WHERE proposal = ?", (excluding,)
                ).fetchone()
                if row is not None:
                    own = (int(row[0]), json.loads(row[1]))
        if own is None and excluding is not None:
            done = self.receipt_for(excluding)
            own = None if done is None else (done.amount, list(done.blocks))
        if own is not None:
            for block in wanted:
                if block in own[1]:
                    totals[block] -= own[0]
        return totals

    def begin_commit(
        self,
        proposal_id: str,
        caps: Sequence[SpendCap],
        amount: int,
        currency: str,
        *,
        now: int,
        lease: Lease | None = None,
    ) -> Claim:
        """Claim and reserve under SQLite's write lock."""
        with self._tx() as db:
            if db.execute("SELECT 1 FROM inflight WHERE proposal = ?", (proposal_id,)).fetchone():
                return "busy"
            if db.execute("SELECT 1 FROM receipts WHERE proposal = ?", (proposal_id,)).fetchone():
                return "done"
            wanted = [cap.block for cap in caps]
            blocks = check_caps(caps, self._totals(db, wanted), amount, currency)
            if not amount:  # nothing to count: a free commit creates no spend total
                blocks = ()
            if not self._room_for_receipt(db, now):
                raise store_full("receipts still inside their undo window")
            self._count(db, amount, blocks)
            db.execute(
                "INSERT INTO inflight VALUES (?, ?, ?, ?)",
                (
                    proposal_id,
                    amount,
                    record_text(blocks),
                    record_text((lease or Lease()).as_json()),
                ),
            )
            return "new"

    def _count(self, db: sqlite3.Connection, amount: int, blocks: Iterable[str]) -> None:
        for block in blocks if amount else ():
            db.execute(
                "INSERT INTO totals VALUES (?, ?)"
                " ON CONFLICT(block) DO UPDATE SET amount = amount + excluded.amount",
                (block, amount),
            )

    def finish_commit(self, record: ReceiptRecord, *, now: int, owner: str | None = None) -> bool:
        """Store the receipt, make the reservation final, forget the proposal.

        A late finisher (see ``Store.finish_commit``) never counts 0.
        """
        with self._tx() as db:
            row = db.execute(
                "SELECT amount, blocks, lease FROM inflight WHERE proposal = ?",
                (record.proposal,),
            ).fetchone()
            mine = row is not None and (held_by(Lease.from_json(record_value(row[2])), owner))
            stored = db.execute(
                "SELECT record FROM receipts WHERE proposal = ?", (record.proposal,)
            ).fetchone()
            if row is None and stored is not None:  # reconciled meanwhile: that receipt stays
                if owner is not None and json.loads(stored[0])["receipt"].get(
                    "at"
                ) != record.receipt.get("at"):
                    self._count(db, record.amount, record.blocks)  # the effect ran twice
                return False
            if row is not None:
                record = ReceiptRecord(
                    record.receipt,
                    record.key,
                    record.principal,
                    record.hash,
                    int(row[0]),
                    tuple(json.loads(row[1])),
                )
            else:  # released meanwhile, yet the effect took place: count it
                self._count(db, record.amount, record.blocks)
            db.execute("DELETE FROM inflight WHERE proposal = ?", (record.proposal,))
            db.execute("DELETE FROM proposals WHERE id = ?", (record.proposal,))
            at = int(record.receipt.get("at", now))
            undo = record.receipt.get("undo")
            until = int(undo["until"]) if isinstance(undo, dict) else at
            db.execute(
                "INSERT INTO receipts VALUES (?, ?, ?, 0, ?, NULL)",
                (
                    record.id,
                    record.proposal,
                    max(at + self.receipt_ttl, until),
                    record_text(record.as_json()),
                ),
            )
            return mine

    def _room_for_receipt(self, db: sqlite3.Connection, now: int) -> bool:
        """Make room for one receipt (see ``MemoryStore``); False when full of undoable ones."""

        def used() -> int:
            (receipts,) = db.execute("SELECT COUNT(*) FROM receipts").fetchone()
            (inflight,) = db.execute("SELECT COUNT(*) FROM inflight").fetchone()
            return int(receipts) + int(inflight)

        count = used()
        if count < self.max_receipts:
            return True
        db.execute("DELETE FROM receipts WHERE keep_until <= ? AND undoing = 0", (now,))
        count = used()
        if count >= self.max_receipts:
            db.execute(
                "DELETE FROM receipts WHERE id IN (SELECT id FROM receipts WHERE undoing = 0"
                " AND (json_extract(record, '$.undo') IS NOT NULL"
                " OR COALESCE(json_extract(record, '$.receipt.undo.until'), 0) <= ?)"
                " ORDER BY rowid LIMIT ?)",
                (now, count - self.max_receipts + 1),
            )
            count = used()
        return count < self.max_receipts

    def abort_commit(self, proposal_id: str, *, owner: str | None = None) -> None:
        """Release the claim and the reservation (only ``owner``'s, when given)."""
        with self._tx() as db:
            row = db.execute(
                "SELECT amount, blocks, lease FROM inflight WHERE proposal = ?", (proposal_id,)
            ).fetchone()
            if row is None:
                return
            if not held_by(Lease.from_json(record_value(row[2])), owner):
                return  # not ours any more: the process holding it settles it
            for block in json.loads(row[1]):
                db.execute(
                    "UPDATE totals SET amount = amount - ? WHERE block = ?", (int(row[0]), block)
                )
            db.execute("DELETE FROM inflight WHERE proposal = ?", (proposal_id,))

    # ---------------------------------------------------------------- undo

    def begin_undo(self, receipt_id: str, *, lease: Lease | None = None) -> UndoClaim:
        """Claim a receipt for undo."""
        with self._tx() as db:
            row = db.execute(
                "SELECT undoing, record FROM receipts WHERE id = ?", (receipt_id,)
            ).fetchone()
            if row is None:  # never issued, or pruned (by another connection meanwhile)
                return "gone"
            if json.loads(row[1]).get("undo") is not None:
                return "done"
            if row[0]:
                return "busy"
            db.execute(
                "UPDATE receipts SET undoing = 1, undo_lease = ? WHERE id = ?",
                (record_text((lease or Lease()).as_json()), receipt_id),
            )
            return "new"

    def lease(self, kind: Literal["commit", "undo"], subject: str) -> Lease | None:
        """The lease of a claim in flight."""
        query = (
            "SELECT lease FROM inflight WHERE proposal = ?"
            if kind == "commit"
            else "SELECT undo_lease FROM receipts WHERE id = ? AND undoing = 1"
        )
        with self._lock:
            row = self._db.execute(query, (subject,)).fetchone()
        return None if row is None else Lease.from_json(record_value(row[0]))

    def leases(
        self, kind: Literal["commit", "undo"], *, limit: int = 1000
    ) -> list[tuple[str, Lease]]:
        """Claims in flight of one kind, oldest first."""
        query = (
            "SELECT proposal, lease FROM inflight ORDER BY rowid LIMIT ?"
            if kind == "commit"
            else "SELECT id, undo_lease FROM receipts WHERE undoing = 1 ORDER BY rowid LIMIT ?"
        )
        with self._lock:
            rows = self._db.execute(query, (limit,)).fetchall()
        return [(str(row[0]), Lease.from_json(record_value(row[1]))) for row in rows]

    def take_over(
        self, kind: Literal["commit", "undo"], subject: str, expect: Lease, lease: Lease
    ) -> bool:
        """Compare-and-swap a lease under the write lock."""
        with self._tx() as db:
            if self.lease(kind, subject) != expect:
                return False
            if kind == "commit":
                db.execute(
                    "UPDATE inflight SET lease = ? WHERE proposal = ?",
                    (record_text(lease.as_json()), subject),
                )
            else:
                db.execute(
                    "UPDATE receipts SET undo_lease = ? WHERE id = ?",
                    (record_text(lease.as_json()), subject),
                )
            return True

    def finish_undo(
        self, receipt_id: str, undo: dict[str, Any], key: str, *, owner: str | None = None
    ) -> bool:
        """Record the reversal (a late finisher's too, unless one is recorded)."""
        with self._tx() as db:
            row = db.execute(
                "SELECT record, undoing, undo_lease FROM receipts WHERE id = ?", (receipt_id,)
            ).fetchone()
            if row is None:
                return False
            mine = bool(row[1]) and (held_by(Lease.from_json(record_value(row[2])), owner))
            record = json.loads(row[0])
            if record.get("undo") is None:  # a reconciled undo stays
                record["undo"], record["undo_key"] = undo, key
            else:
                mine = False
            db.execute(
                "UPDATE receipts SET undoing = 0, undo_lease = NULL, record = ? WHERE id = ?",
                (record_text(record), receipt_id),
            )
            return mine

    def abort_undo(self, receipt_id: str, *, owner: str | None = None) -> None:
        """Release the undo claim (only ``owner``'s, when given)."""
        with self._tx() as db:
            held = None if owner is None else self.lease("undo", receipt_id)
            if held is not None and not held_by(held, owner):
                return
            db.execute(
                "UPDATE receipts SET undoing = 0, undo_lease = NULL WHERE id = ?", (receipt_id,)
            )

    # ---------------------------------------------------------------- auto replay memory

    def begin_auto(
        self,
        key: str,
        frame_id: str,
        *,
        now: int,
        ttl: int = REPLAY_TTL,
        lease: Lease | None = None,
    ) -> Claim | dict[str, Any]:
        """Claim ``(key, frame_id)``."""
        with self._tx() as db:
            row = db.execute(
                "SELECT until, reply FROM replay WHERE key = ? AND frame = ?", (key, frame_id)
            ).fetchone()
            answer = None if row is None else replayed(row[0], row[1], now)
            if answer is not None:
                return answer
            (count,) = db.execute("SELECT COUNT(*) FROM replay").fetchone()
            if count >= self.max_replay:
                db.execute("DELETE FROM replay WHERE until < ?", (now,))
                (count,) = db.execute("SELECT COUNT(*) FROM replay").fetchone()
                if count >= self.max_replay:
                    raise store_full("remembered auto requests")
            claim = (
                None if lease is None else record_text({"lease": lease.as_json(), "proposal": None})
            )
            db.execute(
                "INSERT OR REPLACE INTO replay VALUES (?, ?, ?, NULL, ?)",
                (key, frame_id, now + max(ttl, REPLAY_TTL), claim),
            )
            return "new"

    def link_auto(self, key: str, frame_id: str, proposal_id: str) -> None:
        """Record the proposal an unfinished auto INTENT commits."""
        with self._tx() as db:
            row = db.execute(
                "SELECT claim FROM replay WHERE key = ? AND frame = ? AND reply IS NULL",
                (key, frame_id),
            ).fetchone()
            claim = None if row is None else record_value(row[0])
            if isinstance(claim, dict):
                claim["proposal"] = proposal_id
                db.execute(
                    "UPDATE replay SET claim = ? WHERE key = ? AND frame = ?",
                    (record_text(claim), key, frame_id),
                )

    def auto_claims(self, *, limit: int = 1000) -> list[AutoClaim]:
        """Unfinished auto INTENTs, oldest first."""
        with self._lock:
            rows = self._db.execute(
                "SELECT key, frame, claim FROM replay WHERE reply IS NULL ORDER BY rowid LIMIT ?",
                (limit,),
            ).fetchall()
        return [auto_claim(str(key), str(frame), record_value(text)) for key, frame, text in rows]

    def finish_auto(
        self, key: str, frame_id: str, reply: dict[str, Any], *, now: int, ttl: int = REPLAY_TTL
    ) -> None:
        """Remember the reply."""
        with self._tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO replay VALUES (?, ?, ?, ?, NULL)",
                (key, frame_id, now + max(ttl, REPLAY_TTL), record_text(reply)),
            )

    def abort_auto(self, key: str, frame_id: str) -> None:
        """Drop an unfinished claim."""
        with self._tx() as db:
            db.execute(
                "DELETE FROM replay WHERE key = ? AND frame = ? AND reply IS NULL",
                (key, frame_id),
            )

    def sizes(self) -> dict[str, int]:
        """Rows per table (for tests and monitoring)."""
        with self._lock:
            return {
                table: int(self._db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])  # noqa: S608
                for table in ("proposals", "receipts", "replay", "handles", "totals", "inflight")
            }
