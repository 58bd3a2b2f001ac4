"""Canonical JSON (RFC 8785, JCS) and the digests Handoff derives from it."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import rfc8785

from .errors import HandoffError

__all__ = ["canonical", "digest", "identity", "presented_digest", "signing_input"]


def canonical(value: Any) -> bytes:
    """Return the JCS (RFC 8785) serialisation of the JSON ``value`` as UTF-8 bytes.

    Raises :class:`HandoffError` (``parse``) when ``value`` holds something JCS cannot
    serialise: a lone surrogate, an integer outside the I-JSON safe range, a non-finite
    number, or a value that is not JSON at all.
    """
    try:
        return rfc8785.dumps(value)
    except (rfc8785.CanonicalizationError, TypeError, ValueError, RecursionError) as exc:
        raise HandoffError(
            "parse", f"the value cannot be canonicalised with JCS ({exc})", reason="not_jcs"
        ) from None


def _object(record: Any) -> dict[str, Any]:
    if not isinstance(record, Mapping):
        raise HandoffError("parse", "a record must be a JSON object", reason="not_object")
    return dict(record)


def digest(value: Any) -> str:
    """Return ``sha-256:`` + lowercase hex of the JCS form of ``value``.

    This is a record's digest (docs/spec/handoff.md §10), reported in conflicts and used
    to break ties between heads with different ids.
    """
    return "sha-256:" + hashlib.sha256(canonical(value)).hexdigest()


def identity(record: Mapping[str, Any]) -> str:
    """Return the digest of what makes two records with one id the same record (§10, ours).

    The whole record in JCS except the signature bytes of a detached ``evidence.proof``
    (its header, ``alg``, ``kid`` and ``typ``, counts, and what it signs is the rest of the
    record), and, for a record without a proof only, ``ts`` (the sender's informative
    clock). A proof signs ``ts``, so a signed record at another time is another record;
    two copies that differ only in signature bytes are *signature variants* of one
    record: every one is held and the best evidence among them counts, so a relay that
    turns an ES256 proof into a second valid one, or swaps in junk bytes, never rewrites
    or displaces the record.
    """
    copy = _object(record)
    evidence = copy.get("evidence")
    if isinstance(evidence, Mapping) and isinstance(evidence.get("proof"), str):
        copy["evidence"] = {**evidence, "proof": evidence["proof"].partition(".")[0]}
    else:
        copy.pop("ts", None)
    return digest(copy)


def presented_digest(shown: Any) -> str:
    """Return the ``evidence.presented`` digest of exactly what was shown to a person."""
    return digest(shown)


def signing_input(record: Mapping[str, Any]) -> bytes:
    """Return the bytes an ``evidence.proof`` covers: the record without it, in JCS.

    ``record`` is the record's JSON object; only ``evidence.proof`` is removed (an
    ``evidence`` object left empty stays, as an empty object).
    """
    copy = _object(record)
    evidence = copy.get("evidence")
    if isinstance(evidence, Mapping) and "proof" in evidence:
        copy["evidence"] = {k: v for k, v in evidence.items() if k != "proof"}
    return canonical(copy)
