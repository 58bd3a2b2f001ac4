"""Append-only Merkle logs over a small store interface, in memory or in SQLite.

A :class:`LogStore` keeps entries and the hashes of complete subtrees (level ``l``,
index ``i`` covers leaves ``[i * 2**l, (i + 1) * 2**l)``). :class:`MerkleLog` computes
everything else (tree heads, inclusion and consistency proofs) from it, so a store for
another database needs only the five methods of the protocol.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Protocol

from . import _merkle
from ._checkpoint import Checkpoint, SignedCheckpoint, sign_checkpoint
from ._keys import KeyLike
from .errors import VxpError

__all__ = ["LogStore", "MemoryLogStore", "MerkleLog", "SqliteLogStore"]


class LogStore(Protocol):
    """Where a :class:`MerkleLog` keeps its entries and complete-subtree hashes."""

    def size(self) -> int:
        """Return the number of entries."""
        ...

    def append(
        self, expected_size: int, entries: Sequence[bytes], nodes: Sequence[tuple[int, int, bytes]]
    ) -> None:
        """Atomically add ``entries`` at ``expected_size`` and the subtree hashes they complete.

        Raise :class:`VxpError` ``log_conflict`` (changing nothing) when the store does not
        hold exactly ``expected_size`` entries.
        """
        ...

    def entry(self, index: int) -> bytes:
        """Return entry ``index`` (its leaf data)."""
        ...

    def node(self, level: int, index: int) -> bytes | None:
        """Return the stored hash of complete subtree (``level``, ``index``), or ``None``."""
        ...

    def close(self) -> None:
        """Release the store's resources."""
        ...


class MemoryLogStore:
    """A :class:`LogStore` in process memory (lost when the process ends)."""

    def __init__(self) -> None:
        self._entries: list[bytes] = []
        self._levels: list[list[bytes]] = []
        self._lock = threading.Lock()

    def size(self) -> int:
        """Return the number of entries."""
        return len(self._entries)

    def append(
        self, expected_size: int, entries: Sequence[bytes], nodes: Sequence[tuple[int, int, bytes]]
    ) -> None:
        """Add ``entries`` and ``nodes`` if the log still holds ``expected_size`` entries."""
        with self._lock:
            if len(self._entries) != expected_size:
                raise VxpError(
                    "log_conflict",
                    f"the log holds {len(self._entries)} entries, not the {expected_size} expected",
                )
            lengths = [len(lv) for lv in self._levels]
            for level, index, _value in nodes:
                while len(lengths) <= level:
                    lengths.append(0)
                if lengths[level] != index:
                    raise VxpError("log_corrupt", f"node ({level}, {index}) is out of order")
                lengths[level] += 1
            for level, _index, value in nodes:
                while len(self._levels) <= level:
                    self._levels.append([])
                self._levels[level].append(value)
            self._entries.extend(entries)

    def entry(self, index: int) -> bytes:
        """Return entry ``index``."""
        return self._entries[index]

    def node(self, level: int, index: int) -> bytes | None:
        """Return the hash of complete subtree (``level``, ``index``) if stored."""
        if level < len(self._levels) and index < len(self._levels[level]):
            return self._levels[level][index]
        return None

    def close(self) -> None:
        """Nothing to release."""


