"""One URL chooses a store: ``:memory:``, ``sqlite:PATH`` or ``postgresql://…``.

**Ours** (the grammar, the same for every package and command):

- ``:memory:`` — in process memory, lost when the process ends;
- ``sqlite:PATH`` — one SQLite file (``~`` is expanded; ``PATH`` may not be empty);
- ``postgresql://…`` or ``postgres://…`` — a libpq connection URI, passed to libpq as
  written (``host=/run/postgresql`` for a Unix socket, ``options=-csearch_path%3Dname``
  to keep one deployment's tables in its own schema).

Anything else is refused (``bad_url``), never guessed: a bare path is not a URL here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import unquote, urlsplit

from .errors import StoreError

__all__ = ["StoreURL", "parse_url", "redact", "secrets_of"]

Kind = Literal["memory", "sqlite", "postgresql"]


@dataclass(frozen=True)
class StoreURL:
    """A parsed store URL: ``kind``, and ``path`` (SQLite) or ``dsn`` (PostgreSQL)."""

    kind: Kind
    """``"memory"``, ``"sqlite"`` or ``"postgresql"``."""
    path: str = ""
    """The SQLite file path (``sqlite:PATH``); empty for the other kinds."""
    dsn: str = ""
    """The PostgreSQL connection URL as given (it may hold a password: print ``str(url)``)."""

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
        return StoreURL("postgresql", dsn=url)
    shown = redact(url)[:80]
    raise StoreError(
        "bad_url",
        f"unknown store URL {shown!r}: use :memory:, sqlite:PATH or postgresql://…",
    )
