"""The service side in detail: capabilities, parameter checks, clarifications, recovery.

:class:`parley.Service`, :class:`parley.Context`, :func:`parley.offer`,
:func:`parley.clarify` and :class:`parley.ServiceError` are at the top level; this module
holds the pieces a service author reaches for less often.

>>> from parley.service import merge_patch
>>> merge_patch({"a": 1, "b": 2}, {"b": None, "c": 3})
{'a': 1, 'c': 3}
"""

from __future__ import annotations

from ._params import ParamsError, check_params, merge_patch
from ._recovery import Outcome, happened, not_happened
from ._service import Capability, Clarify

__all__ = [
    "Capability",
    "Clarify",
    "Outcome",
    "ParamsError",
    "check_params",
    "happened",
    "merge_patch",
    "not_happened",
]
