"""Key stores: the agent's keys and, kept apart, the principal's keys.

Everything in Parley rests on the principal key staying out of the agent's reach: an agent
that can sign with it can approve its own consent. So the two live in different folders
(``PARLEY_HOME``, default ``~/.parley``; ``PARLEY_PRINCIPAL_HOME``, default
``~/.parley-principal``), every key file is ``0600`` inside ``0700`` folders, and a store
refuses to load a key whose file or folder is readable by others.

:class:`AgentKeyStore` is the agent-side API: it hands out the agent's own :class:`Key` and
refuses to open a principal store. The principal side (``PrincipalKeyStore``) is private to
the command line: it never returns a key, and signs only after a confirmation typed on the
controlling terminal (``parley grant``, ``parley approve``), not on standard input, so a
program piping into the command cannot answer for the human.
"""

from __future__ import annotations

import json
import os
import re
import stat
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ._b64 import b64url_decode, b64url_encode
from ._consent import consent_caveats, consent_for_shown, mint_consent_grant
from ._grants import _parse_all as _parse_caveats
from ._grants import mint_grant
from ._keys import Key, _seed_of, parse_public_key
from .errors import ParleyError

__all__ = [
    "AGENT_HOME_ENV",
    "PRINCIPAL_HOME_ENV",
    "AgentKeyStore",
    "PrincipalKeyStore",
    "agent_home",
    "principal_home",
    "remove_key",
]

AGENT_HOME_ENV = "PARLEY_HOME"
"""Environment variable naming the agent's key folder (default ``~/.parley``)."""

PRINCIPAL_HOME_ENV = "PARLEY_PRINCIPAL_HOME"
"""Environment variable naming the principal's key folder (default ``~/.parley-principal``)."""

_MARKER = "PRINCIPAL"
_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")


def agent_home(environ: Mapping[str, str] | None = None) -> Path:
    """Return the agent's key folder: ``$PARLEY_HOME`` or ``~/.parley``."""
    env = os.environ if environ is None else environ
    value = env.get(AGENT_HOME_ENV)
    return Path(value).expanduser() if value else Path.home() / ".parley"


def principal_home(environ: Mapping[str, str] | None = None) -> Path:
    """Return the principal's key folder: ``$PARLEY_PRINCIPAL_HOME`` or ``~/.parley-principal``."""
    env = os.environ if environ is None else environ
    value = env.get(PRINCIPAL_HOME_ENV)
    return Path(value).expanduser() if value else Path.home() / ".parley-principal"


_HIDING = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp", "Zs", "Mn", "Me"})
# letters and symbols that draw as blank space
_BLANK = frozenset("\u2800\u3164\u115f\u1160\uffa0")
SHOWN_LIMIT = 300
"""**Ours:** characters of one untrusted value shown in an approval prompt."""


def _escape(c: str) -> str:
    return f"\\u{ord(c):04x}" if ord(c) <= 0xFFFF else f"\\U{ord(c):08x}"


def _shown(value: object) -> str:
    """``value`` as text that cannot restyle, rewrite or pad the prompt it is shown on.

    A consent comes from a service, so its summary, service and capability are untrusted:
    control characters (escape sequences, carriage returns, newlines), Unicode line
    separators and format characters (bidirectional overrides) are written as ``\\uXXXX``
    so a service cannot hide or forge a line of the approval prompt. **Ours (review of the
    MCP bridge):** so are space separators other than the plain space (wide spaces that
    push text out of view), combining marks (strike-through), private-use, unassigned and
    surrogate code points and characters that draw as blank; a value over
    :data:`SHOWN_LIMIT` characters is cut, saying how much was left out.
    """
    text = value if isinstance(value, str) else json.dumps(value)
    out = "".join(
        _escape(c) if c != " " and (unicodedata.category(c) in _HIDING or c in _BLANK) else c
        for c in text
    )
    if len(out) > SHOWN_LIMIT:
        out = f"{out[:SHOWN_LIMIT]}… ({len(out) - SHOWN_LIMIT} more characters)"
    return out


def _refuse(message: str, reason: str = "key_store", code: str = "bad_config") -> ParleyError:
    """A key store's refusal: its folder and files are the caller's configuration
    (``bad_config``); a name or value passed in is ``bad_argument``."""
    return ParleyError(code, message, reason=reason)


def _private_dir(path: Path) -> None:
    """Create ``path`` as a ``0700`` folder, or check that the existing one is private.

    An existing folder is never re-moded: ``PARLEY_HOME=/tmp`` must not turn ``/tmp`` into
    a private folder (or a shared folder into a key store); it is refused instead.
    """
    try:
        path.mkdir(mode=0o700, parents=True)
    except FileExistsError:
        if not path.is_dir():
            raise
        _check_private(path, "the key folder")
        return
    os.chmod(path, 0o700)  # whatever the umask was