_SCHEMA = """
CREATE TABLE IF NOT EXISTS vxp_log_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS vxp_log_entries (idx INTEGER PRIMARY KEY, data BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS vxp_log_nodes (
    level INTEGER NOT NULL, idx INTEGER NOT NULL, hash BLOB NOT NULL,
    PRIMARY KEY (level, idx)
) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS vxp_log_entries_no_update BEFORE UPDATE ON vxp_log_entries
BEGIN SELECT RAISE(ABORT, 'vxp log history is append-only'); END;
CREATE TRIGGER IF NOT EXISTS vxp_log_entries_no_delete BEFORE DELETE ON vxp_log_entries
BEGIN SELECT RAISE(ABORT, 'vxp log history is append-only'); END;
CREATE TRIGGER IF NOT EXISTS vxp_log_nodes_no_update BEFORE UPDATE ON vxp_log_nodes
BEGIN SELECT RAISE(ABORT, 'vxp log history is append-only'); END;
CREATE TRIGGER IF NOT EXISTS vxp_log_nodes_no_delete BEFORE DELETE ON vxp_log_nodes
BEGIN SELECT RAISE(ABORT, 'vxp log history is append-only'); END;
CREATE TRIGGER IF NOT EXISTS vxp_log_meta_no_update BEFORE UPDATE ON vxp_log_meta
BEGIN SELECT RAISE(ABORT, 'vxp log metadata is fixed'); END;
CREATE TRIGGER IF NOT EXISTS vxp_log_meta_no_delete BEFORE DELETE ON vxp_log_meta
BEGIN SELECT RAISE(ABORT, 'vxp log metadata is fixed'); END;
CREATE TRIGGER IF NOT EXISTS vxp_log_entries_append_only BEFORE INSERT ON vxp_log_entries
WHEN NEW.idx IS NOT (SELECT COALESCE(MAX(idx) + 1, 0) FROM vxp_log_entries)
BEGIN SELECT RAISE(ABORT, 'vxp log entries are only appended at the end'); END;
CREATE TRIGGER IF NOT EXISTS vxp_log_nodes_append_only BEFORE INSERT ON vxp_log_nodes
WHEN NEW.idx IS NOT (SELECT COALESCE(MAX(idx) + 1, 0) FROM vxp_log_nodes WHERE level = NEW.level)
BEGIN SELECT RAISE(ABORT, 'vxp log nodes are only appended at the end of their level'); END;
CREATE TRIGGER IF NOT EXISTS vxp_log_meta_insert_once BEFORE INSERT ON vxp_log_meta
WHEN EXISTS (SELECT 1 FROM vxp_log_meta WHERE key = NEW.key)
BEGIN SELECT RAISE(ABORT, 'vxp log metadata is fixed'); END;
"""
# ``INSERT OR REPLACE`` deletes the conflicting row without firing DELETE triggers (unless
# recursive_triggers is on), so the BEFORE INSERT triggers above are what stop a REPLACE
# from rewriting history: a row goes only at the next free position, never over another.

SQLITE_MIGRATIONS: list[list[str]] = [
    [
        *(statement.strip() for statement in _SCHEMA.split(";\n") if statement.strip()),
        "CREATE TABLE IF NOT EXISTS dpop_jti (key TEXT PRIMARY KEY, until INTEGER NOT NULL)",
    ],
]
"""The ordered migrations of a VXP SQLite file (store ``vxp``: the Merkle log and the DPoP
replay cache, which may share one file; ``PRAGMA user_version``). Version 1 is the schema
written before versions were recorded, so such files are adopted as they are."""

_SIZE = "SELECT COALESCE(MAX(idx) + 1, 0) FROM vxp_log_entries"


