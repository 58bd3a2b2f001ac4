"""RFC 9162 §2.1 Merkle trees: leaf and node hashes, tree heads, inclusion and consistency
proofs, and their checks.

Hashes are raw 32-byte SHA-256 values (:func:`vxp.codec.encode_hash` gives the textual
``sha-256:<base64url>`` form). A log that grows by appends is :class:`vxp.MerkleLog`;
signed tree heads are in :mod:`vxp.checkpoints`.

Both checks return the verified value or raise :class:`~vxp.VxpProtocolError`:
:func:`verify_inclusion` returns the root that now provably includes the leaf,
:func:`verify_consistency` the second root, now proven to extend the first.

>>> from vxp import merkle
>>> leaves = [merkle.leaf_hash(x) for x in (b"a", b"b", b"c")]
>>> root = merkle.tree_hash(leaves)
>>> merkle.verify_inclusion(leaves[1], 1, 3, merkle.inclusion_proof(leaves, 1), root) == root
True
"""

from __future__ import annotations

from ._merkle import (
    EMPTY_ROOT,
    consistency_proof,
    inclusion_proof,
    leaf_hash,
    node_hash,
    root_from_proof,
    tree_hash,
    verify_consistency,
    verify_inclusion,
)

__all__ = [
    "EMPTY_ROOT",
    "consistency_proof",
    "inclusion_proof",
    "leaf_hash",
    "node_hash",
    "root_from_proof",
    "tree_hash",
    "verify_consistency",
    "verify_inclusion",
]
