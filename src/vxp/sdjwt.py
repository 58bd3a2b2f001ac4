"""The rest of the SD-JWT (RFC 9901) building block: disclosures, claim paths, salts.

The calls most callers need are at the top level (:func:`vxp.issue_sd_jwt`,
:func:`vxp.present_sd_jwt`, :func:`vxp.verify_sd_jwt`, :class:`vxp.Sd`,
:class:`vxp.SdJwt`, :class:`vxp.KeyBinding`, :class:`vxp.IssuerKeys`). Here:
:class:`Disclosure` (one decoded disclosure), :func:`mark_disclosable` (wrap the values at
claim paths in :class:`vxp.Sd`) and :data:`RandomSource` (the injected salt source).

>>> from vxp.sdjwt import mark_disclosable
>>> mark_disclosable({"name": "Ada", "age": 36}, [["age"]])["age"]
Sd(value=36)
"""

from __future__ import annotations

from ._sdjwt import Disclosure, RandomSource, mark_disclosable

__all__ = ["Disclosure", "RandomSource", "mark_disclosable"]
