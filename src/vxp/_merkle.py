"""RFC 9162 §2.1 Merkle trees: hashing, tree heads, inclusion and consistency proofs.

Hashes are raw 32-byte SHA-256 values here; :func:`vxp.codec.encode_hash` gives their textual
``sha-256:<base64url>`` form. Proof generation works on any source of complete-subtree
hashes (see :class:`SubtreeSource`), so the in-memory and SQLite logs share it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence

from .errors import VxpError

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

EMPTY_ROOT = hashlib.sha256(b"").digest()
"""The tree head of the empty tree: SHA-256 of the empty string (RFC 9162 §2.1.1)."""

_HASH_SIZE = 32

SubtreeSource = Callable[[int, int], bytes]
"""``(start, size) -> MTH(D[start:start+size])`` for the aligned subtrees RFC 9162 visits."""


_BYTES_LIKE = (bytes, bytearray, memoryview)


def leaf_hash(data: bytes) -> bytes:
    """Return the RFC 9162 leaf hash ``SHA-256(0x00 || data)``."""
    if not isinstance(data, _BYTES_LIKE):
        # bytes(3) would silently be three zero bytes, bytes("x") a TypeError
        raise VxpError("merkle_argument_invalid", "leaf data is bytes")
    return hashlib.sha256(b"\x00" + bytes(data)).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """Return the RFC 9162 interior node hash ``SHA-256(0x01 || left || right)``."""
    if not isinstance(left, bytes) or not isinstance(right, bytes):
        raise VxpError("merkle_argument_invalid", "node hash inputs are bytes")
    return hashlib.sha256(b"\x01" + left + right).digest()


def _split(n: int) -> int:
    """The largest power of two strictly smaller than ``n`` (``n >= 2``)."""
    return 1 << ((n - 1).bit_length() - 1)


def tree_hash(leaf_hashes: Sequence[bytes]) -> bytes:
    """Return the tree head MTH of a tree whose leaves have the given leaf hashes."""
    _check_hashes(leaf_hashes, "list of leaf hashes")
    stack: list[tuple[int, bytes]] = []
    for h in leaf_hashes:
        size, value = 1, h
        while stack and stack[-1][0] == size:
            _, left = stack.pop()
            size, value = size * 2, node_hash(left, value)
        stack.append((size, value))
    if not stack:
        return EMPTY_ROOT
    value = stack.pop()[1]
    while stack:
        value = node_hash(stack.pop()[1], value)
    return value


def _levels_source(leaf_hashes: Sequence[bytes]) -> SubtreeSource:
    """Return a :data:`SubtreeSource` over leaf hashes, building complete subtrees once."""
    _check_hashes(leaf_hashes, "list of leaf hashes")
    levels: list[list[bytes]] = [list(leaf_hashes)]
    while len(levels[-1]) > 1:
        below = levels[-1]
        levels.append([node_hash(below[i], below[i + 1]) for i in range(0, len(below) - 1, 2)])

    def stored(level: int, index: int) -> bytes | None:
        if level < len(levels) and index < len(levels[level]):
            return levels[level][index]
        return None

    def source(start: int, size: int) -> bytes:
        return subtree_hash(stored, start, size)

    return source


def inclusion_proof(
    leaf_hashes: Sequence[bytes], index: int, tree_size: int | None = None
) -> list[bytes]:
    """Return the inclusion proof of leaf ``index`` in the tree of the first ``tree_size``
    of ``leaf_hashes`` (default: all of them), RFC 9162 §2.1.3.1."""
    _check_hashes(leaf_hashes, "list of leaf hashes")
    size = len(leaf_hashes) if tree_size is None else tree_size
    _check_int(size, "tree size")
    if size > len(leaf_hashes):
        raise VxpError("tree_size_unknown", f"only {len(leaf_hashes)} leaf hashes are given")
    return audit_path(index, size, _levels_source(leaf_hashes[:size]))


def consistency_proof(
    leaf_hashes: Sequence[bytes], size1: int, size2: int | None = None
) -> list[bytes]:
    """Return the consistency proof from the tree of the first ``size1`` leaf hashes to the
    tree of the first ``size2`` (default: all of them), RFC 9162 §2.1.4.1."""
    _check_hashes(leaf_hashes, "list of leaf hashes")
    size = len(leaf_hashes) if size2 is None else size2
    _check_int(size, "second tree size")
    if size > len(leaf_hashes):
        raise VxpError("tree_size_unknown", f"only {len(leaf_hashes)} leaf hashes are given")
    return consistency_path(size1, size, _levels_source(leaf_hashes[:size]))


def subtree_hash(source: Callable[[int, int], bytes | None], start: int, size: int) -> bytes:
    """MTH(D[start:start+size]) from stored complete subtrees (``source(level, index)``)."""
    if size & (size - 1) == 0:
        level = size.bit_length() - 1
        stored = source(level, start >> level)
        if stored is not None:
            return stored
        if size == 1:
            raise VxpError("log_corrupt", f"the hash of leaf {start} is missing")
    k = _split(size)
    return node_hash(subtree_hash(source, start, k), subtree_hash(source, start + k, size - k))


def _path(index: int, start: int, size: int, mth: SubtreeSource) -> list[bytes]:
    if size == 1:
        return []
    k = _split(size)
    if index < k:
        return [*_path(index, start, k, mth), mth(start + k, size - k)]
    return [*_path(index - k, start + k, size - k, mth), mth(start, k)]


def _subproof(m: int, start: int, n: int, complete: bool, mth: SubtreeSource) -> list[bytes]:
    if m == n:
        return [] if complete else [mth(start, n)]
    k = _split(n)
    if m <= k:
        return [*_subproof(m, start, k, complete, mth), mth(start + k, n - k)]
    return [*_subproof(m - k, start + k, n - k, False, mth), mth(start, k)]


def audit_path(index: int, tree_size: int, mth: SubtreeSource) -> list[bytes]:
    """Return the RFC 9162 §2.1.3.1 audit path of leaf ``index`` in a tree of ``tree_size``."""
    _check_int(index, "leaf index")
    _check_int(tree_size, "tree size")
    if not 0 <= index < tree_size:
        raise VxpError(
            "inclusion_index_out_of_range",
            f"leaf index {index} is not inside a tree of size {tree_size}",
        )
    return _path(index, 0, tree_size, mth)


def consistency_path(size1: int, size2: int, mth: SubtreeSource) -> list[bytes]:
    """Return the RFC 9162 §2.1.4.1 consistency proof between tree sizes ``size1 <= size2``.

    Equal sizes give an empty proof; ``size1 == 0`` is refused (nothing to prove).
    """
    _check_int(size1, "first tree size")
    _check_int(size2, "second tree size")
    if not 0 < size1 <= size2:
        raise VxpError(
            "consistency_sizes_invalid",
            f"a consistency proof needs 0 < size1 <= size2, got {size1} and {size2}",
        )
    if size1 == size2:
        return []
    return _subproof(size1, 0, size2, True, mth)


def _check_int(value: object, what: str) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise VxpError("merkle_argument_invalid", f"the {what} is not a non-negative integer")


def _check_hashes(proof: object, what: str) -> None:
    if isinstance(proof, bytes | str) or not isinstance(proof, Sequence):
        raise VxpError("malformed_proof", f"the {what} is not a list of hashes")
    for i, p in enumerate(proof):
        if not isinstance(p, bytes) or len(p) != _HASH_SIZE:
            raise VxpError("malformed_proof", f"element {i} of the {what} is not a 32-byte hash")


def _check_hash(value: object, what: str) -> None:
    # exactly bytes: a subclass could answer == for any other hash
    if type(value) is not bytes or len(value) != _HASH_SIZE:
        raise VxpError("malformed_hash", f"the {what} is not a 32-byte hash")


def root_from_proof(leaf: bytes, index: int, tree_size: int, proof: Sequence[bytes]) -> bytes:
    """Return the root that ``proof`` implies for leaf hash ``leaf`` (RFC 9162 §2.1.3.2).

    Raises :class:`VxpError` when the proof cannot belong to a tree of ``tree_size``.
    """
    _check_int(index, "leaf index")
    _check_int(tree_size, "tree size")
    _check_hash(leaf, "leaf hash")
    _check_hashes(proof, "inclusion proof")
    if index >= tree_size:
        raise VxpError(
            "inclusion_index_out_of_range",
            f"leaf index {index} is not inside a tree of size {tree_size}",
        )
    return walk_inclusion(leaf, index, tree_size, proof)


def walk_inclusion(leaf: bytes, index: int, tree_size: int, proof: Sequence[bytes]) -> bytes:
    """The RFC 9162 §2.1.3.2 walk of :func:`root_from_proof`, for arguments it (or a caller
    that decoded them itself: 32-byte hashes, ``0 <= index < tree_size``) has checked."""
    sha256 = hashlib.sha256
    fn, sn, r = index, tree_size - 1, leaf
    for p in proof:
        if sn == 0:
            raise VxpError("proof_wrong_length", "the inclusion proof is longer than the tree")
        if fn & 1 or fn == sn:
            r = sha256(b"\x01" + p + r).digest()  # node_hash(p, r)
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            r = sha256(b"\x01" + r + p).digest()  # node_hash(r, p)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        raise VxpError("proof_wrong_length", "the inclusion proof is shorter than the tree")
    return r


def verify_inclusion(
    leaf: bytes, index: int, tree_size: int, proof: Sequence[bytes], root: bytes
) -> bytes:
    """Check that leaf hash ``leaf`` is at ``index`` in the tree of ``tree_size`` and ``root``.

    Returns ``root`` (now known to include the leaf) and raises
    :class:`~vxp.VxpProtocolError` otherwise (fail-closed).
    """
    _check_hash(root, "root")
    included(leaf, index, tree_size, proof, root, checked=False)
    return root


def included(
    leaf: bytes,
    index: int,
    tree_size: int,
    proof: Sequence[bytes],
    root: bytes,
    *,
    checked: bool,
) -> None:
    """:func:`verify_inclusion`; with ``checked``, the caller vouches that ``leaf``,
    ``proof`` and ``root`` are 32-byte ``bytes`` and ``index``/``tree_size`` integers (a
    verifier that decoded them itself), and only the walk and its bounds remain."""
    if checked:
        if not 0 <= index < tree_size:
            root_from_proof(leaf, index, tree_size, proof)  # raises, naming the fault
        found = walk_inclusion(leaf, index, tree_size, proof)
    else:
        found = root_from_proof(leaf, index, tree_size, proof)
    if found != root:
        raise VxpError("root_mismatch", "the inclusion proof leads to a different root")


def verify_consistency(
    size1: int, size2: int, root1: bytes, root2: bytes, proof: Sequence[bytes]
) -> bytes:
    """Check that tree (``size2``, ``root2``) extends (``size1``, ``root1``), RFC 9162 §2.1.4.2.

    Returns ``root2`` (now known to extend ``root1``) and raises
    :class:`~vxp.VxpProtocolError` otherwise. As transparency-dev/merkle does,
    ``size1 == 0`` is refused. Equal sizes, where RFC 9162 defines no check (its algorithm
    is for ``0 < first < second``, and fails an empty path), need an empty proof and two
    roots that are equal bytes (both exactly ``bytes``); the roots are compared, not
    checked for 32 bytes (an upstream probe passes two equal 12-byte roots), and the value
    returned is ``root1`` itself: a consistency check proves an extension, never that ``root1`` is a
    tree head (the caller's signed checkpoint says that). docs/spec/vxp.md §4.1.
    """
    _check_int(size1, "first tree size")
    _check_int(size2, "second tree size")
    _check_hashes(proof, "consistency proof")
    if size1 == 0 or size1 > size2:
        raise VxpError(
            "consistency_sizes_invalid",
            f"a consistency proof needs 0 < size1 <= size2, got {size1} and {size2}",
        )
    if size1 == size2:
        # Like transparency-dev/merkle, equal sizes compare the roots as given (exactly
        # bytes): the value returned is the caller's root1 (see the docstring).
        if proof:
            raise VxpError("proof_wrong_length", "equal tree sizes need an empty proof")
        if type(root1) is not bytes or type(root2) is not bytes or root1 != root2:
            raise VxpError("root_mismatch", "equal tree sizes with different roots")
        return root1
    _check_hash(root1, "first root")
    _check_hash(root2, "second root")
    if not proof:
        raise VxpError("proof_wrong_length", "the consistency proof is empty")
    path = list(proof)
    if size1 & (size1 - 1) == 0:
        path.insert(0, root1)
    fn, sn = size1 - 1, size2 - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            raise VxpError("proof_wrong_length", "the consistency proof is too long")
        if fn & 1 or fn == sn:
            fr = node_hash(c, fr)
            sr = node_hash(c, sr)
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            sr = node_hash(sr, c)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        raise VxpError("proof_wrong_length", "the consistency proof is too short")
    if fr != root1:
        raise VxpError("root_mismatch", "the consistency proof does not lead to the first root")
    if sr != root2:
        raise VxpError("root_mismatch", "the consistency proof does not lead to the second root")
    return root2
