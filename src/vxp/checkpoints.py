"""Signed checkpoints of a Merkle log and witness cosignatures.

A log signs a :class:`Checkpoint` (``origin``, ``tree_size``, ``root``) with
:func:`sign_checkpoint`; a :class:`Witness` cosigns one only if it extends the last one it
cosigned. :func:`verify_checkpoint` returns the verified :class:`Checkpoint`,
:func:`verify_cosignatures` the kids of the witnesses whose cosignatures verify; both raise
:class:`~vxp.VxpProtocolError` otherwise (there is no "failed" result to misread).

>>> import vxp
>>> from vxp.checkpoints import Checkpoint, sign_checkpoint, verify_checkpoint
>>> log_key = vxp.demo_key("log")
>>> log = vxp.MerkleLog("log.example/vxp")
>>> log.extend([b"a", b"b"])
range(0, 2)
>>> signed = sign_checkpoint(Checkpoint(log.origin, log.size, log.root()), log_key)
>>> verify_checkpoint(signed.to_json(), log_key, origin=log.origin).tree_size
2
"""

from __future__ import annotations

from ._checkpoint import (
    Checkpoint,
    Cosignature,
    SignedCheckpoint,
    Witness,
    cosign_checkpoint,
    sign_checkpoint,
    verify_checkpoint,
    verify_cosignatures,
)

__all__ = [
    "Checkpoint",
    "Cosignature",
    "SignedCheckpoint",
    "Witness",
    "cosign_checkpoint",
    "sign_checkpoint",
    "verify_checkpoint",
    "verify_cosignatures",
]
