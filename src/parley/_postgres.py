"""A PostgreSQL :class:`~parley.stores.Store` shared by service replicas (psycopg 3).

Opened by :func:`parley.open_store` for a ``postgresql://`` URL (the ``postgres`` extra).
Several ``parley serve`` processes on one database share proposals, receipts, commits in
flight with their leases, auto-INTENT replay memory, EXPAND handles and spend totals,
exactly: the same transactions as :class:`~parley.stores.SQLiteStore`, with the same bounds.

**Ours** (docs/spec/parley-runtime.md, "PostgreSQL state"):

- Isolation ``READ COMMITTED``; each transaction first takes a transaction-scoped
  advisory lock on its subject (the proposal of a commit, the receipt of an undo, the
  ``(key, frame)`` of an auto INTENT), then the spend-total rows it touches with
  ``SELECT … FOR UPDATE``, in code-point order of the block ids. That one lock order
  rules out deadlocks; the cap check and the reservation happen under the row locks,
  never as a read followed by an unguarded write. A missing total row is inserted (at 0)
  before it is locked, so two first commits of a block cannot both pass the cap.
- Size bounds (proposals, receipts, replay memory, handles) are counted inside the
  transaction without a table lock: under concurrent writers a bound can be passed by
  at most the number of transactions running at once. Nothing that must be kept (live
  replay memory, receipts still inside their undo window) is ever dropped to make room.
- Ids are stored with ``\\`` and NUL escaped (PostgreSQL text holds no NUL; frame ids may).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar

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

if TYPE_CHECKING:
    import psycopg

    Conn = psycopg.Connection[Any]

__all__ = ["MIGRATIONS", "PostgresStore"]

T = TypeVar("T")

MIGRATIONS: list[list[str]] = [
    [
        "CREATE TABLE parley_proposals (id text PRIMARY KEY, seq bigserial NOT NULL,"
        " expires bigint NOT NULL, anon boolean NOT NULL, record text NOT NULL)",
        "CREATE INDEX parley_proposals_pool ON parley_proposals (anon, seq)",
        "CREATE TABLE parley_receipts (id text PRIMARY KEY, seq bigserial NOT NULL,"
        " proposal text NOT NULL UNIQUE, keep_until bigint NOT NULL,"
        " undo_until bigint NOT NULL, undone boolean NOT NULL DEFAULT false,"
        " undoing boolean NOT NULL DEFAULT false, undo_lease text, record text NOT NULL)",
        "CREATE INDEX parley_receipts_seq ON parley_receipts (seq)",
        "CREATE TABLE parley_inflight (proposal text PRIMARY KEY, seq bigserial NOT NULL,"
        " amount bigint NOT NULL, blocks text NOT NULL, lease text NOT NULL)",
        "CREATE TABLE parley_totals (block text PRIMARY KEY, amount bigint NOT NULL)",
        "CREATE TABLE parley_replay (key text NOT NULL, frame text NOT NULL,"
        " seq bigserial NOT NULL, until bigint NOT NULL, reply text, claim text,"
        " PRIMARY KEY (key, frame))",
        "CREATE INDEX parley_replay_until ON parley_replay (until)",
        "CREATE TABLE parley_handles (handle text PRIMARY KEY, key text,"
        " expires bigint NOT NULL, value text NOT NULL)",
        "CREATE INDEX parley_handles_expires ON parley_handles (expires)",
    ],
]
"""The ordered PostgreSQL migrations of the Parley store (``ppstore_migrations``)."""


def _enc(text: str) -> str:
    """An id as stored: ``\\`` doubled and NUL written ``\\0`` (one-to-one)."""
    return text.replace("\\", "\\\\").replace("\x00", "\\0")


def _dec(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            out.append("\x00" if text[i + 1] == "0" else text[i + 1])
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _subject(conn: Conn, *parts: str) -> None:
    """Take the transaction's subject lock (always first: see the module docstring)."""
    from ppstore import advisory_key

    conn.execute(
        "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
        (advisory_key("parley", *(_enc(p) for p in parts)),),
    )


