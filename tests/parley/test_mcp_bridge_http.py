"""The MCP bridge over streamable HTTP on loopback, as a real process, with the SDK client.

The shop runs as its own process on ``parley://``; the bridge (``parley mcp --http``) as
another; the SDK client talks to ``http://127.0.0.1:PORT/mcp``.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import socket
import stat
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from .mcp_harness import Homes, Human, failure, proposal_ids, text
from .runtime_harness import PRINCIPAL, SHOP_FILE, need_uvicorn

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def _processes(homes: Homes, *extra: str) -> Iterator[str]:
    """The shop on parley://, the bridge on HTTP; yields the bridge's MCP URL."""
    port = _free_port()
    shop = subprocess.Popen(
        [sys.executable, str(SHOP_FILE), f"parley://127.0.0.1:{port}", "--trust", PRINCIPAL.public]
    )
    bridge: subprocess.Popen[str] | None = None
    try:
        deadline = time.monotonic() + 30
        while True:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert time.monotonic() < deadline, "the shop did not start"
            time.sleep(0.05)
        bridge = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "parley",
                "mcp",
                "--http",
                "127.0.0.1:0",
                *extra,
                f"shop.example=parley://127.0.0.1:{port}",
            ],
            env=homes.env(),
            stdin=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert bridge.stderr is not None
        line = bridge.stderr.readline()
        found = re.match(
            r"parley mcp: (http://127\.0\.0\.1:\d+/mcp) \(the bearer token is in (.+)\)$",
            line.strip(),
        )
        assert found is not None, line
        assert Path(found.group(2)) == homes.agent / "mcp-http.token"
        assert stat.S_IMODE(Path(found.group(2)).stat().st_mode) == 0o600
        yield found.group(1)
    finally:
        for proc in (bridge, shop):
            if proc is not None:
                proc.kill()
                proc.wait()
                if proc.stderr is not None:
                    proc.stderr.close()


def _bearer(homes: Homes) -> dict[str, str]:
    token = (homes.agent / "mcp-http.token").read_text().strip()
    return {"Authorization": f"Bearer {token}"}


@contextlib.asynccontextmanager
async def _client(
    url: str, human: Human | None, headers: dict[str, str], mode: str = "auto"
) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=60)) as http,
        Client(
            streamable_http_client(url, http_client=http),
            mode=mode,  # type: ignore[arg-type]
            elicitation_callback=human,
        ) as client,
    ):
        yield client


GIFT: dict[str, Any] = {
    "service": "shop.example",
    "capability": "shop.gift_card",
    "params": {"to": "ana@example.com", "usd": 50},
}


def test_http_ask_commit_and_consent_by_elicitation(tmp_path: Path) -> None:
    need_uvicorn()
    homes = Homes(tmp_path)
    human = Human("accept")

    async def main(url: str) -> None:
        async with _client(url, human, _bearer(homes)) as client:
            assert "# Example Coffee (shop.example)" in (client.instructions or "")
            menu = await text(
                client, "parley_ask", {"service": "shop.example", "capability": "shop.search"}
            )
            assert "latte" in menu
            offered = await text(
                client,
                "parley_intent",
                {
                    "service": "shop.example",
                    "capability": "shop.order",
                    "params": {"item": "mocha"},
                },
            )
            first = proposal_ids(offered)[0]
            done = await text(
                client, "parley_commit", {"service": "shop.example", "proposal": first}
            )
            assert "order: o1" in done
            (gift,) = proposal_ids(await text(client, "parley_intent", GIFT))
            done = await text(
                client, "parley_commit", {"service": "shop.example", "proposal": gift}
            )
            assert done.startswith("✓ Send a 50 USD gift card"), done
        # a client of the older protocol has no way to be asked over stateless HTTP: it
        # is told the command instead
        async with _client(url, Human("accept"), _bearer(homes), mode="legacy") as old:
            (gift,) = proposal_ids(await text(old, "parley_intent", GIFT))
            out = await failure(old, "parley_commit", {"service": "shop.example", "proposal": gift})
            assert "Ask them to run: parley approve" in out

    with _processes(homes, "--http-consent") as url:
        asyncio.run(main(url))
        # another local user without the token, or with a wrong one, gets nothing
        listing = b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}'
        plain = {"Content-Type": "application/json", "Accept": "application/json"}
        for headers in ({}, {"Authorization": "Bearer " + "x" * 43}, {"Authorization": "x"}):
            refused = httpx2.post(url, headers={**plain, **headers}, content=listing)
            assert refused.status_code == 401, refused.status_code
        # DNS rebinding: a request naming another host is refused before any tool runs
        refused = httpx2.post(
            url, headers={**plain, **_bearer(homes), "Host": "evil.example"}, content=listing
        )
        assert refused.status_code in (400, 403, 421), refused.status_code
    assert len(human.messages) == 1


def test_http_refuses_a_non_loopback_address(tmp_path: Path) -> None:
    homes = Homes(tmp_path)
    run = subprocess.run(
        [sys.executable, "-m", "parley", "mcp", "--http", "0.0.0.0:0", "stdio:true"],
        env=homes.env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert run.returncode == 1
    assert "serves HTTP on loopback only" in run.stderr


def test_http_leaves_consents_to_the_terminal_by_default(tmp_path: Path) -> None:
    need_uvicorn()
    homes = Homes(tmp_path)
    human = Human("accept")

    async def main(url: str) -> None:
        # whoever holds the token could answer an elicitation for the human: over HTTP
        # the bridge does not ask or sign unless started with --http-consent
        async with _client(url, human, _bearer(homes)) as client:
            (gift,) = proposal_ids(await text(client, "parley_intent", GIFT))
            out = await failure(
                client, "parley_commit", {"service": "shop.example", "proposal": gift}
            )
            assert "Ask them to run: parley approve" in out

    with _processes(homes) as url:
        asyncio.run(main(url))
    assert human.messages == []
    assert homes.files("consents") == []
