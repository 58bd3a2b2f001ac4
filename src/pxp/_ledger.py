"""The append-only, hash-chained ledger of a room (PXP §6), as the reference chains it.

An entry is ``{n, type, at, data, prev, hash}``: ``n`` counts from 1, the first ``prev`` is
64 zeros, every later ``prev`` is the previous entry's ``hash``, and
``hash = sha256hex(prev + canonical({n, type, at, data}))`` (string concatenation, then
UTF-8). The last hash is the head: it identifies the whole history.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ._canonical import ZERO_HASH, canonical, canonical_string
from .errors import LedgerError, PxpError

__all__ = [
    "ENTRY_TYPES",
    "Ledger",
    "LedgerEntry",
    "entry_hash",
    "load_ledger",
    "verify_ledger",
]

ENTRY_TYPES = (
    "room_opened",
    "agent_joined",
    "principal_link",
    "card_sealed",
    "envelope",
    "escalation",
    "principal_answer",
    "agreement",
    "turn_limit",
)
"""Entry types a room writes, in the vocabulary of the reference server (``principal_link``
is ours: the reference has no separate principal link)."""

_ENTRY_KEYS = frozenset(("n", "type", "at", "data", "prev", "hash"))
_HEX64 = re.compile(r"[0-9a-f]{64}")
_MAX_N = 2**53 - 1


@dataclass(frozen=True)
class LedgerEntry:
    """One ledger entry; ``data`` is the entry's JSON object (do not mutate it)."""

    n: int
    type: str
    at: str
    data: Mapping[str, Any]
    prev: str
    hash: str

    def to_json(self) -> dict[str, Any]:
        """Return the entry as the JSON object that is exported and verified."""
        return {
            "n": self.n,
            "type": self.type,
            "at": self.at,
            "data": _plain(self.data),
            "prev": self.prev,
            "hash": self.hash,
        }


def _plain(value: Any) -> Any:
    return json.loads(json.dumps(value))


def entry_hash(prev: str, n: int, type_: str, at: str, data: Mapping[str, Any]) -> str:
    """Return ``sha256hex(prev + canonical({n, type, at, data}))``."""
    return hashlib.sha256((prev + _body(n, type_, at, data)).encode("utf-8")).hexdigest()


class Ledger:
    """An append-only in-memory ledger. Entries are never changed or removed."""

    __slots__ = ("_entries",)

    def __init__(self, entries: Iterable[LedgerEntry] = ()) -> None:
        self._entries: list[LedgerEntry] = list(entries)

    @classmethod
    def from_json(cls, entries: Any, *, head: str | None = None) -> Ledger:
        """Verify exported entries (see :func:`verify_ledger`) and load them."""
        verify_ledger(entries, head=head)
        return cls(
            LedgerEntry(e["n"], e["type"], e["at"], copy.deepcopy(e["data"]), e["prev"], e["hash"])
            for e in map(_as_mapping, entries)
        )

    @property
    def head(self) -> str:
        """The hash of the last entry (64 zeros for an empty ledger)."""
        return self._entries[-1].hash if self._entries else ZERO_HASH

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Any:
        return iter(self._entries)

    def __getitem__(self, index: int) -> LedgerEntry:
        return self._entries[index]

    @property
    def entries(self) -> tuple[LedgerEntry, ...]:
        """Every entry, oldest first."""
        return tuple(self._entries)

    def append(self, type_: str, at: str, data: Mapping[str, Any]) -> LedgerEntry:
        """Append an entry chained to the head and return it."""
        return self.push(self.next_entry(type_, at, data))

    def push(self, entry: LedgerEntry) -> LedgerEntry:
        """Append ``entry``, which :meth:`next_entry` built for this ledger as it stands;
        refuse (``ledger_append``) one that does not chain to the head."""
        if (
            not isinstance(entry, LedgerEntry)
            or entry.n != len(self._entries) + 1
            or entry.prev != self.head
            or entry.hash != entry_hash(entry.prev, entry.n, entry.type, entry.at, entry.data)
        ):
            raise PxpError("ledger_append", "the entry does not chain to this ledger's head")
        self._entries.append(entry)
        return entry

    def _push_built(self, entry: LedgerEntry) -> None:
        """Append an entry :meth:`next_entry` built for this ledger as it stands (its hash
        is not computed a second time)."""
        assert entry.n == len(self._entries) + 1
        assert entry.prev == self.head
        self._entries.append(entry)

    def next_entry(self, type_: str, at: str, data: Mapping[str, Any]) -> LedgerEntry:
        """The entry :meth:`append` would add now (nothing changes); raises
        ``canonical_invalid`` for data JSON cannot carry."""
        if not isinstance(type_, str) or not type_:
            raise PxpError("ledger_append", "a ledger entry type must be a non-empty string")
        if not isinstance(at, str):
            raise PxpError("ledger_append", "a ledger entry time must be a string")
        if not isinstance(data, Mapping):
            raise PxpError("ledger_append", "ledger entry data must be a JSON object")
        n = len(self._entries) + 1
        prev = self.head
        return LedgerEntry(n, type_, at, data, prev, entry_hash(prev, n, type_, at, data))

    def to_json(self) -> list[dict[str, Any]]:
        """Return every entry as JSON, oldest first."""
        return [e.to_json() for e in self._entries]


