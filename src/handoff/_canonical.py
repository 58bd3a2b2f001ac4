"""Canonical JSON (RFC 8785, JCS) and the digests Handoff derives from it."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import rfc8785

from ._errors import HandoffError

__all__ = ["canonical", "digest", "presented_digest", "signing_input"]


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


def digest(value: Any) -> str:
    """Return ``sha-256:`` + lowercase hex of the JCS form of ``value``.

    This is the record digest used to break ties order-free (lowest digest wins).
    """
    return "sha-256:" + hashlib.sha256(canonical(value)).hexdigest()


def presented_digest(shown: Any) -> str:
    """Return the ``evidence.presented`` digest of exactly what was shown to a person."""
    return digest(shown)


def signing_input(record: Mapping[str, Any]) -> bytes:
    """Return the bytes an ``evidence.proof`` covers: the record without it, in JCS.

    ``record`` is the record's JSON object; only ``evidence.proof`` is removed (an
    ``evidence`` object left empty stays, as an empty object).
    """
    copy = dict(record)
    evidence = copy.get("evidence")
    if isinstance(evidence, Mapping) and "proof" in evidence:
        copy["evidence"] = {k: v for k, v in evidence.items() if k != "proof"}
    return canonical(copy)
