"""docs/spec/vxp.md §4: Merkle trees and proofs (§4.1), logs in memory and SQLite (§4.2),
checkpoints and witnesses (§4.3).

Private imports: ``vxp._merkle.included`` is the verifier's fast inclusion check (for
arguments it decoded itself); ``test_checked_inclusion_answers_as_verify_inclusion``
holds it to its oracle, the public ``vxp.merkle.verify_inclusion``.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from joserfc.jwk import ECKey, OKPKey

import vxp
from vxp import _merkle


def _leaves(n: int) -> list[bytes]:
    return [vxp.merkle.leaf_hash(i.to_bytes(4, "big")) for i in range(n)]


def _naive_root(hashes: list[bytes]) -> bytes:
    """RFC 9162 §2.1.1 written as the recursive definition."""
    if not hashes:
        return vxp.merkle.EMPTY_ROOT
    if len(hashes) == 1:
        return hashes[0]
    k = 1
    while k * 2 < len(hashes):
        k *= 2
    return vxp.merkle.node_hash(_naive_root(hashes[:k]), _naive_root(hashes[k:]))


@settings(max_examples=60)
@given(st.integers(min_value=0, max_value=70))
def test_tree_hash_matches_recursive_definition(n: int) -> None:
    hashes = _leaves(n)
    assert vxp.merkle.tree_hash(hashes) == _naive_root(hashes)


@settings(max_examples=40)
@given(st.integers(min_value=1, max_value=40))
def test_every_leaf_of_random_tree_verifies(n: int) -> None:
    hashes = _leaves(n)
    root = vxp.merkle.tree_hash(hashes)
    for i in range(n):
        proof = vxp.merkle.inclusion_proof(hashes, i)
        vxp.merkle.verify_inclusion(hashes[i], i, n, proof, root)
        assert vxp.merkle.root_from_proof(hashes[i], i, n, proof) == root


@settings(max_examples=25)
@given(st.integers(min_value=1, max_value=24))
def test_every_pair_of_sizes_is_consistent(n: int) -> None:
    hashes = _leaves(n)
    roots = [vxp.merkle.tree_hash(hashes[:m]) for m in range(n + 1)]
    for m in range(1, n + 1):
        for k in range(m, n + 1):
            proof = vxp.merkle.consistency_proof(hashes, m, k)
            vxp.merkle.verify_consistency(m, k, roots[m], roots[k], proof)


def _mutations(proof: list[bytes]) -> list[list[bytes]]:
    out = []
    for i, node in enumerate(proof):
        for pos in range(32):
            changed = bytearray(node)
            changed[pos] ^= 0x01 << (pos % 8)
            out.append([*proof[:i], bytes(changed), *proof[i + 1 :]])
    return out


@settings(max_examples=30)
@given(st.integers(min_value=2, max_value=33), st.data())
def test_any_byte_change_of_inclusion_proof_is_rejected(n: int, data: st.DataObject) -> None:
    hashes = _leaves(n)
    i = data.draw(st.integers(min_value=0, max_value=n - 1))
    root = vxp.merkle.tree_hash(hashes)
    proof = vxp.merkle.inclusion_proof(hashes, i)
    for bad in _mutations(proof):
        with pytest.raises(vxp.VxpError):
            vxp.merkle.verify_inclusion(hashes[i], i, n, bad, root)
    for pos in range(32):
        wrong = bytearray(root)
        wrong[pos] ^= 0x80
        with pytest.raises(vxp.VxpError):
            vxp.merkle.verify_inclusion(hashes[i], i, n, proof, bytes(wrong))
    if proof:
        with pytest.raises(vxp.VxpError):
            vxp.merkle.verify_inclusion(hashes[i], i, n, proof[:-1], root)
        with pytest.raises(vxp.VxpError):
            vxp.merkle.verify_inclusion(hashes[i], i, n, [*proof, proof[0]], root)


@settings(max_examples=30)
@given(st.integers(min_value=2, max_value=33), st.data())
def test_any_byte_change_of_consistency_proof_is_rejected(n: int, data: st.DataObject) -> None:
    hashes = _leaves(n)
    m = data.draw(st.integers(min_value=1, max_value=n - 1))
    r1, r2 = vxp.merkle.tree_hash(hashes[:m]), vxp.merkle.tree_hash(hashes)
    proof = vxp.merkle.consistency_proof(hashes, m)
    for bad in _mutations(proof):
        with pytest.raises(vxp.VxpError):
            vxp.merkle.verify_consistency(m, n, r1, r2, bad)
    with pytest.raises(vxp.VxpError):
        vxp.merkle.verify_consistency(m, n, r1, r2, proof[:-1])
    with pytest.raises(vxp.VxpError):
        vxp.merkle.verify_consistency(m, n, r2, r1, proof)


def test_domain_separation() -> None:
    a, b = vxp.merkle.leaf_hash(b"a"), vxp.merkle.leaf_hash(b"b")
    # A node can never pass as a leaf: leaf(left || right) differs from node(left, right).
    assert vxp.merkle.leaf_hash(a + b) != vxp.merkle.node_hash(a, b)
    # Second-preimage: a 2-leaf tree's root is not the leaf hash of the concatenation.
    assert vxp.merkle.tree_hash([a, b]) != vxp.merkle.leaf_hash(a + b)


@pytest.mark.parametrize(
    ("args", "code"),
    [
        ((b"x", 0, 1, [], vxp.merkle.EMPTY_ROOT), "malformed_hash"),
        ((vxp.merkle.EMPTY_ROOT, 0, 1, "nope", vxp.merkle.EMPTY_ROOT), "malformed_proof"),
        ((vxp.merkle.EMPTY_ROOT, 0, 1, [b"short"], vxp.merkle.EMPTY_ROOT), "malformed_proof"),
        ((vxp.merkle.EMPTY_ROOT, -1, 1, [], vxp.merkle.EMPTY_ROOT), "merkle_argument_invalid"),
        ((vxp.merkle.EMPTY_ROOT, True, 2, [], vxp.merkle.EMPTY_ROOT), "merkle_argument_invalid"),
        ((vxp.merkle.EMPTY_ROOT, 0, 0, [], vxp.merkle.EMPTY_ROOT), "inclusion_index_out_of_range"),
        ((vxp.merkle.EMPTY_ROOT, 0, "1", [], vxp.merkle.EMPTY_ROOT), "merkle_argument_invalid"),
    ],
)
def test_bad_inclusion_arguments(args: tuple[object, ...], code: str) -> None:
    with pytest.raises(vxp.VxpError) as info:
        vxp.merkle.verify_inclusion(*args)  # type: ignore[arg-type]
    assert info.value.code == code


def test_hash_text_form_is_strict() -> None:
    h = vxp.merkle.leaf_hash(b"")
    text = vxp.codec.encode_hash(h)
    assert vxp.codec.decode_hash(text) == h
    for bad in (text + "=", text[8:], "SHA-256:" + text[8:], text[:-1], text[:-1] + "+", 5):
        with pytest.raises(vxp.VxpError, match="malformed_hash"):
            vxp.codec.decode_hash(bad)


# ---------------------------------------------------------------------------- logs


def _stores(tmp_path: Path) -> list[vxp.stores.LogStore]:
    return [vxp.stores.MemoryLogStore(), vxp.stores.SqliteLogStore(tmp_path / "log.db", "test/log")]


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_log_matches_pure_functions(kind: str, tmp_path: Path) -> None:
    store = _stores(tmp_path)[0 if kind == "memory" else 1]
    log = vxp.MerkleLog("test/log", store)
    entries = [f"entry {i}".encode() for i in range(45)]
    for e in entries[:10]:
        log.append(e)
    assert log.extend(entries[10:]) == range(10, 45)
    hashes = [vxp.merkle.leaf_hash(e) for e in entries]
    for n in (1, 2, 7, 8, 31, 32, 33, 45):
        assert log.root(n) == vxp.merkle.tree_hash(hashes[:n])
        for i in range(0, n, 3):
            assert log.inclusion_proof(i, n) == vxp.merkle.inclusion_proof(hashes, i, n)
        for m in range(1, n + 1, 4):
            assert log.consistency_proof(m, n) == vxp.merkle.consistency_proof(hashes, m, n)
    assert log.entry(44) == entries[44]
    assert log.leaf_hash(3) == hashes[3]
    assert log.root(0) == vxp.merkle.EMPTY_ROOT
    with pytest.raises(vxp.VxpUsageError, match="log_size_invalid"):
        log.root(46)
    with pytest.raises(vxp.VxpError, match="log_entry_missing"):
        log.entry(45)
    with pytest.raises(vxp.VxpUsageError, match="log_entry_invalid"):  # the caller's log
        log.append("text")  # type: ignore[arg-type]
    with pytest.raises(vxp.VxpUsageError, match="log_entry_missing"):
        log.inclusion_proof(45, 45)
    with pytest.raises(vxp.VxpUsageError, match="log_size_invalid"):
        log.consistency_proof(0)
    log.close()


def test_sqlite_log_survives_restart(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    log = vxp.MerkleLog("test/log", vxp.stores.SqliteLogStore(path, "test/log"))
    log.extend([b"a", b"b", b"c"])
    root3 = log.root()
    log.close()
    again = vxp.MerkleLog("test/log", vxp.stores.SqliteLogStore(path, "test/log"))
    assert again.size == 3
    assert again.root() == root3
    again.append(b"d")
    vxp.merkle.verify_consistency(3, 4, root3, again.root(), again.consistency_proof(3))
    again.close()
    with pytest.raises(vxp.VxpError, match="log_origin_mismatch"):
        vxp.stores.SqliteLogStore(path, "another/log")


def test_sqlite_log_refuses_rewrites(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    store = vxp.stores.SqliteLogStore(path, "test/log")
    log = vxp.MerkleLog("test/log", store)
    log.extend([b"a", b"b", b"c", b"d"])
    root = log.root()
    raw = sqlite3.connect(path)
    for sql in (
        "UPDATE vxp_log_entries SET data = x'00' WHERE idx = 1",
        "DELETE FROM vxp_log_entries WHERE idx = 3",
        "UPDATE vxp_log_nodes SET hash = x'00' WHERE level = 0 AND idx = 0",
        "DELETE FROM vxp_log_nodes",
        "INSERT INTO vxp_log_entries (idx, data) VALUES (2, x'01')",
        "UPDATE vxp_log_meta SET value = 'other'",
    ):
        with pytest.raises(sqlite3.DatabaseError):
            raw.execute(sql)
    raw.close()
    # A writer that believes the log is shorter cannot overwrite the tail.
    with pytest.raises(vxp.VxpError, match="log_conflict"):
        store.append(2, [b"X"], [(0, 2, vxp.merkle.leaf_hash(b"X"))])
    assert log.size == 4
    assert log.root() == root
    log.close()


def test_memory_log_refuses_stale_append() -> None:
    store = vxp.stores.MemoryLogStore()
    log = vxp.MerkleLog("o", store)
    log.extend([b"a", b"b"])
    with pytest.raises(vxp.VxpError, match="log_conflict"):
        store.append(1, [b"x"], [(0, 1, vxp.merkle.leaf_hash(b"x"))])
    assert log.size == 2


def test_concurrent_appends_keep_one_history(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    logs = [vxp.MerkleLog("o", vxp.stores.SqliteLogStore(path, "o")) for _ in range(4)]
    errors: list[Exception] = []

    def work(log: vxp.MerkleLog, tag: int) -> None:
        for i in range(15):
            while True:
                try:
                    log.append(f"{tag}-{i}".encode())
                    break
                except vxp.VxpError as exc:
                    if exc.code != "log_conflict":
                        errors.append(exc)
                        return

    threads = [threading.Thread(target=work, args=(lg, t)) for t, lg in enumerate(logs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    check = logs[0]
    assert check.size == 60
    hashes = [vxp.merkle.leaf_hash(check.entry(i)) for i in range(60)]
    assert check.root() == vxp.merkle.tree_hash(hashes)
    for lg in logs:
        lg.close()


def test_log_origin_is_one_line() -> None:
    with pytest.raises(vxp.VxpError, match="log_origin_invalid"):
        vxp.MerkleLog("a\nb")


class _CountingStore:
    """A LogStore of a million entries whose every complete subtree hash is stored: it
    counts the hashes a proof reads."""

    def __init__(self) -> None:
        self.calls = 0

    def size(self) -> int:
        return 1_000_000

    def append(self, expected_size: int, entries: Any, nodes: Any) -> None:
        raise AssertionError("read only")

    def entry(self, index: int) -> bytes:
        return b""

    def node(self, level: int, index: int) -> bytes | None:
        self.calls += 1
        if (index + 1) << level > 1_000_000:
            return None  # not a complete subtree of the million entries
        return vxp.merkle.leaf_hash(f"{level}/{index}".encode())

    def close(self) -> None:
        pass


def test_million_leaf_proofs_are_logarithmic() -> None:
    """§4.2: proof generation from stored subtrees touches O(log n) nodes (no timing)."""
    store = _CountingStore()
    log = vxp.MerkleLog("o", store)
    assert len(log.inclusion_proof(123_456)) == 20
    assert store.calls < 200
    store.calls = 0
    log.consistency_proof(654_321)
    assert store.calls < 400


# ---------------------------------------------------------------------------- checkpoints


def _log_with(n: int) -> vxp.MerkleLog:
    log = vxp.MerkleLog("log.example/vxp")
    log.extend([f"e{i}".encode() for i in range(n)])
    return log


@pytest.mark.parametrize(
    "make", [lambda: OKPKey.generate_key("Ed25519"), lambda: ECKey.generate_key("P-256")]
)
def test_checkpoint_sign_verify_roundtrip(make: object) -> None:
    key = make()  # type: ignore[operator]
    log = _log_with(9)
    signed = log.checkpoint(key)
    cp = vxp.checkpoints.verify_checkpoint(signed, key, origin="log.example/vxp")
    assert cp == vxp.checkpoints.Checkpoint("log.example/vxp", 9, log.root())
    wire = signed.to_json()
    assert vxp.checkpoints.SignedCheckpoint.from_json(wire) == signed
    assert vxp.checkpoints.verify_checkpoint(wire, key.as_dict(private=False)) == cp
    with pytest.raises(vxp.VxpError, match="checkpoint_origin_mismatch"):
        vxp.checkpoints.verify_checkpoint(signed, key, origin="other")
    other = vxp.checkpoints.SignedCheckpoint(
        vxp.checkpoints.Checkpoint(cp.origin, cp.tree_size + 1, cp.root),
        signed.kid,
        signed.alg,
        signed.signature,
    )
    with pytest.raises(vxp.VxpError, match="checkpoint_signature_invalid"):
        vxp.checkpoints.verify_checkpoint(other, key)


def test_witness_cosigns_only_consistent_growth() -> None:
    log_key = OKPKey.generate_key("Ed25519")
    witness_key = ECKey.generate_key("P-256")
    witness = vxp.checkpoints.Witness(witness_key, {"log.example/vxp": log_key})
    log = _log_with(5)
    first = witness.cosign(log.checkpoint(log_key), time=100)
    assert vxp.checkpoints.verify_cosignatures(first, [witness_key]) == (witness.kid,)
    log.extend([b"x", b"y"])
    second = witness.cosign(log.checkpoint(log_key), proof=log.consistency_proof(5), time=101)
    assert len(second.cosignatures) == 1
    # A forked log with the same size as before but different history is refused.
    fork = _log_with(4)
    fork.extend([b"forked", b"x", b"y", b"z"])
    with pytest.raises(vxp.VxpError, match=r"root_mismatch|proof_wrong_length"):
        witness.cosign(fork.checkpoint(log_key), proof=fork.consistency_proof(7), time=102)
    with pytest.raises(vxp.VxpError, match="witness_rollback"):
        witness.cosign(log.checkpoint(log_key, 6), time=103)
    with pytest.raises(vxp.VxpError, match="witness_unknown_log"):
        witness.cosign(vxp.MerkleLog("elsewhere").checkpoint(log_key), time=104)
    with pytest.raises(vxp.VxpError, match="checkpoint_key_mismatch"):
        witness.cosign(log.checkpoint(OKPKey.generate_key("Ed25519")), time=105)


def test_cosignature_is_not_a_log_signature() -> None:
    """The same key as log and witness: its two signatures are not interchangeable."""
    key = OKPKey.generate_key("Ed25519")
    signed = _log_with(3).checkpoint(key)
    cosigned = vxp.checkpoints.cosign_checkpoint(signed, key, time=7)
    swapped = vxp.checkpoints.SignedCheckpoint(
        signed.checkpoint, signed.kid, signed.alg, cosigned.cosignatures[0].signature
    )
    with pytest.raises(vxp.VxpError, match="checkpoint_signature_invalid"):
        vxp.checkpoints.verify_checkpoint(swapped, key)


def test_quorum_and_untrusted_witnesses() -> None:
    log_key = ECKey.generate_key("P-256")
    w1, w2, stranger = (OKPKey.generate_key("Ed25519") for _ in range(3))
    signed = _log_with(2).checkpoint(log_key)
    for w in (w1, stranger):
        signed = vxp.checkpoints.cosign_checkpoint(signed, w, time=1)
    assert len(vxp.checkpoints.verify_cosignatures(signed, [w1, w2], quorum=1)) == 1
    with pytest.raises(vxp.VxpError, match="cosignature_quorum"):
        vxp.checkpoints.verify_cosignatures(signed, [w1, w2], quorum=2)
    with pytest.raises(vxp.VxpError, match="cosignature_duplicate"):
        vxp.checkpoints.cosign_checkpoint(signed, w1, time=2)


@pytest.mark.parametrize(
    "wire",
    [
        None,
        [],
        {"checkpoint": {}, "signature": {}, "cosignatures": []},
        {
            "checkpoint": {
                "origin": "o",
                "tree_size": -1,
                "root": vxp.codec.encode_hash(vxp.merkle.EMPTY_ROOT),
            },
            "signature": {"kid": "k", "alg": "EdDSA", "sig": ""},
            "cosignatures": [],
        },
        {
            "checkpoint": {
                "origin": "o",
                "tree_size": True,
                "root": vxp.codec.encode_hash(vxp.merkle.EMPTY_ROOT),
            },
            "signature": {"kid": "k", "alg": "EdDSA", "sig": ""},
            "cosignatures": [],
        },
        {
            "checkpoint": {
                "origin": "o",
                "tree_size": 0,
                "root": vxp.codec.encode_hash(vxp.merkle.EMPTY_ROOT),
            },
            "signature": {"kid": "k", "alg": "none", "sig": ""},
            "cosignatures": [],
        },
        {
            "checkpoint": {
                "origin": "o",
                "tree_size": 0,
                "root": vxp.codec.encode_hash(vxp.merkle.EMPTY_ROOT),
            },
            "signature": {"kid": "k", "alg": "EdDSA", "sig": "=="},
            "cosignatures": [],
        },
        {
            "checkpoint": {
                "origin": "o",
                "tree_size": 0,
                "root": vxp.codec.encode_hash(vxp.merkle.EMPTY_ROOT),
            },
            "signature": {"kid": "k", "alg": "EdDSA", "sig": ""},
            "cosignatures": [{}],
        },
        {
            "checkpoint": {
                "origin": "o",
                "tree_size": 0,
                "root": vxp.codec.encode_hash(vxp.merkle.EMPTY_ROOT),
            },
            "signature": {"kid": "k", "alg": "EdDSA", "sig": ""},
            "cosignatures": "x",
        },
    ],
)
def test_malformed_signed_checkpoints(wire: object) -> None:
    with pytest.raises(vxp.VxpError):
        vxp.checkpoints.verify_checkpoint(wire, OKPKey.generate_key("Ed25519"))  # type: ignore[arg-type]


@settings(max_examples=200, deadline=None)
@given(
    size=st.integers(min_value=1, max_value=40),
    index=st.integers(min_value=0, max_value=45),
    change=st.sampled_from(["none", "drop", "extra", "flip", "leaf"]),
)
def test_checked_inclusion_answers_as_verify_inclusion(size: int, index: int, change: str) -> None:
    """The verifier's path (arguments it decoded itself) refuses exactly what
    verify_inclusion refuses, with the same code."""
    leaves = [vxp.merkle.leaf_hash(bytes([i])) for i in range(size)]
    root = vxp.merkle.tree_hash(leaves)
    at = min(index, size - 1)
    proof = vxp.merkle.inclusion_proof(leaves, at)
    leaf = leaves[at]
    if change == "drop" and proof:
        proof = proof[:-1]
    elif change == "extra":
        proof = [*proof, bytes(32)]
    elif change == "flip" and proof:
        proof = [bytes([proof[0][0] ^ 1]) + proof[0][1:], *proof[1:]]
    elif change == "leaf":
        leaf = bytes(32)

    def outcome(fn: Any) -> Any:
        try:
            fn()
        except vxp.VxpError as exc:
            return exc.code
        return "ok"

    general = outcome(lambda: vxp.merkle.verify_inclusion(leaf, index, size, proof, root))
    checked = outcome(lambda: _merkle.included(leaf, index, size, proof, root, checked=True))
    assert checked == general


class _Equal(bytes):
    """A root that answers "equal" to every other."""

    def __eq__(self, other: object) -> bool:
        return True

    def __ne__(self, other: object) -> bool:
        return False

    __hash__ = bytes.__hash__


def test_consistency_at_equal_sizes_needs_an_empty_proof_and_equal_roots() -> None:
    """docs/spec/vxp.md §4.1 (ours, as transparency-dev/merkle): RFC 9162 §2.1.4.2 defines
    no check for ``first == second``; equal sizes need an empty proof and equal roots, and
    the root returned is the caller's ``root1``."""
    leaves = [vxp.merkle.leaf_hash(bytes([i])) for i in range(5)]
    root = vxp.merkle.tree_hash(leaves)
    copy = bytes(bytearray(root))
    assert vxp.merkle.verify_consistency(5, 5, root, copy, []) is root  # the caller's root1
    with pytest.raises(vxp.VxpProtocolError, match="root_mismatch"):  # equal *bytes* only
        vxp.merkle.verify_consistency(5, 5, root, bytearray(root), [])  # type: ignore[arg-type]
    with pytest.raises(vxp.VxpProtocolError):  # a bytes subclass that equals everything
        vxp.merkle.verify_consistency(5, 5, root, _Equal(bytes(32)), [])
    proof = vxp.merkle.consistency_proof(leaves, 2, 3)
    with pytest.raises(vxp.VxpProtocolError, match="malformed_hash"):
        vxp.merkle.verify_consistency(
            2, 3, vxp.merkle.tree_hash(leaves[:2]), _Equal(bytes(32)), proof
        )
    other = vxp.merkle.tree_hash([*leaves[:4], vxp.merkle.leaf_hash(b"x")])
    with pytest.raises(vxp.VxpProtocolError, match="root_mismatch"):
        vxp.merkle.verify_consistency(5, 5, root, other, [])
    with pytest.raises(vxp.VxpProtocolError, match="proof_wrong_length"):
        vxp.merkle.verify_consistency(5, 5, root, root, [leaves[0]])
    with pytest.raises(vxp.VxpProtocolError, match="root_mismatch"):
        vxp.merkle.verify_consistency(5, 5, "text", "text", [])  # type: ignore[arg-type]
    with pytest.raises(vxp.VxpProtocolError, match="consistency_sizes_invalid"):
        vxp.merkle.verify_consistency(0, 0, vxp.merkle.EMPTY_ROOT, vxp.merkle.EMPTY_ROOT, [])
    # a log's own proof between equal sizes is the empty one
    log = vxp.MerkleLog("o")
    log.extend([bytes([i]) for i in range(5)])
    assert log.consistency_proof(5, 5) == []