class SqliteLogStore:
    """A :class:`LogStore` in a SQLite file: survives restarts, refuses to rewrite history.

    Rows are only ever inserted, and only at the next free position: triggers abort any
    ``UPDATE``, any ``DELETE`` and any ``INSERT`` (``OR REPLACE`` included) that is not at
    the end of the log, and :meth:`append` is one ``IMMEDIATE`` transaction that checks the
    expected size first. ``origin`` is stored on creation and must match on every later
    open; a :class:`MerkleLog` over this store must carry the same origin.
    """

    def __init__(self, path: str | Path, origin: str) -> None:
        if not isinstance(path, str | os.PathLike) or not isinstance(origin, str):
            raise VxpError("log_store_error", "a SQLite log needs a file path and an origin string")
        self._lock = threading.Lock()
        self.origin = origin
        try:
            self._db = sqlite3.connect(
                str(path), isolation_level=None, check_same_thread=False, timeout=30.0
            )
        except sqlite3.Error as exc:
            raise VxpError("log_store_error", f"cannot open the SQLite log at {path}") from exc
        try:
            self._open(path, origin)
        except BaseException:
            self._db.close()
            raise

    def _open(self, path: str | Path, origin: str) -> None:
        from ppstore import StoreError, migrate_sqlite

        try:
            migrate_sqlite(self._db, "vxp", SQLITE_MIGRATIONS)
            # the version-1 statements are idempotent: run again on every open, they put
            # back append-only triggers a file lost (or never had)
            self._db.executescript(_SCHEMA)
        except StoreError as exc:
            raise VxpError(
                "log_store_error", f"cannot open the SQLite log at {path}: {exc.message}"
            ) from None
        except sqlite3.Error as exc:
            raise VxpError("log_store_error", f"cannot open the SQLite log at {path}") from exc
        try:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                row = self._db.execute(
                    "SELECT value FROM vxp_log_meta WHERE key = 'origin'"
                ).fetchone()
                if row is None:
                    self._db.execute(
                        "INSERT INTO vxp_log_meta (key, value) VALUES ('origin', ?)", (origin,)
                    )
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
            count, top = self._db.execute(
                "SELECT COUNT(*), COALESCE(MAX(idx) + 1, 0) FROM vxp_log_entries"
            ).fetchone()
        except sqlite3.Error as exc:
            raise VxpError("log_store_error", f"cannot open the SQLite log at {path}") from exc
        if row is not None and row[0] != origin:
            raise VxpError(
                "log_origin_mismatch", f"the SQLite log at {path} belongs to origin {row[0]!r}"
            )
        if count != top:
            raise VxpError("log_corrupt", f"the SQLite log at {path} has gaps in its entries")

    def size(self) -> int:
        """Return the number of entries (read from the database, so other writers count)."""
        with self._lock:
            row = self._db.execute(_SIZE).fetchone()
        return int(row[0])

    def append(
        self, expected_size: int, entries: Sequence[bytes], nodes: Sequence[tuple[int, int, bytes]]
    ) -> None:
        """Insert ``entries`` and ``nodes`` in one transaction if the size is ``expected_size``."""
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    (current,) = self._db.execute(_SIZE).fetchone()
                    if current != expected_size:
                        raise VxpError(
                            "log_conflict",
                            f"the log holds {current} entries, not the {expected_size} expected",
                        )
                    self._db.executemany(
                        "INSERT INTO vxp_log_entries (idx, data) VALUES (?, ?)",
                        [(expected_size + i, bytes(e)) for i, e in enumerate(entries)],
                    )
                    self._db.executemany(
                        "INSERT INTO vxp_log_nodes (level, idx, hash) VALUES (?, ?, ?)",
                        [(lv, ix, bytes(h)) for lv, ix, h in nodes],
                    )
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise
                self._db.execute("COMMIT")
            except sqlite3.Error as exc:
                raise VxpError("log_conflict", "the SQLite log refused the append") from exc

    def entry(self, index: int) -> bytes:
        """Return entry ``index``."""
        with self._lock:
            row = self._db.execute(
                "SELECT data FROM vxp_log_entries WHERE idx = ?", (index,)
            ).fetchone()
        if row is None:
            raise VxpError("log_entry_missing", f"the log has no entry {index}")
        return bytes(row[0])

    def node(self, level: int, index: int) -> bytes | None:
        """Return the hash of complete subtree (``level``, ``index``) if stored."""
        with self._lock:
            row = self._db.execute(
                "SELECT hash FROM vxp_log_nodes WHERE level = ? AND idx = ?", (level, index)
            ).fetchone()
        return None if row is None else bytes(row[0])

    def close(self) -> None:
        """Close the database connection."""
        with self._lock:
            self._db.close()


