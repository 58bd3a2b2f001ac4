"""Ed25519 keys beyond :class:`parley.Key`: public keys, raw signatures, the agent key store.

:class:`parley.Key`, :func:`parley.generate_key` and :func:`parley.key_from_seed` are at the
top level; a public key travels as ``ed25519:`` plus unpadded base64url (SPEC.md section 6.1).

>>> import parley
>>> from parley.keys import parse_public_key
>>> key = parley.key_from_seed(bytes(32))
>>> len(parse_public_key(key.public))
32
>>> parley.keys.verify_signature(key.public, b"hello", key.sign(b"hello"))
b'hello'

:func:`verify_signature` returns the data it verified or raises
:class:`parley.ParleyProtocolError` (``unauthorized``), as every pass/fail check does.
"""

from __future__ import annotations

from ._keys import parse_public_key, verify_signature
from ._keystore import AgentKeyStore

__all__ = ["AgentKeyStore", "parse_public_key", "verify_signature"]