@pytest.mark.parametrize("data", [3, "abc", None, [1, 2], 1.5])
def test_leaf_hash_refuses_non_bytes(data: Any) -> None:
    """§4.1: leaf data is bytes; ``bytes(3)`` is three zero bytes, so ``leaf_hash(3)`` used
    to hash b"\\0\\0\\0" silently."""
    with pytest.raises(vxp.VxpError, match="merkle_argument_invalid"):
        vxp.merkle.leaf_hash(data)


def test_leaf_hash_accepts_bytes_like() -> None:
    """§4.1: any bytes-like leaf data hashes as its bytes."""
    want = vxp.merkle.leaf_hash(b"abc")
    assert (
        vxp.merkle.leaf_hash(bytearray(b"abc")) == vxp.merkle.leaf_hash(memoryview(b"abc")) == want
    )


@pytest.mark.parametrize(("left", "right"), [("a", b"b"), (b"a", None), (3, 4)])
def test_node_hash_refuses_non_bytes(left: Any, right: Any) -> None:
    """§4.1: node hash inputs are bytes."""
    with pytest.raises(vxp.VxpError, match="merkle_argument_invalid"):
        vxp.merkle.node_hash(left, right)


@settings(max_examples=200, deadline=None)
@given(
    index=st.integers(-2, 2**70),
    size=st.integers(-2, 2**70),
    size2=st.integers(-2, 2**70),
    proof=st.lists(st.binary(min_size=31, max_size=33), max_size=70),
)
def test_merkle_verifiers_raise_only_vxp_error(
    index: int, size: int, size2: int, proof: list[bytes]
) -> None:
    """§4.1: proofs of any length and sizes of any magnitude fail with a VxpError."""
    for call in (
        lambda: vxp.merkle.verify_inclusion(b"\x00" * 32, index, size, proof, b"\x01" * 32),
        lambda: vxp.merkle.verify_consistency(size, size2, b"\x00" * 32, b"\x01" * 32, proof),
    ):
        with pytest.raises(vxp.VxpError):
            call()


def test_empty_tree_checkpoint_has_the_empty_root() -> None:
    """§4.3: a checkpoint of size 0 has the empty tree's root (checkpoint_invalid otherwise)."""
    assert vxp.checkpoints.Checkpoint("o", 0, vxp.merkle.EMPTY_ROOT).tree_size == 0
    with pytest.raises(vxp.VxpError, match="checkpoint_invalid"):
        vxp.checkpoints.Checkpoint("o", 0, b"\x00" * 32)
    with pytest.raises(vxp.VxpError, match="checkpoint_invalid"):
        vxp.checkpoints.Checkpoint.from_json(
            {"origin": "o", "tree_size": 0, "root": vxp.codec.encode_hash(b"1" * 32)}
        )