class MerkleLog:
    """An append-only RFC 9162 log named ``origin`` on a :class:`LogStore`.

    Entries are byte strings; leaf ``i`` hashes entry ``i`` (``SHA-256(0x00 || entry)``).
    The log is the caller's own: an entry that is not bytes (``log_entry_invalid``), an
    index outside the log (``log_entry_missing``) or a tree size it cannot answer
    (``log_size_invalid``) is a :class:`~vxp.VxpUsageError`.
    """

    def __init__(self, origin: str, store: LogStore | None = None) -> None:
        if not isinstance(origin, str) or not origin or "\n" in origin:
            raise VxpError("log_origin_invalid", "a log origin is a non-empty one-line string")
        stored_origin = getattr(store, "origin", None)
        if stored_origin is not None and stored_origin != origin:
            raise VxpError(
                "log_origin_mismatch", f"the store belongs to log {stored_origin!r}, not {origin!r}"
            )
        self.origin = origin
        self.store: LogStore = store if store is not None else MemoryLogStore()

    @property
    def size(self) -> int:
        """The number of entries in the log."""
        return self.store.size()

    def append(self, entry: bytes) -> int:
        """Append one entry; return its index."""
        return self.extend([entry])[0]

    def extend(self, entries: Sequence[bytes]) -> range:
        """Append several entries in one atomic step; return their indexes."""
        given: object = entries
        if isinstance(given, bytes | str) or not isinstance(given, Iterable):
            raise VxpError("log_entry_invalid", "the entries to append are a list of bytes")
        entries = list(given)
        for i, e in enumerate(entries):
            if not isinstance(e, bytes):
                raise VxpError("log_entry_invalid", f"log entry {i} is not bytes")
        start = self.store.size()
        nodes: list[tuple[int, int, bytes]] = []
        pending: dict[tuple[int, int], bytes] = {}

        def get(level: int, index: int) -> bytes:
            value = pending.get((level, index))
            if value is None:
                value = self.store.node(level, index)
            if value is None:  # pragma: no cover - a store that lost a node
                raise VxpError("log_corrupt", f"the log lost subtree ({level}, {index})")
            return value

        for offset, entry in enumerate(entries):
            index = start + offset
            value = _merkle.leaf_hash(entry)
            level = 0
            pending[(0, index)] = value
            nodes.append((0, index, value))
            while index & 1:
                value = _merkle.node_hash(get(level, index - 1), value)
                level += 1
                index >>= 1
                pending[(level, index)] = value
                nodes.append((level, index, value))
        nodes.sort(key=lambda n: (n[0], n[1]))
        self.store.append(start, list(entries), nodes)
        return range(start, start + len(entries))

    def entry(self, index: int) -> bytes:
        """Return entry ``index``."""
        self._check_index(index, self.size)
        return self.store.entry(index)

    def leaf_hash(self, index: int) -> bytes:
        """Return the leaf hash of entry ``index``."""
        self._check_index(index, self.size)
        value = self.store.node(0, index)
        if value is None:  # pragma: no cover - a store that lost a node
            raise VxpError("log_corrupt", f"the log lost leaf {index}")
        return value

    def _mth(self, start: int, size: int) -> bytes:
        return _merkle.subtree_hash(self.store.node, start, size)

    def _size_at_most_current(self, tree_size: int | None, least: int = 0) -> int:
        current = self.size
        if tree_size is None:
            return current
        if (
            not isinstance(tree_size, int)
            or isinstance(tree_size, bool)
            or not least <= tree_size <= current
        ):
            raise VxpError(
                "log_size_invalid",
                f"the tree size {tree_size!r} is not an integer from {least} to the log's "
                f"{current} entries",
            )
        return tree_size

    def root(self, tree_size: int | None = None) -> bytes:
        """Return the tree head of the first ``tree_size`` entries (default: all)."""
        size = self._size_at_most_current(tree_size)
        return _merkle.EMPTY_ROOT if size == 0 else self._mth(0, size)

    def inclusion_proof(self, index: int, tree_size: int | None = None) -> list[bytes]:
        """Return the inclusion proof of entry ``index`` in the tree of ``tree_size``."""
        size = self._size_at_most_current(tree_size)
        self._check_index(index, size)
        return _merkle.audit_path(index, size, self._mth)

    def consistency_proof(self, size1: int, size2: int | None = None) -> list[bytes]:
        """Return the consistency proof from tree size ``size1`` to ``size2`` (default: all)."""
        size = self._size_at_most_current(size2)
        first = self._size_at_most_current(size1, least=1)
        if first > size:
            raise VxpError(
                "log_size_invalid", f"the first tree size {first} is larger than the second {size}"
            )
        return _merkle.consistency_path(first, size, self._mth)

    @staticmethod
    def _check_index(index: int, size: int) -> None:
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < size:
            raise VxpError(
                "log_entry_missing", f"the tree of {size} entries has no entry {index!r}"
            )

    def close(self) -> None:
        """Close the underlying store."""
        self.store.close()

    def checkpoint(self, log_key: KeyLike, tree_size: int | None = None) -> SignedCheckpoint:
        """Return the log's signed checkpoint at ``tree_size`` (default: the current size)."""
        size = self._size_at_most_current(tree_size)
        return sign_checkpoint(Checkpoint(self.origin, size, self.root(size)), log_key)