def _body(n: int, type_: str, at: str, data: Any) -> str:
    """``canonical({n, type, at, data})`` composed directly (keys sorted: at, data, n, type)."""
    if not -_MAX_N <= n <= _MAX_N:
        return canonical({"n": n, "type": type_, "at": at, "data": data})
    return (
        '{"at":'
        + canonical_string(at)
        + ',"data":'
        + canonical(data)
        + ',"n":'
        + str(n)
        + ',"type":'
        + canonical_string(type_)
        + "}"
    )


def _as_mapping(entry: Any) -> Any:
    if isinstance(entry, LedgerEntry):
        return {
            "n": entry.n,
            "type": entry.type,
            "at": entry.at,
            "data": entry.data,
            "prev": entry.prev,
            "hash": entry.hash,
        }
    return entry


def _malformed(entry: Any, index: int) -> LedgerError | None:
    if not isinstance(entry, Mapping) or set(entry.keys()) != _ENTRY_KEYS:
        return LedgerError(
            "malformed_entry",
            f"ledger entry {index} is not an object with exactly n, type, at, data, prev, hash",
            index=index,
        )
    n, type_, at, data = entry["n"], entry["type"], entry["at"], entry["data"]
    prev, hash_ = entry["prev"], entry["hash"]
    if (
        type(n) is not int
        or not isinstance(type_, str)
        or not type_
        or not isinstance(at, str)
        or not isinstance(data, Mapping)
        or not isinstance(prev, str)
        or not isinstance(hash_, str)
        or _HEX64.fullmatch(prev) is None
        or _HEX64.fullmatch(hash_) is None
    ):
        return LedgerError(
            "malformed_entry",
            f"ledger entry {index} has a member of the wrong type or a malformed hash",
            index=index,
        )
    return None


def verify_ledger(entries: Any, *, head: str | None = None) -> str:
    """Verify a ledger given as exported JSON entries (or :class:`LedgerEntry`); return its head.

    Checks, entry by entry: the exact member set and types, ``n`` counting from 1, ``prev``
    equal to the previous hash (64 zeros first), and the recomputed hash. With ``head``
    (from a brief, or a checkpoint a principal kept) the ledger must end exactly there:
    a truncated or an extended ledger fails too. Raises :class:`LedgerError` whose
    ``index`` is the first bad entry.
    """
    if isinstance(entries, str | bytes) or not isinstance(entries, Sequence):
        raise LedgerError("not_a_list", "the ledger is not a JSON array of entries", index=0)
    if head is not None and (not isinstance(head, str) or _HEX64.fullmatch(head) is None):
        raise PxpError("head_invalid", "the expected head is not 64 lowercase hex digits")
    prev = ZERO_HASH
    seen_head_at: int | None = 0 if head == ZERO_HASH else None
    sha256 = hashlib.sha256
    keys = _ENTRY_KEYS
    for index, entry in enumerate(entries):
        if type(entry) is not dict:
            entry = _as_mapping(entry)
        problem = None
        if type(entry) is not dict or entry.keys() != keys:
            problem = _malformed(entry, index)
        else:
            n = entry["n"]
            type_ = entry["type"]
            at = entry["at"]
            data = entry["data"]
            if (
                type(n) is not int
                or type(type_) is not str
                or type(at) is not str
                or not isinstance(data, Mapping)
                or not type_
            ):
                problem = _malformed(entry, index)
        if problem is not None:
            raise problem
        if n != index + 1:
            raise LedgerError(
                "wrong_n", f"ledger entry {index} has n={n}, expected {index + 1}", index=index
            )
        if entry["prev"] != prev:
            raise _malformed(entry, index) or LedgerError(
                "wrong_prev",
                f"ledger entry {index} has a prev that is not the previous entry's hash",
                index=index,
            )
        try:
            body = _body(n, type_, at, data)
        except PxpError as exc:  # data JSON cannot carry faithfully (NaN, unsafe integer)
            raise LedgerError(
                "malformed_entry",
                f"ledger entry {index} cannot be hashed: {exc.message}",
                index=index,
            ) from None
        digest = sha256((prev + body).encode("utf-8")).hexdigest()
        if entry["hash"] != digest:
            raise _malformed(entry, index) or LedgerError(
                "hash_mismatch",
                f"ledger entry {index} does not hash to its recorded hash",
                index=index,
            )
        prev = digest
        if seen_head_at is None and head is not None and prev == head:
            seen_head_at = index + 1
    if head is not None and prev != head:
        if seen_head_at is not None:
            raise LedgerError(
                "extended",
                f"the ledger goes on past the expected head, from entry {seen_head_at}",
                index=seen_head_at,
            )
        raise LedgerError(
            "head_mismatch",
            "the ledger does not reach the expected head (truncated or a different history)",
            index=len(entries),
        )
    return prev


def load_ledger(value: Any, *, head: str | None = None) -> Ledger:
    """Load a ledger from JSON text, a list of entries, or a room export with ``ledger``."""
    if isinstance(value, str | bytes):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            raise PxpError("ledger_json", "the ledger is not valid JSON") from None
    if isinstance(value, Mapping):
        if "ledger" not in value:
            raise PxpError("ledger_json", "the JSON object has no ledger member")
        value = value["ledger"]
    return Ledger.from_json(value, head=head)
