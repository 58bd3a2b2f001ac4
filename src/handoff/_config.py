"""Deployment configuration: who holds which role (§3), and the extension registry (§11).

Both are plain frozen values passed to every receiver call; nothing here is global.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from .errors import HandoffError

__all__ = [
    "CORE_PAIRS",
    "CORE_ROLES",
    "Extension",
    "ExtensionRegistry",
    "Roles",
]

CORE_ROLES = frozenset({"requester", "principal", "agent"})
"""The origins the core defines (§4)."""

CORE_PAIRS: Mapping[tuple[str, str], str] = MappingProxyType(
    {
        ("raised", "requester"): "pair.raised.requester.json",
        ("amended", "requester"): "pair.amended.requester.json",
        ("withdrawn", "requester"): "pair.withdrawn.requester.json",
        ("settled", "principal"): "pair.settled.principal.json",
        ("reopened", "principal"): "pair.reopened.principal.json",
        ("claimed", "requester"): "pair.claimed.requester.json",
        ("claimed", "agent"): "pair.claimed.agent.json",
        ("related", "principal"): "pair.related.principal.json",
        ("related", "requester"): "pair.related.requester.json",
        ("note", "requester"): "pair.note.requester.json",
        ("note", "principal"): "pair.note.principal.json",
        ("note", "agent"): "pair.note.agent.json",
    }
)
"""The (type, origin) table of §4 as the core implements it, with each pair's schema."""

_ROLE_PAIR_SCHEMAS = {"claimed": "pair.claimed.any.json", "note": "pair.note.any.json"}

_EMPTY_ROLES: Mapping[str, frozenset[str]] = MappingProxyType({})


def _bad_config(message: str) -> HandoffError:
    return HandoffError("config", message, reason="config_invalid")


def _party_set(value: Any, where: str) -> frozenset[str]:
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise _bad_config(f"{where} is not a list of party identifiers")
    parties = list(value)
    if not all(isinstance(p, str) and p and not any(c.isspace() for c in p) for p in parties):
        raise _bad_config(f"{where} holds something that is not a party identifier")
    return frozenset(parties)


@dataclass(frozen=True)
class Roles:
    """Who holds which role in one deployment (§1, §3, R6).

    ``principal`` is the one principal identifier; ``principal_side`` the parties the
    deployment authenticates as its principal side (the principal's own tool);
    ``requesters`` maps a project name (or ``"*"`` for every project) to the parties
    holding that project's requester role; ``roles`` maps extension-defined roles to
    parties. ``principal_is_person`` is false for a legal person or public body.
    """

    principal: str
    principal_side: frozenset[str]
    requesters: Mapping[str, frozenset[str]]
    roles: Mapping[str, frozenset[str]] = field(default_factory=lambda: _EMPTY_ROLES)
    principal_is_person: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.principal, str) or not self.principal:
            raise _bad_config("the principal identifier is missing")
        groups = [("principal_side", self.principal_side)]
        if not isinstance(self.requesters, Mapping) or not isinstance(self.roles, Mapping):
            raise _bad_config("requesters and roles must map names to sets of parties")
        groups += [(f"requesters[{p!r}]", v) for p, v in self.requesters.items()]
        groups += [(f"roles[{r!r}]", v) for r, v in self.roles.items()]
        for where, parties in groups:
            # a plain string would make membership a substring test
            if not isinstance(parties, frozenset | set) or not all(
                isinstance(p, str) for p in parties
            ):
                raise _bad_config(f"{where} is not a set of party identifiers")
        if not self.principal_side:
            raise _bad_config("the principal side must hold at least one party")
        # the two registers have distinct owners (§3): neither the principal nor a party of
        # the principal side may hold a requester role, for any project
        owners = self.principal_side | {self.principal}
        for project, parties in self.requesters.items():
            if not owners.isdisjoint(parties):
                raise _bad_config(
                    f"requesters[{project!r}]: the principal and the principal side cannot "
                    "hold the requester role"
                )

    def is_requester(self, party: str, project: str) -> bool:
        """Whether ``party`` holds the requester role of ``project``."""
        found = self.requesters.get(project)
        if found is not None and party in found:
            return True
        anywhere = self.requesters.get("*")
        return anywhere is not None and party in anywhere

    def holds(self, party: str, origin: str, project: str) -> bool:
        """Whether ``party`` may emit records with ``origin`` for ``project`` (§3)."""
        if origin == "requester":
            return self.is_requester(party, project)
        if origin == "principal":
            return party in self.principal_side
        if origin == "agent":
            return party not in self.principal_side and party != self.principal
        members = self.roles.get(origin)
        return members is not None and party in members

    @classmethod
    def from_json(cls, value: Any) -> Roles:
        """Build from ``{"principal", "principal_side", "requesters", "roles"?, ...}``."""
        if not isinstance(value, Mapping):
            raise _bad_config("the roles configuration is not an object")
        principal = value.get("principal")
        if not isinstance(principal, str):
            raise _bad_config("roles.principal is not a string")
        requesters = value.get("requesters", {})
        roles = value.get("roles", {})
        if not isinstance(requesters, Mapping) or not isinstance(roles, Mapping):
            raise _bad_config("roles.requesters and roles.roles must be objects")
        is_person = value.get("principal_is_person", True)
        if not isinstance(is_person, bool):
            raise _bad_config("roles.principal_is_person is not a boolean")
        return cls(
            principal=principal,
            principal_side=_party_set(value.get("principal_side", [principal]), "principal_side"),
            requesters=MappingProxyType(
                {str(p): _party_set(v, f"requesters[{p!r}]") for p, v in requesters.items()}
            ),
            roles=MappingProxyType(
                {str(r): _party_set(v, f"roles[{r!r}]") for r, v in roles.items()}
            ),
            principal_is_person=is_person,
        )

    def to_json(self) -> dict[str, Any]:
        """Return the JSON form :meth:`from_json` reads."""
        return {
            "principal": self.principal,
            "principal_side": sorted(self.principal_side),
            "requesters": {p: sorted(v) for p, v in sorted(self.requesters.items())},
            "roles": {r: sorted(v) for r, v in sorted(self.roles.items())},
            "principal_is_person": self.principal_is_person,
        }