def _check_private(path: Path, what: str) -> None:
    info = path.stat()
    if info.st_mode & 0o077:
        raise _refuse(
            f"{what} {path} is accessible to other users (mode {stat.S_IMODE(info.st_mode):o}); "
            "fix it with chmod go-rwx",
            "key_store_permissions",
        )
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        raise _refuse(f"{what} {path} belongs to another user", "key_store_permissions")


class _Store:
    """Key files ``<home>/keys/<name>.json`` holding ``{"public", "seed"}``."""

    kind = "agent"

    def __init__(self, home: Path | str) -> None:
        if not isinstance(home, (str, Path)):
            raise _refuse(
                f"a key store folder is a path, got {type(home).__name__}", code="bad_argument"
            )
        self.home = Path(home).expanduser()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(home={str(self.home)!r})"

    def _file(self, name: str) -> Path:
        if not isinstance(name, str) or _NAME.fullmatch(name) is None:
            raise _refuse(
                f"a key name is 1-64 of a-z, 0-9, _ and -, got {name!r}", code="bad_argument"
            )
        return self.home / "keys" / f"{name}.json"

    def _prepare(self) -> None:
        _private_dir(self.home)
        _private_dir(self.home / "keys")

    def _write(self, name: str, key: Key) -> str:
        target = self._file(name)
        if not isinstance(key, Key):
            raise _refuse(
                f"a key store stores a Key, got {type(key).__name__}", code="bad_argument"
            )
        body = json.dumps(
            {"kind": self.kind, "public": key.public, "seed": b64url_encode(_seed_of(key))}
        )
        try:
            self._prepare()
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            if target.exists() or target.is_symlink():
                raise _refuse(f"a {self.kind} key named {name!r} already exists") from None
            raise _refuse(
                f"cannot create the key folder {self.home}: a file is in the way"
            ) from None
        except OSError as exc:
            raise _refuse(f"cannot write {target}: {exc.strerror}") from None
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(body + "\n")
        return key.public

    def _read(self, name: str) -> dict[str, Any]:
        target = self._file(name)
        if target.is_symlink():
            # A link could point a store at another store's key (or at a file an attacker
            # swaps later); key files are always regular files written by the store.
            raise _refuse(f"the key file {target} is a symbolic link", "key_store_permissions")
        if not target.is_file():
            raise _refuse(f"no {self.kind} key named {name!r} in {self.home}", "key_missing")
        _check_private(self.home, "the key folder")
        _check_private(target.parent, "the key folder")
        _check_private(target, "the key file")
        try:
            fd = os.open(target, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
            with os.fdopen(fd, encoding="utf-8") as handle:
                if stat.S_IMODE(os.fstat(handle.fileno()).st_mode) & 0o077:
                    raise _refuse(
                        f"the key file {target} is accessible to other users",
                        "key_store_permissions",
                    )
                data = json.loads(handle.read())
        except ParleyError:
            raise
        except (OSError, ValueError):
            raise _refuse(f"the key file {target} is not readable JSON") from None
        if not isinstance(data, dict) or data.get("kind") != self.kind:
            raise _refuse(f"{target} is not a {self.kind} key file")
        return data

    def _load(self, name: str) -> Key:
        data = self._read(name)
        key = Key.from_seed(b64url_decode(data.get("seed"), what="the stored seed"))
        if key.public != data.get("public"):
            raise _refuse(f"the {self.kind} key file for {name!r} is corrupt")
        return key

    def create(self, name: str, key: Key | None = None) -> str:
        """Create key ``name`` (fresh unless ``key`` is given); return its public key."""
        return self._write(name, Key.generate() if key is None else key)

    def public(self, name: str) -> str:
        """Return the public key of key ``name``."""
        public = self._read(name).get("public")
        if not isinstance(public, str):
            raise _refuse(f"the {self.kind} key file for {name!r} has no public key")
        return public

    def names(self) -> list[str]:
        """Return the names of the stored keys, sorted."""
        folder = self.home / "keys"
        if not folder.is_dir():
            return []
        return sorted(p.stem for p in folder.glob("*.json"))


def remove_key(store: _Store, name: str) -> None:
    """Remove key ``name`` from ``store`` (nothing when it holds none).

    For the command line only (not exported by :mod:`parley`): ``parley keygen`` takes back
    the key it just created when its public half could not be shown (docs/cli.md). A name
    that is no key name is ``bad_argument``, as for every other call of the store.
    """
    store._file(name).unlink(missing_ok=True)


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder.resolve())
    except ValueError:
        return False
    return True


