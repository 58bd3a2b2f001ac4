"""A fitted reply that cuts through an emoji, sent over a real transport.

Fitting counts UTF-16 units as the reference does, so a cut can split a surrogate pair and
leave a lone surrogate at the end of the kept text (and at the start of the parked rest).
On the wire the frame carries it as the ``\\uXXXX`` escape ES2019 ``JSON.stringify``
writes (the reference's own wire form); an agent accepts it in a reply, renders the Lens
the reference renders, and ``Client.complete`` rebuilds the original text. A request
holding one is still refused.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import parley

from .runtime_harness import AGENT

TEXT = "a" + "😀" * 400  # one unit, then pairs: a cut at an even unit splits a pair


def _u16_len(text: str) -> int:
    """The length of ``text`` in UTF-16 code units (a JavaScript string's length)."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _service() -> parley.Service:
    svc = parley.Service("poem.example", name="Poems")

    @svc.ask("poem.read", summary="A poem")
    def read(params: dict[str, Any], ctx: parley.Context) -> Any:
        return {"text": TEXT}

    return svc


def test_encode_frame_writes_a_lone_surrogate_as_json_stringify_does() -> None:
    frame = {"parley": 1, "id": "s1", "re": "a1", "kind": "ANSWER", "data": {"t": "x\ud83d"}}
    line = parley.wire.encode_frame(frame)
    assert line == b'{"parley":1,"id":"s1","re":"a1","kind":"ANSWER","data":{"t":"x\\ud83d"}}\n'
    assert parley.wire.parse_frame(line)["data"]["t"] == "x\ud83d"
    # a well-formed pair held as two code points becomes the character again
    paired = parley.wire.encode_frame({**frame, "data": {"t": "\ud83d\ude00"}})
    assert json.loads(paired)["data"]["t"] == "😀"


@pytest.mark.parametrize(
    "line",
    [
        b'{"parley":1,"id":"a1","verb":"ASK","capability":"x","params":{"q":"\\ud83d"}}',
        b'{"parley":1,"id":"\\ud83d","re":"a1","kind":"ANSWER","data":{}}',
        b'{"parley":1,"id":"s1","re":"\\udc00","kind":"ANSWER","data":{}}',
    ],
)
def test_requests_and_envelopes_with_a_lone_surrogate_are_still_refused(line: bytes) -> None:
    with pytest.raises(parley.ParleyError) as caught:
        parley.wire.parse_frame(line)
    assert caught.value.reason == "not_json"


def test_a_cut_through_an_emoji_crosses_tcp_and_is_rebuilt() -> None:
    svc = _service()

    async def main() -> None:
        server = await parley.net.serve_tcp(svc, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        try:
            agent = parley.Agent(AGENT)
            async with await parley.connect(f"parley://127.0.0.1:{port}", agent) as client:
                await client.hello()
                got = await client.ask("poem.read", budget=60)
                assert got.kind == "ANSWER", got.reply
                assert got.reply is not None
                text = got.reply["data"]["text"]
                assert text.endswith("\ud83d…")  # the cut split a pair, as the reference's
                # the Lens the agent renders is the one fitting renders in process
                fitted, _parked = parley.lens.fit(
                    {"kind": "ANSWER", "data": {"text": TEXT}}, 60, handles=lambda: "h_x"
                )
                assert fitted["data"]["text"] == text
                assert _u16_len(text) == _u16_len(fitted["data"]["text"])
                whole = await client.complete(got.reply, budget=60)
                assert whole["data"]["text"] == TEXT
        finally:
            server.close()
            await server.wait_closed()

    asyncio.run(main())


@pytest.mark.slow
@pytest.mark.parametrize("as_json", [False, True])
def test_parley_call_prints_a_cut_through_an_emoji(tmp_path: Path, as_json: bool) -> None:
    liar = Path(__file__).resolve().parent / "mcp_liar.py"
    url = f"stdio:{sys.executable} {liar} --lie none"
    env = {**os.environ, "PARLEY_HOME": str(tmp_path / "agent")}
    argv = [sys.executable, "-m", "parley", "call", url, "ask", "shop.poem", "--budget", "60"]
    run = subprocess.run(
        [*argv, *(["--json"] if as_json else [])],
        env=env,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert run.returncode == 0, run.stderr.decode("utf-8", "replace")
    out = run.stdout.decode("utf-8")  # strict: valid UTF-8
    if as_json:
        # lossless: the escape JSON.stringify writes
        frame = json.loads(out.splitlines()[-1])
        assert frame["data"]["text"].endswith("\ud83d…")
    else:
        assert "\ufffd…" in out  # as parley lens writes it
