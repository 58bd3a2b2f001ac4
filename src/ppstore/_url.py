"""One URL chooses a store: ``:memory:``, ``sqlite:PATH`` or ``postgresql://…``.

**Ours** (the grammar, the same for every package and command):

- ``:memory:`` — in process memory, lost when the process ends;
- ``sqlite:PATH`` — one SQLite file (``~`` is expanded; ``PATH`` may not be empty);
- ``postgresql://…`` or ``postgres://…`` — a libpq connection URI, passed to libpq as
  written (``host=/run/postgresql`` for a Unix socket, ``options=-csearch_path%3Dname``
  to keep one deployment's tables in its own schema), except for two query parameters of
  ours, taken out before libpq reads it (:func:`libpq_url`): ``lock_timeout`` (default
  5 s) and ``statement_timeout`` (default 30 s), each a whole number followed by ``ms``,
  ``s`` or ``min`` (no unit: milliseconds), ``0`` for no limit, at most 2147483647 ms;
  anything else, or either given twice, is refused (``bad_timeout``).

Anything else is refused (``bad_url``), never guessed: a bare path is not a URL here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import unquote, urlsplit

from .errors import StoreError

__all__ = [
    "DEFAULT_LOCK_TIMEOUT_MS",
    "DEFAULT_STATEMENT_TIMEOUT_MS",
    "StoreURL",
    "libpq_url",
    "parse_url",
    "redact",
    "secrets_of",
    "timeouts_of",
]

Kind = Literal["memory", "sqlite", "postgresql"]

DEFAULT_LOCK_TIMEOUT_MS = 5_000
"""How long a statement waits for a lock another transaction holds: 5 s (``lock_timeout``)."""
DEFAULT_STATEMENT_TIMEOUT_MS = 30_000
"""How long one statement may run: 30 s (``statement_timeout``)."""


@dataclass(frozen=True)
class StoreURL:
    """A parsed store URL: ``kind``, and ``path`` (SQLite) or ``dsn`` (PostgreSQL)."""

    kind: Kind
    """``"memory"``, ``"sqlite"`` or ``"postgresql"``."""
    path: str = ""
    """The SQLite file path (``sqlite:PATH``); empty for the other kinds."""
    dsn: str = ""
    """The PostgreSQL connection URL as given (it may hold a password: print ``str(url)``)."""
    lock_timeout_ms: int = DEFAULT_LOCK_TIMEOUT_MS
    """PostgreSQL: the most a statement waits for a lock, in milliseconds (0: no limit)."""
    statement_timeout_ms: int = DEFAULT_STATEMENT_TIMEOUT_MS
    """PostgreSQL: the most one statement may run, in milliseconds (0: no limit)."""

    def __str__(self) -> str:
        """The URL again, without any password (safe to print and log)."""
        if self.kind == "memory":
            return ":memory:"
        if self.kind == "sqlite":
            return f"sqlite:{self.path}"
        return redact(self.dsn)


_SECRET_PARAMS = re.compile(r"([?&](?:password|sslpassword|passfile)=)[^&]*", re.IGNORECASE)


def _text(url: object) -> str:
    if not isinstance(url, str):
        raise StoreError("bad_argument", f"a URL is a string, not {type(url).__name__}")
    return url


def secrets_of(url: str) -> list[str]:
    """The secrets a libpq URL holds (the password of ``user:secret@``, ``password=``
    parameters), as written and percent-decoded: what no message may echo."""
    _text(url)
    found: list[str] = []
    _, sep, rest = url.partition("://")
    if sep and "@" in rest:
        userinfo = rest.rpartition("@")[0]
        if ":" in userinfo:
            found.append(userinfo.partition(":")[2])
    for match in re.finditer(r"[?&](?:password|sslpassword)=([^&]*)", url, re.IGNORECASE):
        found.append(match.group(1))
    return sorted({s for raw in found for s in (raw, unquote(raw)) if s}, key=len, reverse=True)


def redact(url: str) -> str:
    """``url`` with its secrets replaced by ``***``: the password of the user part (all
    between ``user:`` and the last ``@``, whatever it holds) and the ``password=``,
    ``sslpassword=`` and ``passfile=`` parameters."""
    scheme, sep, rest = _text(url).partition("://")
    if sep and "@" in rest:
        userinfo, _, after = rest.rpartition("@")
        if ":" in userinfo:
            rest = f"{userinfo.partition(':')[0]}:***@{after}"
    return _SECRET_PARAMS.sub(r"\1***", f"{scheme}{sep}{rest}")


_TIMEOUTS = {
    "lock_timeout": DEFAULT_LOCK_TIMEOUT_MS,
    "statement_timeout": DEFAULT_STATEMENT_TIMEOUT_MS,
}
_DURATION = re.compile(r"(0|[1-9][0-9]{0,9})(ms|s|min)?")
_UNIT_MS = {None: 1, "ms": 1, "s": 1_000, "min": 60_000}
_MOST_MS = 2**31 - 1  # PostgreSQL's own bound on both settings


def _query_at(url: str) -> int:
    """Where libpq's query of ``url`` starts (its ``?``), or -1. As libpq reads it, the
    user part ends at the first ``@`` before any ``/``, so a ``?`` in a password is not it."""
    _, sep, rest = url.partition("://")
    if not sep:
        return -1
    start = len(url) - len(rest)
    cut = min((i for i in (rest.find("@"), rest.find("/")) if i >= 0), default=-1)
    if cut >= 0 and rest[cut] == "@":
        start += cut + 1
    return url.find("?", start)


def timeouts_of(url: str) -> tuple[str, dict[str, int]]:
    """``url`` without the timeout parameters, and the timeouts in milliseconds (each
    given one, or its default); ``bad_timeout`` for a value this library does not read."""
    found = dict(_TIMEOUTS)
    at = _query_at(_text(url))
    if at < 0:
        return url, found
    kept: list[str] = []
    seen: set[str] = set()
    for param in url[at + 1 :].split("&"):
        name, _, value = param.partition("=")
        name = unquote(name)
        if name not in _TIMEOUTS:
            kept.append(param)
            continue
        shown = unquote(value)
        match = _DURATION.fullmatch(shown)
        if name in seen:
            raise StoreError("bad_timeout", f"{name} is given twice in the store URL")
        seen.add(name)
        millis = int(match.group(1)) * _UNIT_MS[match.group(2)] if match else -1
        if not 0 <= millis <= _MOST_MS:
            raise StoreError(
                "bad_timeout",
                f"{name}={shown[:40]!r} in the store URL is not a duration this library reads:"
                " a whole number followed by ms, s or min (no unit: milliseconds), 0 for no"
                f" limit, at most {_MOST_MS} ms",
            )
        found[name] = millis
    return url[:at] + ("?" + "&".join(kept) if kept else ""), found


def libpq_url(url: str) -> str:
    """``url`` as libpq reads it: without this library's ``lock_timeout`` and
    ``statement_timeout`` parameters, which libpq would refuse (``bad_timeout`` for a
    value this library does not read; see the module docstring).

    >>> libpq_url("postgresql://db/app?sslmode=require&lock_timeout=2s")
    'postgresql://db/app?sslmode=require'
    """
    return timeouts_of(url)[0]


def parse_url(url: object) -> StoreURL:
    """Parse a store URL (see the module docstring); ``StoreError("bad_url")`` otherwise.

    >>> parse_url("sqlite:/tmp/x.sqlite").kind
    'sqlite'
    >>> str(parse_url("postgresql://app:secret@db/parley"))
    'postgresql://app:***@db/parley'
    """
    if not isinstance(url, str) or not url or "\x00" in url or len(url) > 4096:
        raise StoreError("bad_url", "a store URL is a non-empty string")
    if url == ":memory:":
        return StoreURL("memory")
    if url.startswith("sqlite:"):
        path = url.removeprefix("sqlite:")
        if not path.strip():
            raise StoreError("bad_url", "sqlite: needs a file path (sqlite:PATH)")
        return StoreURL("sqlite", path=str(Path(path).expanduser()))
    if url.startswith(("postgresql://", "postgres://")):
        try:
            urlsplit(url)
        except ValueError:
            raise StoreError("bad_url", "the postgresql:// URL cannot be parsed") from None
        _, timeouts = timeouts_of(url)
        return StoreURL(
            "postgresql",
            dsn=url,
            lock_timeout_ms=timeouts["lock_timeout"],
            statement_timeout_ms=timeouts["statement_timeout"],
        )
    shown = redact(url)[:80]
    raise StoreError(
        "bad_url",
        f"unknown store URL {shown!r}: use :memory:, sqlite:PATH or postgresql://…",
    )