def _count(conn: Conn, amount: int, blocks: Iterable[str]) -> None:
    """Add ``amount`` to each block's total (row locks in code-point order)."""
    for block in sorted(set(blocks)) if amount else ():
        conn.execute(
            "INSERT INTO parley_totals (block, amount) VALUES (%s, %s) ON CONFLICT (block)"
            " DO UPDATE SET amount = parley_totals.amount + EXCLUDED.amount",
            (_enc(block), amount),
        )


class _Handles:
    def __init__(self, store: PostgresStore) -> None:
        self._store = store

    def put(self, handle: str, value: Any, *, key: str | None, now: int, ttl: int) -> None:
        limit = self._store.max_handles

        def work(conn: Conn) -> None:
            conn.execute("DELETE FROM parley_handles WHERE expires <= %s", (now,))
            (count,) = conn.execute("SELECT COUNT(*) FROM parley_handles").fetchone() or (0,)
            if count >= limit:
                conn.execute(
                    "DELETE FROM parley_handles WHERE handle IN (SELECT handle FROM"
                    " parley_handles ORDER BY expires LIMIT %s)",
                    (count - limit + 1,),
                )
            conn.execute(
                "INSERT INTO parley_handles (handle, key, expires, value) VALUES (%s, %s, %s, %s)"
                " ON CONFLICT (handle) DO UPDATE SET key = EXCLUDED.key,"
                " expires = EXCLUDED.expires, value = EXCLUDED.value",
                (_enc(handle), None if key is None else _enc(key), now + ttl, record_text(value)),
            )

        self._store._tx(work)

    def get(self, handle: str, *, key: str | None, now: int) -> Any:
        def work(conn: Conn) -> tuple[bool, Any]:
            row = conn.execute(
                "SELECT key, expires, value FROM parley_handles WHERE handle = %s",
                (_enc(handle),),
            ).fetchone()
            if row is None or (row[0] is not None and _dec(row[0]) != key):
                raise unknown_handle()
            if row[1] <= now:
                conn.execute("DELETE FROM parley_handles WHERE handle = %s", (_enc(handle),))
                return False, None
            return True, json.loads(row[2])

        live, value = self._store._tx(work)
        if not live:  # raised after the transaction, so the delete is kept
            raise handle_expired()
        return value


