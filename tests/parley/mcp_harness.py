"""Shared pieces of the MCP bridge tests: key folders, the bridge as a process, SDK clients.

Private imports: it lays out, on disk, the principal's key folder and the agent's token
folder that ``parley keygen --principal`` and ``parley grant --save`` write and ``parley
mcp`` reads (``parley._keystore.PrincipalKeyStore`` and ``parley._grant_files.save_token``
write that layout). Those commands confirm on a terminal, and the principal key store is
deliberately not public: the principal's key stays with the command line, away from agent
code.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters

import parley
from parley._grant_files import save_token
from parley._keystore import PrincipalKeyStore

from .runtime_harness import AGENT, PRINCIPAL, SHOP_FILE, grant

LIAR_FILE = Path(__file__).resolve().parent / "mcp_liar.py"

Elicit = Callable[[Any, types.ElicitRequestParams], Awaitable[types.ElicitResult]]


def shop_url() -> str:
    """The example shop as a child process of the bridge."""
    return f"stdio:{sys.executable} {SHOP_FILE} stdio: --trust {PRINCIPAL.public}"


def liar_url(lie: str, *, ident: str = "cafe.example", steal: Path | None = None) -> str:
    """A lying service (tests/parley/mcp_liar.py) as a child process of the bridge."""
    extra = f" --steal {steal}" if steal is not None else ""
    return (
        f"stdio:{sys.executable} {LIAR_FILE} --trust {PRINCIPAL.public} --lie {lie} "
        f"--id {ident}{extra}"
    )


class Homes:
    """An agent folder with the agent key and a saved grant, and a principal folder."""

    def __init__(self, root: Path, *, grants: list[str] | None = None) -> None:
        self.agent = root / "agent-home"
        self.principal = root / "principal-home"
        parley.keys.AgentKeyStore(self.agent).create("agent", AGENT)
        old = os.environ.get("PARLEY_HOME")
        os.environ["PARLEY_HOME"] = str(self.agent)  # the principal store checks overlap
        try:
            PrincipalKeyStore(self.principal).create("principal", PRINCIPAL)
        finally:
            if old is None:
                del os.environ["PARLEY_HOME"]
            else:
                os.environ["PARLEY_HOME"] = old
        for token in [grant()] if grants is None else grants:
            save_token(self.agent, "grants", token)

    def env(self) -> dict[str, str]:
        """The environment the bridge runs in."""
        env = dict(os.environ)
        env["PARLEY_HOME"] = str(self.agent)
        env["PARLEY_PRINCIPAL_HOME"] = str(self.principal)
        return env

    def files(self, kind: str) -> list[Path]:
        """The files of one folder of the agent home."""
        folder = self.agent / kind
        return sorted(folder.iterdir()) if folder.is_dir() else []


@contextlib.asynccontextmanager
async def bridge(
    homes: Homes,
    *urls: str,
    elicit: Elicit | None = None,
    mode: str = "auto",
    extra: tuple[str, ...] = (),
) -> AsyncIterator[Client]:
    """``parley mcp URL...`` as a real process, driven by the SDK's own client over stdio."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "parley", "mcp", *extra, *urls],
        env=homes.env(),
    )
    async with Client(params, mode=mode, elicitation_callback=elicit) as client:  # type: ignore[arg-type]
        yield client


async def text(client: Client, tool: str, args: dict[str, Any]) -> str:
    """Call ``tool``; return its text, asserting it is not an error."""
    result = await client.call_tool(tool, args)
    assert len(result.content) == 1
    body = result.content[0].text  # type: ignore[union-attr]
    assert not result.is_error, body
    return str(body)


async def failure(client: Client, tool: str, args: dict[str, Any]) -> str:
    """Call ``tool`` expecting an error result; return its text."""
    result = await client.call_tool(tool, args)
    body = result.content[0].text  # type: ignore[union-attr]
    assert result.is_error, body
    return str(body)


def proposal_ids(lens_text: str) -> list[str]:
    """The proposal ids shown in a PROPOSALS Lens text."""
    return re.findall(r"^\[([^\]]+)\]", lens_text, flags=re.MULTILINE)


def receipt_id(lens_text: str) -> str:
    """The receipt id in a RECEIPT Lens text."""
    found = re.search(r"\(receipt ([^)]+)\)", lens_text)
    assert found is not None, lens_text
    return found.group(1)


class Human:
    """An elicitation callback that answers as told and records what it was shown."""

    def __init__(self, answer: str = "accept", approve: bool = True) -> None:
        self.answer = answer
        self.approve = approve
        self.messages: list[str] = []

    async def __call__(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.messages.append(params.message)
        if self.answer == "accept":
            return types.ElicitResult(action="accept", content={"approve": self.approve})
        return types.ElicitResult(action=self.answer)  # type: ignore[arg-type]


def now() -> int:
    """The clock, as the bridge reads it."""
    return int(time.time())
