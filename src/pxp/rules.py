"""The tables that decide what a room does; every other module only asks them.

* :data:`TRANSITIONS`: ``(state, action) -> {outcome: next state}`` over :data:`STATES` and
  :data:`ACTIONS`; any pair not listed is refused ``invalid_transition``;
* :data:`ENTRY_ACTIONS` and :data:`FOLLOW_UPS`: the action each ledger entry type performs,
  and the entries that complete an outcome (:meth:`pxp.Room.apply`);
* :data:`ENTRY_MEMBERS`: the members each entry type's data holds as live play writes it
  (an imported entry with others is refused);
* :data:`CLAIM_RULES`: the ordered claim-origin rules of enforcement (spec §5), each a
  ``(flag, predicate)``; the first that holds downgrades a claim to ``assumed``;
* :data:`FLAG_SENTENCES`: the fixed sentence each rewrite records in ``protocol_flags``;
* :data:`MAX_CONTESTS_PER_SEAT`, :data:`MAX_REJOINS_PER_SEAT`: how often a seat's entries
  are recorded;
* :func:`normalize`, :func:`compact`, :func:`contains_words`, :func:`hidden_characters`:
  the one text normaliser every matching rule compares through (spec §5), for a proxy that
  wants to know before it sends whether a term crosses a must_never.
"""

from __future__ import annotations

from ._claims import CLAIM_RULES, ClaimRule
from ._flags import FLAG_SENTENCES
from ._room import (
    ACTIONS,
    ENTRY_ACTIONS,
    ENTRY_MEMBERS,
    FOLLOW_UPS,
    MAX_CONTESTS_PER_SEAT,
    MAX_REJOINS_PER_SEAT,
    STATES,
    TRANSITIONS,
)
from ._text import compact, contains_words, hidden_characters, normalize

__all__ = [
    "ACTIONS",
    "CLAIM_RULES",
    "ENTRY_ACTIONS",
    "ENTRY_MEMBERS",
    "FLAG_SENTENCES",
    "FOLLOW_UPS",
    "MAX_CONTESTS_PER_SEAT",
    "MAX_REJOINS_PER_SEAT",
    "STATES",
    "TRANSITIONS",
    "ClaimRule",
    "compact",
    "contains_words",
    "hidden_characters",
    "normalize",
]