class PostgresStore:
    """A :class:`~parley.stores.Store` in a PostgreSQL database (tables ``parley_*``).

    ``url`` is a ``postgresql://`` URL (libpq). Open one per process (each holds one
    connection, shared by its threads) on the same database to share everything between
    service replicas; limits as for :class:`~parley.stores.SQLiteStore`. The schema is created
    and upgraded on open by the shared migration runner (store name ``parley``);
    ``create=False`` refuses a database where no store was ever created (``no_state``).
    """

    def __init__(
        self,
        url: str,
        *,
        max_proposals: int = 100_000,
        max_anonymous: int = 10_000,
        max_receipts: int = 100_000,
        max_replay: int = 1_000_000,
        max_handles: int = 100_000,
        receipt_ttl: int = 86_400,
        create: bool = True,
    ) -> None:
        from ppstore import Pg, StoreError, StoreUnavailableError, migrate_postgres, redact

        self.path = redact(url)
        """The store's URL without its password (what ``parley serve`` prints)."""
        self.max_proposals = max_proposals
        self.max_anonymous = max_anonymous
        self.max_receipts = max_receipts
        self.max_replay = max_replay
        self.max_handles = max_handles
        self.receipt_ttl = receipt_ttl
        try:
            self._pg = Pg(url, application_name="parley")
        except StoreError as exc:  # the URL or the installed extras: the caller's configuration
            missing = exc.code == "postgres_unavailable"
            raise ParleyError(
                "bad_config",
                f"cannot open the state store: {exc.message}",
                reason="extra_missing" if missing else "bad_state",
            ) from None
        try:
            with self._pg.connection() as conn:
                if not create and conn.execute(
                    "SELECT to_regclass('parley_inflight') IS NULL"
                ).fetchone() == (True,):
                    self._pg.close()
                    raise ParleyError(
                        "bad_config",
                        f"no Parley state in {self.path[:200]} (check --state)",
                        reason="no_state",
                    )
                migrate_postgres(conn, "parley", MIGRATIONS)
        except StoreError as exc:
            self._pg.close()
            if isinstance(exc, StoreUnavailableError):  # an outage (a lock wait, issue 25)
                raise ParleyError(
                    "unavailable",
                    f"the state store failed: {exc.message}"[:300],
                    reason="store_unavailable",
                ) from None
            raise ParleyError(
                "internal", f"the state store cannot be used: {exc.message}", reason="bad_store"
            ) from None
        self.handles: HandleStore = _Handles(self)

    def close(self) -> None:
        """Close the connection."""
        self._pg.close()

    def _tx(self, work: Callable[[Conn], T]) -> T:
        from ppstore import StoreError

        try:
            return self._pg.tx(work)
        except StoreError as exc:
            raise ParleyError(
                "unavailable",
                f"the state store failed: {exc.message}"[:300],
                reason="store_unavailable",
            ) from None

    # ---------------------------------------------------------------- proposals

    def add_proposal(
        self, record: ProposalRecord, *, now: int, vouched: bool | None = None
    ) -> None:
        """Keep a new proposal (see :class:`~parley._state.MemoryStore`: unvouched ones apart)."""
        anon = record.key is None if vouched is None else not vouched
        cap = self.max_anonymous if anon else self.max_proposals
        row = (
            _enc(record.id),
            int(record.proposal["expires"]),
            anon,
            record_text(record.as_json()),
        )

        def count(conn: Conn) -> int:
            found = conn.execute(
                "SELECT COUNT(*) FROM parley_proposals WHERE anon = %s", (anon,)
            ).fetchone()
            return int(found[0]) if found else 0

        def work(conn: Conn) -> None:
            held = count(conn)
            if held >= cap:
                conn.execute(
                    "DELETE FROM parley_proposals WHERE anon = %s AND expires + %s <= %s"
                    " AND id NOT IN (SELECT proposal FROM parley_inflight)",
                    (anon, PROPOSAL_GRACE, now),
                )
                held = count(conn)
            if held >= cap:  # forget the oldest open ones of the same pool
                conn.execute(
                    "DELETE FROM parley_proposals WHERE id IN (SELECT id FROM parley_proposals"
                    " WHERE anon = %s AND id NOT IN (SELECT proposal FROM parley_inflight)"
                    " ORDER BY seq LIMIT %s)",
                    (anon, held - cap + 1),
                )
                if count(conn) >= cap:
                    raise store_full("open proposals")
            conn.execute(
                "INSERT INTO parley_proposals (id, expires, anon, record) VALUES (%s, %s, %s, %s)",
                row,
            )

        self._tx(work)

    def proposal(self, proposal_id: str, *, now: int) -> ProposalRecord | None:
        """The proposal or ``None``."""
        row = self._tx(
            lambda conn: conn.execute(
                "SELECT expires, record FROM parley_proposals WHERE id = %s", (_enc(proposal_id),)
            ).fetchone()
        )
        if row is None or forgotten(row[0], now):
            return None
        return ProposalRecord.from_json(json.loads(row[1]))

    # ---------------------------------------------------------------- receipts

    def receipt(self, receipt_id: str) -> ReceiptRecord | None:
        """The receipt record or ``None``."""
        row = self._tx(
            lambda conn: conn.execute(
                "SELECT record FROM parley_receipts WHERE id = %s", (_enc(receipt_id),)
            ).fetchone()
        )
        return None if row is None else ReceiptRecord.from_json(json.loads(row[0]))

    def receipt_for(self, proposal_id: str) -> ReceiptRecord | None:
        """The receipt of a committed proposal or ``None``."""
        row = self._tx(
            lambda conn: conn.execute(
                "SELECT record FROM parley_receipts WHERE proposal = %s", (_enc(proposal_id),)
            ).fetchone()
        )
        return None if row is None else ReceiptRecord.from_json(json.loads(row[0]))

    # ---------------------------------------------------------------- spend + commit

    def spent(self, blocks: Iterable[str], *, excluding: str | None = None) -> dict[str, int]:
        """Committed plus reserved spend per block, leaving out ``excluding``'s."""
        wanted = list(blocks)

        def work(conn: Conn) -> dict[str, int]:
            out = {}
            for block in wanted:
                row = conn.execute(
                    "SELECT amount FROM parley_totals WHERE block = %s", (_enc(block),)
                ).fetchone()
                out[block] = 0 if row is None else int(row[0])
            if excluding is None:
                return out
            own: tuple[int, list[str]] | None = None
            row = conn.execute(
                "SELECT amount, blocks FROM parley_inflight WHERE proposal = %s",
                (_enc(excluding),),
            ).fetchone()
            if row is not None:
                own = (int(row[0]), json.loads(row[1]))
            else:
                row = conn.execute(
                    "SELECT record FROM parley_receipts WHERE proposal = %s", (_enc(excluding),)
                ).fetchone()
                if row is not None:
                    done = ReceiptRecord.from_json(json.loads(row[0]))
                    own = (done.amount, list(done.blocks))
            if own is not None:
                for block in wanted:
                    if block in own[1]:
                        out[block] -= own[0]
            return out

        return self._tx(work)

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
        """Claim the proposal and reserve its cost under the subject lock and row locks."""
        pid = _enc(proposal_id)
        held = record_text((lease or Lease()).as_json())

        def work(conn: Conn) -> Claim:
            _subject(conn, "commit", proposal_id)
            if conn.execute("SELECT 1 FROM parley_inflight WHERE proposal = %s", (pid,)).fetchone():
                return "busy"
            if conn.execute("SELECT 1 FROM parley_receipts WHERE proposal = %s", (pid,)).fetchone():
                return "done"
            totals: dict[str, int] = {}
            for block in sorted({cap.block for cap in caps}):
                if amount:  # a row to lock, so two first commits of a block serialise
                    conn.execute(
                        "INSERT INTO parley_totals (block, amount) VALUES (%s, 0)"
                        " ON CONFLICT (block) DO NOTHING",
                        (_enc(block),),
                    )
                row = conn.execute(
                    "SELECT amount FROM parley_totals WHERE block = %s FOR UPDATE",
                    (_enc(block),),
                ).fetchone()
                totals[block] = 0 if row is None else int(row[0])
            blocks = check_caps(caps, totals, amount, currency)
            if not amount:  # nothing to count: a free commit creates no spend total
                blocks = ()
            if not self._room_for_receipt(conn, now):
                raise store_full("receipts still inside their undo window")
            for block in sorted(set(blocks)):
                conn.execute(
                    "UPDATE parley_totals SET amount = amount + %s WHERE block = %s",
                    (amount, _enc(block)),
                )
            conn.execute(
                "INSERT INTO parley_inflight (proposal, amount, blocks, lease)"
                " VALUES (%s, %s, %s, %s)",
                (pid, amount, record_text(blocks), held),
            )
            return "new"

        return self._tx(work)

    def finish_commit(self, record: ReceiptRecord, *, now: int, owner: str | None = None) -> bool:
        """Store the receipt, make the reservation final, forget the proposal.

        A late finisher (see ``Store.finish_commit``) never counts 0.
        """
        pid = _enc(record.proposal)

        def work(conn: Conn) -> bool:
            _subject(conn, "commit", record.proposal)
            row = conn.execute(
                "SELECT amount, blocks, lease FROM parley_inflight WHERE proposal = %s", (pid,)
            ).fetchone()
            mine = row is not None and (held_by(Lease.from_json(record_value(row[2])), owner))
            stored = conn.execute(
                "SELECT record FROM parley_receipts WHERE proposal = %s", (pid,)
            ).fetchone()
            final = record
            if row is None and stored is not None:  # reconciled meanwhile: that one stays
                if owner is not None and json.loads(stored[0])["receipt"].get(
                    "at"
                ) != record.receipt.get("at"):
                    _count(conn, record.amount, record.blocks)  # the effect ran twice
                return False
            if row is not None:
                final = ReceiptRecord(
                    record.receipt,
                    record.key,
                    record.principal,
                    record.hash,
                    int(row[0]),
                    tuple(json.loads(row[1])),
                )
            else:  # released meanwhile, yet the effect took place: count it
                _count(conn, record.amount, record.blocks)
            conn.execute("DELETE FROM parley_inflight WHERE proposal = %s", (pid,))
            conn.execute("DELETE FROM parley_proposals WHERE id = %s", (pid,))
            at = int(final.receipt.get("at", now))
            undo = final.receipt.get("undo")
            until = int(undo["until"]) if isinstance(undo, dict) else 0
            conn.execute(
                "INSERT INTO parley_receipts (id, proposal, keep_until, undo_until, record)"
                " VALUES (%s, %s, %s, %s, %s)",
                (
                    _enc(final.id),
                    pid,
                    max(at + self.receipt_ttl, until or at),
                    until,
                    record_text(final.as_json()),
                ),
            )
            return mine

        return self._tx(work)

    def _room_for_receipt(self, conn: Conn, now: int) -> bool:
        """Make room for one receipt (see ``MemoryStore``); False when full of undoable ones."""

        def used() -> int:
            row = conn.execute(
                "SELECT (SELECT COUNT(*) FROM parley_receipts)"
                " + (SELECT COUNT(*) FROM parley_inflight)"
            ).fetchone()
            return int(row[0]) if row else 0

        count = used()
        if count < self.max_receipts:
            return True
        conn.execute("DELETE FROM parley_receipts WHERE keep_until <= %s AND NOT undoing", (now,))
        count = used()
        if count >= self.max_receipts:
            conn.execute(
                "DELETE FROM parley_receipts WHERE id IN (SELECT id FROM parley_receipts"
                " WHERE NOT undoing AND (undone OR undo_until <= %s) ORDER BY seq LIMIT %s)",
                (now, count - self.max_receipts + 1),
            )
            count = used()
        return count < self.max_receipts

    def abort_commit(self, proposal_id: str, *, owner: str | None = None) -> None:
        """Release the claim and the reservation (only ``owner``'s, when given)."""
        pid = _enc(proposal_id)

        def work(conn: Conn) -> None:
            _subject(conn, "commit", proposal_id)
            row = conn.execute(
                "SELECT amount, blocks, lease FROM parley_inflight WHERE proposal = %s", (pid,)
            ).fetchone()
            if row is None:
                return
            if not held_by(Lease.from_json(record_value(row[2])), owner):
                return  # not ours any more: the process holding it settles it
            for block in sorted(set(json.loads(row[1]))):
                conn.execute(
                    "UPDATE parley_totals SET amount = amount - %s WHERE block = %s",
                    (int(row[0]), _enc(block)),
                )
            conn.execute("DELETE FROM parley_inflight WHERE proposal = %s", (pid,))

        self._tx(work)

    # ---------------------------------------------------------------- undo

    def begin_undo(self, receipt_id: str, *, lease: Lease | None = None) -> UndoClaim:
        """Claim a receipt for undo."""
        rid = _enc(receipt_id)

        def work(conn: Conn) -> UndoClaim:
            _subject(conn, "undo", receipt_id)
            row = conn.execute(  # locked: a concurrent prune cannot take it from under us
                "SELECT undoing, undone FROM parley_receipts WHERE id = %s FOR UPDATE", (rid,)
            ).fetchone()
            if row is None:  # never issued, or pruned (by another replica meanwhile)
                return "gone"
            if row[1]:
                return "done"
            if row[0]:
                return "busy"
            conn.execute(
                "UPDATE parley_receipts SET undoing = true, undo_lease = %s WHERE id = %s",
                (record_text((lease or Lease()).as_json()), rid),
            )
            return "new"

        return self._tx(work)

    @staticmethod
    def _lease(conn: Conn, kind: Literal["commit", "undo"], subject: str) -> Lease | None:
        query = (
            "SELECT lease FROM parley_inflight WHERE proposal = %s"
            if kind == "commit"
            else "SELECT undo_lease FROM parley_receipts WHERE id = %s AND undoing"
        )
        row = conn.execute(query, (_enc(subject),)).fetchone()
        return None if row is None else Lease.from_json(record_value(row[0]))

    def lease(self, kind: Literal["commit", "undo"], subject: str) -> Lease | None:
        """The lease of a claim in flight."""
        return self._tx(lambda conn: self._lease(conn, kind, subject))

    def leases(
        self, kind: Literal["commit", "undo"], *, limit: int = 1000
    ) -> list[tuple[str, Lease]]:
        """Claims in flight of one kind, oldest first."""
        query = (
            "SELECT proposal, lease FROM parley_inflight ORDER BY seq LIMIT %s"
            if kind == "commit"
            else "SELECT id, undo_lease FROM parley_receipts WHERE undoing ORDER BY seq LIMIT %s"
        )
        rows = self._tx(lambda conn: conn.execute(query, (limit,)).fetchall())
        return [(_dec(str(row[0])), Lease.from_json(record_value(row[1]))) for row in rows]

    def take_over(
        self, kind: Literal["commit", "undo"], subject: str, expect: Lease, lease: Lease
    ) -> bool:
        """Compare-and-swap a lease under the subject lock."""

        def work(conn: Conn) -> bool:
            _subject(conn, kind, subject)
            if self._lease(conn, kind, subject) != expect:
                return False
            if kind == "commit":
                conn.execute(
                    "UPDATE parley_inflight SET lease = %s WHERE proposal = %s",
                    (record_text(lease.as_json()), _enc(subject)),
                )
            else:
                conn.execute(
                    "UPDATE parley_receipts SET undo_lease = %s WHERE id = %s",
                    (record_text(lease.as_json()), _enc(subject)),
                )
            return True

        return self._tx(work)

    def finish_undo(
        self, receipt_id: str, undo: dict[str, Any], key: str, *, owner: str | None = None
    ) -> bool:
        """Record the reversal (a late finisher's too, unless one is recorded)."""
        rid = _enc(receipt_id)

        def work(conn: Conn) -> bool:
            _subject(conn, "undo", receipt_id)
            row = conn.execute(
                "SELECT record, undoing, undo_lease FROM parley_receipts WHERE id = %s", (rid,)
            ).fetchone()
            if row is None:
                return False
            mine = bool(row[1]) and (held_by(Lease.from_json(record_value(row[2])), owner))
            record = json.loads(row[0])
            if record.get("undo") is None:  # a reconciled undo stays
                record["undo"], record["undo_key"] = undo, key
            else:
                mine = False
            conn.execute(
                "UPDATE parley_receipts SET undoing = false, undo_lease = NULL, undone = true,"
                " record = %s WHERE id = %s",
                (record_text(record), rid),
            )
            return mine

        return self._tx(work)

    def abort_undo(self, receipt_id: str, *, owner: str | None = None) -> None:
        """Release the undo claim (only ``owner``'s, when given)."""

        def work(conn: Conn) -> None:
            _subject(conn, "undo", receipt_id)
            held = None if owner is None else self._lease(conn, "undo", receipt_id)
            if held is not None and not held_by(held, owner):
                return
            conn.execute(
                "UPDATE parley_receipts SET undoing = false, undo_lease = NULL WHERE id = %s",
                (_enc(receipt_id),),
            )

        self._tx(work)

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
        """Claim ``(key, frame_id)`` under its subject lock."""
        ids = (_enc(key), _enc(frame_id))
        claim = None if lease is None else record_text({"lease": lease.as_json(), "proposal": None})

        def work(conn: Conn) -> Claim | dict[str, Any]:
            _subject(conn, "auto", key, frame_id)
            row = conn.execute(
                "SELECT until, reply FROM parley_replay WHERE key = %s AND frame = %s", ids
            ).fetchone()
            answer = None if row is None else replayed(row[0], row[1], now)
            if answer is not None:
                return answer
            (count,) = conn.execute("SELECT COUNT(*) FROM parley_replay").fetchone() or (0,)
            if count >= self.max_replay:
                conn.execute("DELETE FROM parley_replay WHERE until < %s", (now,))
                (count,) = conn.execute("SELECT COUNT(*) FROM parley_replay").fetchone() or (0,)
                if count >= self.max_replay:
                    raise store_full("remembered auto requests")
            conn.execute(
                "INSERT INTO parley_replay (key, frame, until, reply, claim)"
                " VALUES (%s, %s, %s, NULL, %s) ON CONFLICT (key, frame) DO UPDATE SET"
                " until = EXCLUDED.until, reply = NULL, claim = EXCLUDED.claim,"
                " seq = nextval(pg_get_serial_sequence('parley_replay', 'seq'))",
                (*ids, now + max(ttl, REPLAY_TTL), claim),
            )
            return "new"

        return self._tx(work)

    def link_auto(self, key: str, frame_id: str, proposal_id: str) -> None:
        """Record the proposal an unfinished auto INTENT commits."""
        ids = (_enc(key), _enc(frame_id))

        def work(conn: Conn) -> None:
            _subject(conn, "auto", key, frame_id)
            row = conn.execute(
                "SELECT claim FROM parley_replay WHERE key = %s AND frame = %s AND reply IS NULL",
                ids,
            ).fetchone()
            claim = None if row is None else record_value(row[0])
            if isinstance(claim, dict):
                claim["proposal"] = proposal_id
                conn.execute(
                    "UPDATE parley_replay SET claim = %s WHERE key = %s AND frame = %s",
                    (record_text(claim), *ids),
                )

        self._tx(work)

    def auto_claims(self, *, limit: int = 1000) -> list[AutoClaim]:
        """Unfinished auto INTENTs, oldest first."""
        rows = self._tx(
            lambda conn: conn.execute(
                "SELECT key, frame, claim FROM parley_replay WHERE reply IS NULL"
                " ORDER BY seq LIMIT %s",
                (limit,),
            ).fetchall()
        )
        return [auto_claim(_dec(key), _dec(frame), record_value(text)) for key, frame, text in rows]

    def finish_auto(
        self, key: str, frame_id: str, reply: dict[str, Any], *, now: int, ttl: int = REPLAY_TTL
    ) -> None:
        """Remember the reply."""

        def work(conn: Conn) -> None:
            _subject(conn, "auto", key, frame_id)
            conn.execute(
                "INSERT INTO parley_replay (key, frame, until, reply, claim)"
                " VALUES (%s, %s, %s, %s, NULL) ON CONFLICT (key, frame) DO UPDATE SET"
                " until = EXCLUDED.until, reply = EXCLUDED.reply, claim = NULL",
                (_enc(key), _enc(frame_id), now + max(ttl, REPLAY_TTL), record_text(reply)),
            )

        self._tx(work)

    def abort_auto(self, key: str, frame_id: str) -> None:
        """Drop an unfinished claim."""

        def work(conn: Conn) -> None:
            _subject(conn, "auto", key, frame_id)
            conn.execute(
                "DELETE FROM parley_replay WHERE key = %s AND frame = %s AND reply IS NULL",
                (_enc(key), _enc(frame_id)),
            )

        self._tx(work)

    def sizes(self) -> dict[str, int]:
        """Rows per table (for tests and monitoring)."""
        names = ("proposals", "receipts", "replay", "handles", "totals", "inflight")

        def work(conn: Conn) -> dict[str, int]:
            out = {}
            for name in names:
                row = conn.execute(f"SELECT COUNT(*) FROM parley_{name}").fetchone()  # noqa: S608
                out[name] = int(row[0]) if row else 0
            return out

        return self._tx(work)