class AgentKeyStore(_Store):
    """The agent's own keys (agent-side API). It never opens a principal's store.

    ``home`` defaults to :func:`agent_home`. A folder that is, or lies inside, the
    principal's folder (``PARLEY_PRINCIPAL_HOME``) or that holds a principal store is
    refused, so no agent-side call can load a principal key.
    """

    kind = "agent"

    def __init__(self, home: Path | str | None = None) -> None:
        super().__init__(agent_home() if home is None else home)
        principal = principal_home()
        if _inside(self.home, principal) or _inside(principal, self.home):
            raise _refuse(
                f"{self.home} overlaps the principal's key folder {principal}; the agent's "
                "keys must live apart from the principal's",
                "principal_key_isolation",
            )
        for folder in (self.home, *self.home.resolve().parents):
            if (folder / _MARKER).exists():
                raise _refuse(
                    f"{folder} holds a principal key store; an agent store cannot open it",
                    "principal_key_isolation",
                )

    def key(self, name: str = "agent") -> Key:
        """Return the agent key ``name`` for signing proofs and delegations."""
        return self._load(name)


Confirm = Callable[[str], bool]
"""Shows a prompt to the human and returns whether they confirmed."""


class PrincipalKeyStore(_Store):
    """The principal's keys (command-line side only; not exported by :mod:`parley`).

    It never returns a :class:`Key`; it signs a grant or a consent only after ``confirm``
    (the command line passes a prompt on the controlling terminal) returns ``True``.
    """

    kind = "principal"

    def __init__(self, home: Path | str | None = None) -> None:
        super().__init__(principal_home() if home is None else home)
        agent = agent_home()
        if _inside(self.home, agent) or _inside(agent, self.home):
            raise _refuse(
                f"{self.home} overlaps the agent's key folder {agent}; the principal's keys "
                "must live apart from the agent's",
                "principal_key_isolation",
            )

    def _prepare(self) -> None:
        super()._prepare()
        marker = self.home / _MARKER
        if not marker.exists():
            marker.write_text(
                "This folder holds a Parley principal key store. Keep it away from agents.\n",
                encoding="utf-8",
            )
            os.chmod(marker, 0o600)

    def mint(
        self,
        sub: str,
        caveats: Sequence[Mapping[str, Any]],
        *,
        confirm: Confirm,
        iat: int,
        name: str = "principal",
    ) -> str:
        """Sign a root grant to ``sub`` after ``confirm`` accepts the shown summary."""
        parse_public_key(sub)  # checked before anything is shown or signed
        _parse_caveats(caveats, "the grant's")
        key = self._load(name)
        shown = json.dumps(list(caveats))
        if not confirm(f"Grant {sub} these caveats as {key.public}:\n  {shown}"):
            raise ParleyError("forbidden", "the principal did not confirm", reason="not_approved")
        return mint_grant(key, sub, caveats, iat=iat)

    def approve(
        self,
        consent: Mapping[str, Any],
        agent: str,
        *,
        confirm: Confirm,
        iat: int,
        name: str = "principal",
        proposal: Mapping[str, Any] | None = None,
    ) -> str:
        """Sign the consent grant for ``consent`` to ``agent`` after ``confirm`` accepts.

        With ``proposal`` (the full proposal the agent received), the consent is rebuilt
        from it and must name the same service, proposal, capability and hash
        (:func:`parley.grants.consent_for_shown`); the prompt then also shows its effects, cost,
        risk and undo window, which the hash binds. Without it, only the consent's own
        summary can be shown, and the hash is taken on trust.
        """
        consent_caveats(consent)  # refuses a malformed consent before anything is shown
        parse_public_key(agent)
        details: list[str] = []
        if proposal is not None:
            consent = consent_for_shown(proposal, service=consent["service"], request=consent)
            details = _proposal_lines(proposal)
        key = self._load(name)
        prompt = "\n".join(
            [
                f"Approve for agent {agent}:",
                f"  service    {_shown(consent['service'])}",
                f"  capability {_shown(consent['capability'])}",
                f"  proposal   {_shown(consent['proposal'])} (hash {_shown(consent['hash'])})",
                f"  summary    {_shown(consent['summary'])}",
                *details,
                f"  valid until {consent['expires']}",
            ]
        )
        if not confirm(prompt):
            raise ParleyError("forbidden", "the principal did not approve", reason="not_approved")
        return mint_consent_grant(key, consent, agent, iat=iat)


def _proposal_lines(proposal: Mapping[str, Any]) -> list[str]:
    """The hashed parts of a proposal as prompt lines (every value escaped)."""
    lines = []
    effects = proposal.get("effects")
    for effect in effects if isinstance(effects, list) else [effects]:
        lines.append(f"  effect     {_shown(effect)}")
    lines.append(f"  cost       {_shown(proposal.get('cost'))}")
    lines.append(f"  risk       {_shown(proposal.get('risk'))}")
    lines.append(f"  undo       {_shown(proposal.get('undo'))}")
    return lines
