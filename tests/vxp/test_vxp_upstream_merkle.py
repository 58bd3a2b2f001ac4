"""Upstream RFC 9162 probes (transparency-dev/merkle testdata) and tree constants."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

import vxp

ROOT = Path(__file__).resolve().parents[2] / "vectors" / "third_party" / "merkle-rfc9162"
TESTDATA = ROOT / "transparency-dev-merkle-testdata"
INCLUSION = sorted((TESTDATA / "inclusion").rglob("*.json"))
CONSISTENCY = sorted((TESTDATA / "consistency").rglob("*.json"))
CONSTANTS = json.loads((ROOT / "tree_constants.json").read_text())


def _b(value: str | None) -> bytes:
    return b"" if value is None else base64.b64decode(value)


def _ids(paths: list[Path]) -> list[str]:
    return [str(p.relative_to(TESTDATA)) for p in paths]


def test_probe_counts() -> None:
    assert len(INCLUSION) == 98
    assert len(CONSISTENCY) == 98


@pytest.mark.parametrize("path", INCLUSION, ids=_ids(INCLUSION))
def test_inclusion_probe(path: Path) -> None:
    probe: dict[str, Any] = json.loads(path.read_text())
    proof = [_b(p) for p in probe["proof"] or []]
    try:
        vxp.merkle.verify_inclusion(
            _b(probe["leafHash"]), probe["leafIdx"], probe["treeSize"], proof, _b(probe["root"])
        )
    except vxp.VxpError:
        assert probe["wantErr"], probe["desc"]
    else:
        assert not probe["wantErr"], probe["desc"]


@pytest.mark.parametrize("path", CONSISTENCY, ids=_ids(CONSISTENCY))
def test_consistency_probe(path: Path) -> None:
    probe: dict[str, Any] = json.loads(path.read_text())
    proof = [_b(p) for p in probe["proof"] or []]
    try:
        vxp.merkle.verify_consistency(
            probe["size1"], probe["size2"], _b(probe["root1"]), _b(probe["root2"]), proof
        )
    except vxp.VxpError:
        assert probe["wantErr"], probe["desc"]
    else:
        assert not probe["wantErr"], probe["desc"]


def test_happy_path_proofs_are_the_ones_we_generate() -> None:
    """Our generator reproduces every happy-path proof of the 8-leaf test tree."""
    leaves = [vxp.merkle.leaf_hash(bytes.fromhex(x)) for x in CONSTANTS["leaf_inputs_hex"]]
    checked = 0
    for path in INCLUSION:
        probe = json.loads(path.read_text())
        if path.name != "happy-path.json":
            continue
        size, index = probe["treeSize"], probe["leafIdx"]
        if size <= len(leaves) and _b(probe["leafHash"]) == leaves[index]:
            assert vxp.merkle.inclusion_proof(leaves, index, size) == [
                _b(p) for p in probe["proof"] or []
            ]
            checked += 1
    for path in CONSISTENCY:
        probe = json.loads(path.read_text())
        if path.name != "happy-path.json" or probe["size2"] > len(leaves):
            continue
        if _b(probe["root2"]) != vxp.merkle.tree_hash(leaves[: probe["size2"]]):
            continue
        expected = [_b(p) for p in probe["proof"] or []]
        assert vxp.merkle.consistency_proof(leaves, probe["size1"], probe["size2"]) == expected
        checked += 1
    assert checked >= 4


def test_roots_by_tree_size() -> None:
    leaves = [vxp.merkle.leaf_hash(bytes.fromhex(x)) for x in CONSTANTS["leaf_inputs_hex"]]
    for size, want in enumerate(CONSTANTS["root_hashes_hex_by_tree_size"]):
        assert vxp.merkle.tree_hash(leaves[:size]).hex() == want


def test_node_hashes_by_level() -> None:
    level = [vxp.merkle.leaf_hash(bytes.fromhex(x)) for x in CONSTANTS["leaf_inputs_hex"]]
    for want in CONSTANTS["node_hashes_hex_by_level"]:
        assert [h.hex() for h in level] == want
        level = [vxp.merkle.node_hash(level[i], level[i + 1]) for i in range(0, len(level) - 1, 2)]


def test_hasher_known_answers() -> None:
    for case in CONSTANTS["hasher_cases"]:
        if "left_ascii" in case:
            got = vxp.merkle.node_hash(case["left_ascii"].encode(), case["right_ascii"].encode())
        elif "leaf_ascii" in case:
            got = vxp.merkle.leaf_hash(case["leaf_ascii"].encode())
        elif "leaf_hex" in case:
            got = vxp.merkle.leaf_hash(bytes.fromhex(case["leaf_hex"]))
        else:
            got = vxp.merkle.EMPTY_ROOT
        assert got.hex() == case["want"], case["desc"]
