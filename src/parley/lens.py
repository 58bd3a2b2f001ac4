"""Lens, budgets and continuation handles (Parley v1 SPEC.md sections 3 and 4).

:func:`lens` renders a reply (or any JSON value) as Lens, the compact text a model reads;
:func:`lean` renders one value; :func:`estimate` counts tokens the way budgets do;
:func:`fit` cuts a reply to a budget, parking the rest behind ``more`` handles that
:func:`expand` serves back (:func:`park`, :func:`new_handle`, a :class:`HandleStore`).

>>> from parley.lens import estimate, lean
>>> print(lean({"b": 1, "a": [1, 2]}))
b: 1
a: [1, 2]
>>> estimate("hello") >= 1
True
"""

from __future__ import annotations

from ._estimate import estimate
from ._fit import fit
from ._handles import (
    HANDLE_TTL,
    HandleStore,
    MemoryHandleStore,
    expand,
    expand_slice,
    new_handle,
    park,
)
from ._lean import lean
from ._lens import lens

__all__ = [
    "HANDLE_TTL",
    "HandleStore",
    "MemoryHandleStore",
    "estimate",
    "expand",
    "expand_slice",
    "fit",
    "lean",
    "lens",
    "new_handle",
    "park",
]