RecordHook = Callable[[Mapping[str, Any]], None]
OutcomeCheck = Callable[[Mapping[str, Any], Mapping[str, Any]], "str | None"]
"""Given a settlement and the terms it was made against, the reason it is not offered."""
"""An extension's own rule: raises :class:`HandoffError` to reject a record."""


@dataclass(frozen=True)
class Extension:
    """What an extension plugs into the core (§11).

    ``name``/``version`` form the ``ext`` value; ``policy`` is ``"keep"`` or ``"stop"``
    for an item whose need is withdrawn while its settlement is open (§6). ``outcomes``,
    ``claim_outcomes`` and ``reasons`` restrict those members (``None``: any
    snake_case value). ``pairs`` maps each listed (type, origin) pair to its schema
    name; it defaults to the core table and may only restrict it (extension-defined
    ``roles`` may add ``claimed`` and ``note`` pairs). ``hook`` adds the extension's own
    rules (for example on ``terms`` members). ``offered``, given a settlement and the
    terms it was made against, returns why its outcome was never offered (``None``: it
    was); the fold uses it where those terms are held.
    """

    name: str
    version: str
    kind: str
    policy: str = "keep"
    outcomes: frozenset[str] | None = None
    claim_outcomes: frozenset[str] | None = None
    reasons: frozenset[str] | None = None
    pairs: Mapping[tuple[str, str], str] = field(default_factory=lambda: CORE_PAIRS)
    roles: frozenset[str] = frozenset()
    hook: RecordHook | None = field(default=None, compare=False)
    offered: OutcomeCheck | None = field(default=None, compare=False)
    pair_checks: dict[tuple[str, str], Any] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )

    def __post_init__(self) -> None:
        # the compiled pair checks, filled on first use (see handoff._check.admit)
        object.__setattr__(self, "pair_checks", {})
        if self.policy not in {"keep", "stop"}:
            raise _bad_config(f"extension {self.name}: policy must be keep or stop")
        if "/" in self.name or not self.name:
            raise _bad_config(f"extension name {self.name!r} is not a bare name")
        if self.roles & CORE_ROLES:
            raise _bad_config(f"extension {self.name}: roles may not redefine a core role")
        for type_, origin in self.pairs:
            if (type_, origin) in CORE_PAIRS:
                continue
            if type_ in _ROLE_PAIR_SCHEMAS and origin in self.roles:
                continue
            raise _bad_config(
                f"extension {self.name}: pair ({type_}, {origin}) widens the core table"
            )

    @property
    def ext(self) -> str:
        """The ``ext`` value of its records: ``name/version``."""
        return f"{self.name}/{self.version}"

    def schema_for(self, type_: str, origin: str) -> str | None:
        """Return the schema name of a listed pair, or ``None`` when it is not listed."""
        return self.pairs.get((type_, origin))

    @classmethod
    def from_json(cls, value: Any) -> Extension:
        """Build from a JSON description (used by vectors and the CLI ``--config``).

        ``{"name", "version", "kind", "policy"?, "outcomes"?, "claim_outcomes"?,
        "reasons"?, "roles"?, "pairs"?: [[type, origin], ...]}``; listed pairs use the
        core schemas (extension-defined roles use the generic ``claimed``/``note`` ones).
        """
        if not isinstance(value, Mapping):
            raise _bad_config("an extension description is not an object")

        def names(member: str) -> frozenset[str] | None:
            got = value.get(member)
            if got is None:
                return None
            if not isinstance(got, list) or not all(isinstance(x, str) for x in got):
                raise _bad_config(f"extension {member} is not a list of strings")
            return frozenset(got)

        for member in ("name", "version", "kind"):
            if not isinstance(value.get(member), str):
                raise _bad_config(f"extension {member} is not a string")
        roles = names("roles") or frozenset()
        pairs: Mapping[tuple[str, str], str] = CORE_PAIRS
        listed = value.get("pairs")
        if listed is not None:
            if not isinstance(listed, list):
                raise _bad_config("extension pairs is not a list")
            chosen: dict[tuple[str, str], str] = {}
            for entry in listed:
                if (
                    not isinstance(entry, list)
                    or len(entry) != 2
                    or not all(isinstance(x, str) for x in entry)
                ):
                    raise _bad_config("each extension pair is [type, origin]")
                pair = (entry[0], entry[1])
                schema = CORE_PAIRS.get(pair) or _ROLE_PAIR_SCHEMAS.get(pair[0])
                if schema is None:
                    raise _bad_config(f"extension pair {entry} widens the core table")
                chosen[pair] = schema
            pairs = MappingProxyType(chosen)
        else:
            extra = {(t, r): s for t, s in _ROLE_PAIR_SCHEMAS.items() for r in sorted(roles)}
            if extra:
                pairs = MappingProxyType({**CORE_PAIRS, **extra})
        policy = value.get("policy", "keep")
        if not isinstance(policy, str):
            raise _bad_config("extension policy is not a string")
        outcomes = names("outcomes")
        claim_outcomes = names("claim_outcomes")
        return cls(
            name=value["name"],
            version=value["version"],
            kind=value["kind"],
            policy=policy,
            outcomes=outcomes,
            claim_outcomes=claim_outcomes if claim_outcomes is not None else outcomes,
            reasons=names("reasons"),
            pairs=pairs,
            roles=roles,
        )


