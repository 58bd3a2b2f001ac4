"""Canonical JSON (RFC 8785, JCS) and the digests Handoff derives from it.

:func:`canonical` gives the JCS bytes; :func:`digest` a record's ``sha-256:`` digest;
:func:`identity` what makes two records with one id the same record (§10);
:func:`presented_digest` the ``evidence.presented`` value of what a person was shown (§9);
:func:`signing_input` the bytes an ``evidence.proof`` covers.
"""

from __future__ import annotations

from ._canonical import canonical, digest, identity, presented_digest, signing_input

__all__ = ["canonical", "digest", "identity", "presented_digest", "signing_input"]
