"""The errors of :mod:`handoff` and the one table of every code they carry.

Every error :mod:`handoff` raises is a :class:`HandoffError` (a :class:`ValueError`) with a
stable machine ``code`` from :data:`CODES`, an optional finer ``reason`` and a sentence. The
table decides the class:

* :class:`HandoffUsageError`: the caller broke the rules (an option, a configuration, a key
  the caller holds, a naive ``datetime`` given as ``now``, a store that cannot be opened);
* :class:`HandoffProtocolError`: the data is bad (a record, a settlement, a proof, a state
  document), whatever Python type it arrived in: an ``int`` where a record belongs is a
  protocol error too.

A server therefore catches :class:`HandoffProtocolError` for "their data" and lets
:class:`HandoffUsageError` surface as its own bug. ``docs/codes/handoff.md`` is generated
from :data:`CODES` (``tools/gen_code_docs.py``).
"""

from __future__ import annotations

from _ppcodes import Code, CodedError, CodeTable

__all__ = ["CODES", "HandoffError", "HandoffProtocolError", "HandoffUsageError"]

CODES = CodeTable(
    "handoff",
    [
        # --- the caller's own mistakes -------------------------------------------------------
        Code(
            "usage",
            "usage",
            "call",
            "An argument or command-line option is wrong: a missing or extra argument, an "
            "unsupported store URL (reason `url`), or a `now`/`ts` that is not an RFC 3339 "
            "string or an aware datetime (reason `time`).",
        ),
        Code(
            "config",
            "usage",
            "config",
            "The roles, extensions or principal side configuration is malformed "
            "(reason `config_invalid`).",
        ),
        Code(
            "key",
            "usage",
            "config",
            "A key the caller holds cannot be used: a signing key that is not an Ed25519 or "
            "P-256 private JWK (`key_invalid`, `key_unsupported`, `key_not_private`), or the "
            "principal side's JWKS is malformed (`jwks_invalid`) or missing where a proof "
            "must be checked (`jwks_missing`).",
        ),
        Code(
            "schemas_missing",
            "usage",
            "install",
            "The Handoff JSON Schemas are neither installed with the package nor in a checkout.",
        ),
        Code("schema_unknown", "usage", "call", "No Handoff schema has the name given."),
        Code(
            "schema_invalid",
            "usage",
            "call",
            "A schema or an ECMA-262 pattern uses something outside the allowed subset, or "
            "does not compile.",
        ),
        Code(
            "io",
            "usage",
            "io",
            "A file or store cannot be read or written: it is missing (`store_missing`, "
            "`records_missing`), unreadable, or its last line is torn (`torn_line`).",
        ),
        Code(
            "store",
            "usage",
            "store",
            "The store failed or was changed behind its back: it cannot be opened, read or "
            "written (`store_open`, `store_read`, `store_write`), its roles were replaced "
            "(`roles_stale`), a stored row does not match its digest or cannot be read "
            "(`store_tampered`, `store_row_rejected`).",
        ),
        Code(
            "build",
            "usage",
            "build",
            "A requester-side builder (`make_raised`, `make_amended`, `make_note`) was asked "
            "for a record it cannot build: an extension the registry lacks (`unknown_ext`), "
            "terms that are not an object (`terms`), or an item in the wrong state.",
        ),
        Code(
            "settle",
            "usage",
            "build",
            "`make_settlement` cannot settle the item: a kind other than principal or "
            "confirmed (`kind`), no need held (`unknown`), a conflicted item (`conflicted`), "
            "or an outcome the terms do not offer (the extension's reason).",
        ),
        # --- the data's faults, in admission order -------------------------------------------
        Code(
            "parse",
            "protocol",
            "parse",
            "The record is not strict I-JSON: not UTF-8 JSON text (`json_syntax`), a duplicate "
            "member (`duplicate_member`), a number out of range (`number_range`), a lone "
            "surrogate (`lone_surrogate`), not an object (`not_object`), too large "
            "(`too_large`), or not canonicalisable (`not_jcs`).",
        ),
        Code(
            "schema",
            "protocol",
            "schema",
            "The record fails the core schema (`record_schema`), its pair's schema "
            "(`pair_schema`) or a named schema (`schema_invalid`), or a typed view of it has "
            "the wrong shape (`record_shape`).",
        ),
        Code(
            "pair",
            "protocol",
            "pair",
            "The extension's table has no such (type, origin) pair (`unknown_pair`).",
        ),
        Code(
            "record",
            "protocol",
            "record",
            "The record breaks a record rule the schemas cannot express, or an extension's "
            "own rule (docs/spec/handoff.md §4, handoff-extensions.md §4-§5).",
        ),
        Code(
            "ownership",
            "protocol",
            "ownership",
            "The sender may not write this register: the origin, the sender's role or the "
            "pair is not theirs (docs/spec/handoff.md §3).",
        ),
        Code(
            "authority",
            "protocol",
            "authority",
            "The settlement's authority is not acceptable: a wrong decider, a broken "
            "delegation chain, a missing representative, or a mandate the side does not hold "
            "or that does not cover it (docs/spec/handoff.md §5).",
        ),
        Code(
            "evidence",
            "protocol",
            "evidence",
            "The settlement's evidence does not bind what the person saw: `presented` or "
            "`proposal` missing or wrong, terms not held, or a malformed presentation.",
        ),
        Code(
            "proof",
            "protocol",
            "proof",
            "`evidence.proof` does not verify: missing, malformed, a bad header, a disallowed "
            "algorithm, an unknown kid, a key that cannot verify the algorithm, or a bad "
            "signature.",
        ),
        Code(
            "conformance",
            "protocol",
            "conformance",
            "The record is admissible but its sender's conformance class may not emit it "
            "here (§12): a reused key, a need missing or withdrawn, the current record not "
            "superseded, a terms_rev that does not step by one.",
        ),
        Code(
            "conflict",
            "protocol",
            "store",
            "A store already holds another content under this record id (`same_id`): the "
            "first admitted is kept.",
        ),
        Code(
            "markdown",
            "protocol",
            "parse",
            "The Acts state document is not text or holds a NUL character (`not_text`).",
        ),
    ],
)
"""Every code :mod:`handoff` raises: usage codes first, then protocol codes in stage order."""


class HandoffError(CodedError):
    """The root of every :mod:`handoff` error: ``code`` (from :data:`CODES`), ``reason``,
    ``message``.

    ``HandoffError("parse", "…")`` builds the class :data:`CODES` names for the code
    (here a :class:`HandoffProtocolError`); a code the table lacks is refused.
    """

    codes = CODES


class HandoffUsageError(HandoffError):
    """The caller broke the rules: a bad option, configuration, key or ``now``."""

    kind = "usage"


class HandoffProtocolError(HandoffError):
    """The data is bad: a record, settlement, proof or document that must be refused."""

    kind = "protocol"