class ExtensionRegistry:
    """The extensions a receiver implements, looked up by ``ext`` (``name/version``).

    Immutable: :meth:`with_extension` returns a new registry. Records of an extension
    name or version not in the registry are consumed without acting (§4, §14).
    """

    def __init__(self, extensions: Iterable[Extension] = ()) -> None:
        found: dict[str, Extension] = {}
        for extension in extensions:
            if extension.ext in found:
                raise _bad_config(f"extension {extension.ext} is registered twice")
            found[extension.ext] = extension
        self._by_ext: dict[str, Extension] = found
        self._names = frozenset(e.name for e in found.values())

    def get(self, ext: str) -> Extension | None:
        """Return the extension implementing ``ext`` exactly, or ``None``."""
        return self._by_ext.get(ext)

    def knows_name(self, name: str) -> bool:
        """Whether some version of extension ``name`` is implemented."""
        return name in self._names

    def with_extension(self, extension: Extension) -> ExtensionRegistry:
        """Return a new registry that also holds ``extension``."""
        return ExtensionRegistry([*self._by_ext.values(), extension])

    def __iter__(self) -> Any:
        return iter(self._by_ext.values())

    def __len__(self) -> int:
        return len(self._by_ext)

    @classmethod
    def from_json(cls, value: Any) -> ExtensionRegistry:
        """Build from a list of :meth:`Extension.from_json` descriptions."""
        if not isinstance(value, list):
            raise _bad_config("extensions is not a list")
        return cls(Extension.from_json(v) for v in value)
