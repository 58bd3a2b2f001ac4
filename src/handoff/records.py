"""The parts of a record and the core's tables, for code that reads records member by member.

Most callers handle records as JSON objects (``dict``) or as :class:`handoff.Record`; this
module holds the typed parts a :class:`~handoff.Record` is made of (:class:`About`,
:class:`Authority`, :class:`Evidence`, :class:`Relation`, :class:`Target`), what a fold
reports beside an item's state (:class:`Conflict`, :class:`RelationState`), and the core's
tables: the version implemented (:data:`PH_VERSION`), the record types, the origins and the
(type, origin) pairs with their schemas, and the size limit of a record
(:data:`MAX_RECORD_BYTES`).
"""

from __future__ import annotations

from ._check import PH_VERSION
from ._config import CORE_PAIRS, CORE_ROLES
from ._fold import Conflict, RelationState
from ._json import MAX_RECORD_BYTES
from ._records import RECORD_TYPES, About, Authority, Evidence, Relation, Target

__all__ = [
    "CORE_PAIRS",
    "CORE_ROLES",
    "MAX_RECORD_BYTES",
    "PH_VERSION",
    "RECORD_TYPES",
    "About",
    "Authority",
    "Conflict",
    "Evidence",
    "Relation",
    "RelationState",
    "Target",
]
