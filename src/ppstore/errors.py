"""The errors of the store plumbing: one table of codes, and who is at fault.

Every error :mod:`ppstore` raises carries a code of :data:`CODES` (rendered in
``docs/codes/ppstore.md``) and a sentence that never holds a password from a URL. The
store plumbing reads no peer data, so no code is of the protocol kind: a bad URL or
argument, a
``postgresql://`` URL without the ``postgres`` extra, a file of another store, a store
written by a newer library, a failed migration are all on the caller's side of the line
(:class:`StoreUsageError`).

**A database outage is neither** the caller's mistake nor the peer's data. It is never a
protocol error (a server must not blame the peer for it), and it is not a bug in the
call either: it arrives as :class:`StoreUnavailableError`, a :class:`StoreUsageError`
subclass of its own (codes ``store_open``, ``store_unavailable`` and ``store_timeout``), so
a server catches it first to retry or answer "unavailable" and reads
:attr:`StoreError.sqlstate` to tell a conflict (``23505``, ``40001``) from a lost
connection. ``store_timeout`` is a transaction that waited past the URL's ``lock_timeout``
or ran past its ``statement_timeout``: it was rolled back, and running it again is safe.
The table marks these codes ``usage`` because that is the side of the line they are on;
the class says which.
"""

from __future__ import annotations

from typing import Any, Self

from _ppcodes import Code, CodedError, CodeTable

__all__ = [
    "CODES",
    "StoreError",
    "StoreProtocolError",
    "StoreUnavailableError",
    "StoreUsageError",
]

CODES = CodeTable(
    "ppstore",
    [
        Code(
            "bad_url",
            "usage",
            "url",
            "The store URL names no store this library knows (`:memory:`, `sqlite:PATH`, "
            "`postgresql://…`), or cannot be parsed.",
        ),
        Code(
            "bad_timeout",
            "usage",
            "url",
            "A `lock_timeout` or `statement_timeout` parameter of a `postgresql://` URL is not "
            "a duration this library reads (a whole number followed by `ms`, `s` or `min`, "
            "none for milliseconds, `0` for no limit, at most 2147483647 ms), or is given twice.",
        ),
        Code(
            "bad_argument",
            "usage",
            "call",
            "An argument is not of the kind the call takes (a connection, a store name, a "
            "list of migrations, a URL string).",
        ),
        Code(
            "postgres_unavailable",
            "usage",
            "open",
            "A `postgresql://` URL was given, but the `postgres` extra (psycopg) is not installed.",
        ),
        Code(
            "store_open",
            "usage",
            "open",
            "The database refused the connection, or the file cannot be opened or read "
            "(arrives as StoreUnavailableError: an outage, not a mistake).",
        ),
        Code(
            "wrong_store",
            "usage",
            "open",
            "The SQLite file or database holds another kind of store, or an impossible "
            "schema version.",
        ),
        Code(
            "schema_too_new",
            "usage",
            "migrate",
            "The store was written by a newer version of this library; upgrade the library.",
        ),
        Code(
            "migration_failed",
            "usage",
            "migrate",
            "A migration statement failed; nothing of that migration was applied.",
        ),
        Code(
            "store_unavailable",
            "usage",
            "transaction",
            "A transaction failed in the database (a lost connection, a conflict that kept "
            "recurring, a refused statement: `sqlstate` says which; arrives as "
            "StoreUnavailableError).",
        ),
        Code(
            "store_timeout",
            "usage",
            "transaction",
            "A statement waited longer than the URL's `lock_timeout` for a lock another "
            "transaction holds (`sqlstate` 55P03), or ran longer than its `statement_timeout` "
            "(57014); the transaction was rolled back and may be run again (arrives as "
            "StoreUnavailableError).",
        ),
    ],
)
"""Every code :mod:`ppstore` raises, with its kind, stage and meaning."""

_OUTAGES = frozenset(("store_open", "store_unavailable", "store_timeout"))


class StoreError(CodedError):
    """A store could not be chosen, opened, migrated or used (a ValueError).

    ``code`` is one of :data:`CODES`; the message never carries a password from a URL.
    ``sqlstate`` is the database's SQLSTATE when a database error caused it (``23505``
    unique violation, ``P0001`` raised by a trigger, ``40001`` serialization failure), so
    a store can tell a conflict from an outage. Building ``StoreError(code, …)`` gives
    :class:`StoreUnavailableError` for an outage code and :class:`StoreUsageError` for
    any other.
    """

    codes = CODES

    sqlstate: str | None
    """The database's SQLSTATE behind the error, or None."""

    def __new__(cls, code: str, message: str, *args: Any, **kwargs: Any) -> Self:
        """Build :class:`StoreUnavailableError` for an outage code (see the class doc)."""
        if cls is StoreError and code in _OUTAGES:
            return StoreUnavailableError.__new__(StoreUnavailableError, code, message)  # type: ignore[return-value]
        return super().__new__(cls, code, message, *args, **kwargs)

    def __init__(self, code: str, message: str, *, sqlstate: str | None = None) -> None:
        super().__init__(code, message)
        self.sqlstate = sqlstate


class StoreUsageError(StoreError):
    """The caller's side of the line: its URL, its installation, its store file."""

    kind = "usage"


class StoreProtocolError(StoreError):
    """Bad data from a peer. ppstore reads none, so no code of its table has this kind;
    the class is here for the shape every package shares."""

    kind = "protocol"


class StoreUnavailableError(StoreUsageError):
    """The database could not be reached, or failed a transaction: neither the caller's
    mistake nor the peer's data (codes ``store_open``, ``store_unavailable`` and
    ``store_timeout``)."""
