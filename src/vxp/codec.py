"""The strict encodings VXP uses: unpadded base64url, JCS (RFC 8785) and ``sha-256:`` digests.

Decoding is strict (one accepted spelling per value) and raises
:class:`~vxp.VxpProtocolError` (``malformed_base64url``, ``malformed_hash``,
``not_canonicalizable``).

>>> from vxp.codec import b64url_decode, b64url_encode, canonical_json
>>> b64url_encode(b"\\xff"), b64url_decode("_w", "example")
('_w', b'\\xff')
>>> canonical_json({"b": 1, "a": [True, None]})
b'{"a":[true,null],"b":1}'
"""

from __future__ import annotations

from ._codec import b64url_decode, b64url_encode, canonical_json, decode_hash, encode_hash

__all__ = ["b64url_decode", "b64url_encode", "canonical_json", "decode_hash", "encode_hash"]
