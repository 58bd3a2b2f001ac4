"""Grant and consent tokens kept in the agent's folder (``PARLEY_HOME``).

``parley grant --save`` writes the grant the principal just signed to
``<PARLEY_HOME>/grants/<grant id>.pg``; ``parley approve --save`` writes a consent grant to
``<PARLEY_HOME>/consents/<proposal hash>.pg``; the MCP bridge reads both. A token is bound
to the agent's key (every request carries a proof of possession), so these files hold no
secret, but they decide what the agent may do: they are written ``0600`` inside ``0700``
folders and, like key files, refused when another user can reach them or when they are
symbolic links. The bridge also writes ``<PARLEY_HOME>/pending/<proposal hash>.json``
(the consent and the proposal it was rebuilt from) for ``parley approve`` to read.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any

from ._grants import decode_grant
from ._keystore import _check_private, _private_dir
from .errors import ParleyError

__all__ = ["KINDS", "load_tokens", "save_pending", "save_token"]

KINDS = ("grants", "consents")
"""The two token folders of ``PARLEY_HOME``."""

_SAFE = re.compile(r"[^A-Za-z0-9_-]")
MAX_TOKEN = 64 * 1024
"""**Ours:** the largest token file read (a grant chain is a few kilobytes)."""


def _refuse(message: str, reason: str = "grant_file", code: str = "bad_config") -> ParleyError:
    """A token folder's refusal: the folder and its files are the caller's configuration
    (``bad_config``); a folder kind or file name passed in is ``bad_argument``."""
    return ParleyError(code, message, reason=reason)


def _folder(home: Path, kind: str) -> Path:
    if kind not in KINDS and kind != "pending":
        raise _refuse(
            f"the token folder is one of {', '.join(KINDS)}, got {kind!r}", code="bad_argument"
        )
    return home / kind


def _file_name(name: str) -> str:
    cleaned = _SAFE.sub("_", name)[:100]
    if not cleaned.strip("_"):
        raise _refuse(f"cannot name a token file after {name[:40]!r}", code="bad_argument")
    return cleaned


def _write_private(target: Path, text: str) -> None:
    """Write ``text`` to ``target`` as ``0600`` (replacing a regular file, never a link)."""
    if target.is_symlink():
        raise _refuse(f"{target} is a symbolic link", "key_store_permissions")
    temp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temp, target)
    except OSError as exc:
        temp.unlink(missing_ok=True)
        raise _refuse(f"cannot write {target}: {exc.strerror}") from None


def save_token(home: Path, kind: str, token: str, name: str | None = None) -> Path:
    """Save ``token`` under ``<home>/<kind>/<name>.pg``; return the file.

    ``name`` defaults to the grant id. The token is decoded first (shape only), so a
    file never holds something that is not a grant.
    """
    grant = decode_grant(token)
    folder = _folder(home, kind)
    _private_dir(home)
    _private_dir(folder)
    target = folder / f"{_file_name(grant.id if name is None else name)}.pg"
    _write_private(target, token.strip() + "\n")
    return target


def save_pending(home: Path, consent: dict[str, Any], proposal: dict[str, Any]) -> Path:
    """Save a consent and the proposal it was rebuilt from for ``parley approve``."""
    folder = _folder(home, "pending")
    _private_dir(home)
    _private_dir(folder)
    target = folder / f"{_file_name(str(consent.get('hash')))}.json"
    body = json.dumps({"consent": consent, "proposal": proposal}, ensure_ascii=True, indent=1)
    _write_private(target, body + "\n")
    return target


def _read_private(path: Path) -> str:
    if path.is_symlink():
        raise _refuse(f"the token file {path} is a symbolic link", "key_store_permissions")
    _check_private(path, "the token file")
    try:
        # non-blocking: a FIFO named *.pg must not hang the bridge in open()
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        fd = os.open(path, flags)
        with os.fdopen(fd, encoding="utf-8") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
                raise _refuse(
                    f"the token file {path} is not a plain file of its own (a FIFO, a device "
                    "or a hard link)",
                    "key_store_permissions",
                )
            if stat.S_IMODE(info.st_mode) & 0o077:
                raise _refuse(
                    f"the token file {path} is accessible to other users",
                    "key_store_permissions",
                )
            text = handle.read(MAX_TOKEN + 1)
    except ParleyError:
        raise
    except (OSError, UnicodeDecodeError):
        raise _refuse(f"the token file {path} is not readable text") from None
    if len(text) > MAX_TOKEN:
        raise _refuse(f"the token file {path} is over {MAX_TOKEN} characters")
    return text.strip()


def load_tokens(home: Path, kind: str) -> list[str]:
    """Return the tokens saved under ``<home>/<kind>/*.pg``, sorted by file name.

    A missing folder is no tokens. A folder or file that others can reach, or a link, is
    refused (``key_store_permissions``), as key files are.
    """
    folder = _folder(home, kind)
    if folder.is_symlink():
        raise _refuse(f"the token folder {folder} is a symbolic link", "key_store_permissions")
    if not folder.is_dir():
        return []
    _check_private(home, "the key folder")
    _check_private(folder, "the token folder")
    return [_read_private(path) for path in sorted(folder.glob("*.pg"))]
