"""PostgreSQL plumbing on psycopg 3, imported only when a ``postgresql://`` URL is used.

:class:`Pg` is one connection shared by the threads of one process behind a lock (as
the SQLite stores share theirs). Every store transaction goes through :meth:`Pg.tx`:

- **Ours:** isolation is PostgreSQL's default ``READ COMMITTED`` with explicit row and
  advisory locks taken first. Each statement then sees everything committed before it
  started, so a statement run after a lock was granted sees the previous holder's
  writes; a check and the write it guards happen under the same lock, never as a read
  followed by an unguarded write.
- A serialization failure or a deadlock (which the stores' lock order should make
  impossible) rolls the transaction back and runs it again, a few times.
- A connection found broken is replaced before the next transaction starts; a
  transaction that fails because the connection dropped is **not** run again (it may
  have committed): the error goes to the caller.
- **Ours (issue 25):** every connection sets ``lock_timeout`` (default 5 s) and
  ``statement_timeout`` (default 30 s) from the URL's parameters of those names, whatever
  the role or database defaults say, so a transaction blocked on a lock or a runaway
  statement ends, rolled back, with ``store_timeout`` instead of holding its caller (and
  the connection's lock) forever. It is not run again: waiting again is the caller's
  choice.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar

from ._url import redact, secrets_of, timeouts_of
from .errors import StoreError

if TYPE_CHECKING:
    import psycopg

__all__ = ["Pg", "advisory_key", "postgres_missing", "timed_out"]

T = TypeVar("T")

_INSTALL = "PostgreSQL stores need the postgres extra: pip install 'principal-protocols[postgres]'"


def postgres_missing() -> str | None:
    """Why psycopg cannot be used here (a sentence), or ``None`` when it can."""
    try:
        import psycopg  # noqa: F401
    except ImportError as exc:
        return f"{_INSTALL} ({exc})"
    return None


def _first_line(exc: BaseException, dsn: str = "") -> str:
    """The first line of a database error, with every secret of ``dsn`` scrubbed out."""
    text = str(exc).strip()
    line = text.splitlines()[0] if text else type(exc).__name__
    for secret in secrets_of(dsn):
        line = line.replace(secret, "***")
    return line


_WAITS = {"55P03": "lock_timeout", "57014": "statement_timeout"}


def timed_out(
    exc: BaseException, doing: str, limits: Mapping[str, int] | None = None, dsn: str = ""
) -> StoreError | None:
    """``store_timeout`` when ``exc`` is PostgreSQL giving up on a lock wait (``55P03``) or
    cancelling a statement (``57014``), with a sentence saying which limit; else ``None``.

    ``doing`` names the work (``"the transaction"``), ``limits`` the milliseconds set.
    """
    sqlstate = getattr(exc, "sqlstate", None)
    name = _WAITS.get(sqlstate or "")
    if name is None:
        return None
    limit = (limits or {}).get(name)
    shown = f"{name} ({limit} ms)" if limit is not None else name
    what = (
        f"waited longer than {shown} for a lock another transaction holds"
        if name == "lock_timeout"
        else f"ran a statement longer than {shown}, or had it cancelled"
    )
    return StoreError(
        "store_timeout",
        f"{doing} {what}; it was rolled back and may be run again ({_first_line(exc, dsn)})",
        sqlstate=sqlstate,
    )


def advisory_key(*parts: str) -> str:
    """The text an advisory lock is taken on (``hashtextextended`` of it, in SQL).

    Parts are joined with a character no id contains, so ``("a:b", "c")`` and
    ``("a", "b:c")`` never name the same lock.
    """
    return "\x1f".join(parts)


class Pg:
    """One psycopg connection (autocommit; explicit transactions) behind a thread lock.

    ``dsn`` is a ``postgresql://`` URL; its ``lock_timeout`` and ``statement_timeout``
    parameters (:func:`ppstore.parse_url`) are set on every connection it opens, and
    :attr:`timeouts` holds them.
    """

    timeouts: Mapping[str, int]
    """The milliseconds of ``lock_timeout`` and ``statement_timeout`` set (0: no limit);
    read-only: they come from the URL only."""

    def __init__(self, dsn: str, *, application_name: str = "principal-protocols") -> None:
        if not isinstance(dsn, str):
            raise StoreError(
                "bad_url", f"a postgresql:// URL is a string, not {type(dsn).__name__}"
            )
        self._libpq, found = timeouts_of(dsn)
        self.timeouts = MappingProxyType(found)
        if postgres_missing() is not None:
            raise StoreError("postgres_unavailable", _INSTALL)
        self.dsn = dsn
        self.application_name = application_name
        self._lock = threading.RLock()
        self._conn: psycopg.Connection[Any] | None = None
        with self._lock:
            self._connect()

    def __str__(self) -> str:
        return redact(self.dsn)

    def _connect(self) -> psycopg.Connection[Any]:
        import psycopg
        from psycopg.conninfo import conninfo_to_dict

        try:
            parsed = conninfo_to_dict(self._libpq)
        except (psycopg.Error, ValueError):  # never echo libpq's text: it quotes the URL
            raise StoreError("bad_url", f"cannot parse the URL {redact(self.dsn)}") from None
        params: dict[str, Any] = {"application_name": self.application_name}
        if "connect_timeout" not in parsed:
            params["connect_timeout"] = 10  # an unreachable host fails, never hangs
        try:
            conn = psycopg.connect(self._libpq, autocommit=True, **params)
            # pinned, whatever the database or role default says: every lock-then-read
            # argument of the stores holds under READ COMMITTED only (review #2)
            conn.isolation_level = psycopg.IsolationLevel.READ_COMMITTED
            conn.read_only = False
            # and never waiting forever on a lock or a statement (issue 25)
            conn.execute(
                "SELECT set_config('lock_timeout', %s, false),"
                " set_config('statement_timeout', %s, false)",
                (str(self.timeouts["lock_timeout"]), str(self.timeouts["statement_timeout"])),
            )
        except psycopg.Error as exc:
            raise StoreError(
                "store_open",
                f"cannot connect to {redact(self.dsn)}: {_first_line(exc, self.dsn)}",
            ) from None
        self._conn = conn
        return conn

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        """The connection, held under the lock (reconnected first if it broke)."""
        with self._lock:
            conn = self._conn
            if conn is None or conn.closed or conn.broken:
                conn = self._connect()
            yield conn

    def tx(self, work: Callable[[psycopg.Connection[Any]], T], *, attempts: int = 6) -> T:
        """Run ``work(conn)`` in one transaction; again after a serialization failure.

        Database errors become ``StoreError("store_unavailable")``; the package's own
        errors raised by ``work`` roll the transaction back and pass through.
        """
        import psycopg
        from psycopg import errors

        with self.connection() as conn:
            for attempt in range(attempts):
                try:
                    with conn.transaction():
                        return work(conn)
                except (errors.LockNotAvailable, errors.QueryCanceled) as exc:
                    found = timed_out(exc, "the transaction", self.timeouts, self.dsn)
                    assert found is not None
                    raise found from None
                except (errors.SerializationFailure, errors.DeadlockDetected) as exc:
                    if attempt == attempts - 1:
                        raise StoreError(
                            "store_unavailable",
                            f"the transaction kept conflicting: {_first_line(exc, self.dsn)}",
                            sqlstate=exc.sqlstate,
                        ) from None
                    time.sleep(0.002 * 2**attempt)
                except psycopg.Error as exc:
                    raise StoreError(
                        "store_unavailable",
                        f"the database {redact(self.dsn)} failed: {_first_line(exc, self.dsn)}",
                        sqlstate=exc.sqlstate,
                    ) from None
        raise AssertionError("unreachable")  # pragma: no cover

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()

    def __del__(self) -> None:
        # a store dropped without close() (a one-shot CLI command) still closes its
        # connection, rather than leaving it to psycopg's "deleted while still open"
        conn = getattr(self, "_conn", None)
        if conn is not None and not conn.closed:
            with contextlib.suppress(Exception):
                conn.close()
