"""The Acts Markdown binding: a state document a person edits, kept in step with a registry.

:func:`sync_state_document` reads a document, adds the records it implies and rewrites it;
:func:`read_state_document` and :func:`write_state_document` are its two halves, and
:func:`parse_state_document` the parser (docs/spec/handoff-extensions.md §6).
"""

from __future__ import annotations

from ._markdown import (
    ActLine,
    StateDocument,
    SyncResult,
    act_key_for,
    parse_state_document,
    read_state_document,
    sync_state_document,
    write_state_document,
)

__all__ = [
    "ActLine",
    "StateDocument",
    "SyncResult",
    "act_key_for",
    "parse_state_document",
    "read_state_document",
    "sync_state_document",
    "write_state_document",
]
