"""Choosing a service's state store by one URL (``:memory:``, ``sqlite:PATH``).

``parley serve --state URL`` and operators' ``parley state`` commands go through
:func:`open_store`. The default is durable: ``sqlite:$PARLEY_HOME/state/<service id>.sqlite``
(:func:`default_state_url`); memory is used only when asked for. ``postgresql://…`` opens
the PostgreSQL store shared by service replicas (the ``postgres`` extra).
"""

from __future__ import annotations

import re
from pathlib import Path

from ._keystore import agent_home
from ._sqlite import SQLiteStore
from ._state import MemoryStore, Store
from .errors import ParleyError

__all__ = ["default_state_url", "open_store"]

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def default_state_url(service_id: str, home: Path | None = None) -> str:
    """``sqlite:<home>/state/<service id>.sqlite`` (``home``: ``$PARLEY_HOME`` or ``~/.parley``).

    Characters of the id that are not safe in a file name become ``_``.
    """
    name = _UNSAFE.sub("_", service_id).lstrip(".") or "service"
    base = agent_home() if home is None else home
    return f"sqlite:{base / 'state' / (name[:120] + '.sqlite')}"


def open_store(url: str, *, create: bool = True) -> Store:
    """Open the store a state URL names; raise ``bad_config`` for anything else.

    ``:memory:`` is a :class:`~parley.stores.MemoryStore` (lost when the process ends);
    ``sqlite:PATH`` a :class:`~parley.stores.SQLiteStore`, its folder created ``0700`` if missing
    (the file is created ``0600`` by the store). ``create=False`` (read-only commands,
    ``parley state``) refuses a file that does not exist (``bad_config``/``no_state``)
    rather than creating it and its folders. ``postgresql://…`` is a
    :class:`~parley.stores.PostgresStore` (replicas on one database share it); with
    ``create=False`` a database holding no Parley state is refused the same way.
    """
    if not isinstance(url, str):
        raise ParleyError("bad_config", "a state URL is a string", reason="bad_state")
    if url == ":memory:":
        return MemoryStore()
    if url.startswith("sqlite:"):
        path = Path(url.removeprefix("sqlite:")).expanduser()
        if not url.removeprefix("sqlite:"):
            raise ParleyError("bad_config", "sqlite: needs a file path", reason="bad_state")
        if not create and not path.is_file():
            raise ParleyError(
                "bad_config",
                f"no such state: {str(path)[:200]} does not exist (check --state or --service)",
                reason="no_state",
            )
        try:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            return SQLiteStore(str(path))
        except OSError as exc:
            raise ParleyError(
                "bad_config",
                f"cannot open the state file {str(path)[:200]}: {exc.strerror or exc}",
                reason="bad_state",
            ) from None
        except Exception as exc:  # sqlite3 errors: locked, read-only, not a database
            if isinstance(exc, ParleyError):
                raise
            raise ParleyError(
                "bad_config",
                f"cannot open the state file {str(path)[:200]}: {exc}",
                reason="bad_state",
            ) from None
    if url.startswith(("postgresql://", "postgres://")):
        from ._postgres import PostgresStore

        return PostgresStore(url, create=create)
    from ppstore import redact

    raise ParleyError(
        "bad_config",
        f"unknown state URL {redact(url)[:80]!r}: use sqlite:PATH, postgresql://… or :memory:",
        reason="bad_state",
    )
