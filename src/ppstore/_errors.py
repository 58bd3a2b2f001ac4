"""The one error of the store plumbing; each package re-raises it as its own error."""

from __future__ import annotations

__all__ = ["StoreError"]


class StoreError(ValueError):
    """A store could not be chosen, opened or migrated.

    ``code`` is stable: ``bad_url`` (the URL names no store this library knows),
    ``postgres_unavailable`` (a ``postgresql://`` URL without the ``postgres`` extra),
    ``store_open`` (the database refused the connection or the file cannot be opened),
    ``wrong_store`` (the SQLite file holds another kind of store),
    ``schema_too_new`` (the store was written by a newer version of this library),
    ``migration_failed`` (a migration statement failed; nothing of it was applied).
    The message never carries a password from a URL. ``sqlstate`` is the database's
    SQLSTATE when a database error caused it (e.g. ``23505`` unique violation,
    ``P0001`` raised by a trigger), so a store can tell a conflict from an outage.
    """

    def __init__(self, code: str, message: str, *, sqlstate: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.sqlstate = sqlstate

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"
