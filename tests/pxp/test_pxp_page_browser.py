"""The principal's page in a real headless browser (issue 20, finding 9).

Debian's ``chromium`` and ``chromium-driver`` driven by selenium: the page is loaded from a
real server on loopback, read the way a principal reads it (rendered brief, claims with origin
and ref, escalations and answers, ledger head), updated live while the proxies act, answered
with a real form post, and checked on a phone-sized window. Skips with a printed reason when
the browser is absent; ``PP_REQUIRE_BROWSER=1`` (set by ``.ci/run``) turns the skip into a
failure.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pxp import SqliteRoomStore
from pxp.server import RoomService, ServerConfig, SqliteLinkStore, create_app

from ._mcp_harness import call, free_socket, mcp_client, running

pytestmark = pytest.mark.slow

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
_PAGE = r"http://127\.0\.0\.1:\d+/p/[0-9a-f]{16}/[A-Za-z0-9_-]{43}"

CARD_A = {
    "principal": {"name": "Ann Lee"},
    "goal": "Buy 200 chairs",
    "must_haves": ["Delivery by June"],
    "may_agree_to": ["Price 4500 EUR"],
    "known_facts": ["Budget is 5000 EUR"],
}
CARD_B = {
    "principal": {"name": "Bo \u202eollaB"},
    "goal": "Sell 200 chairs",
    "must_haves": ["Price at least 4000 EUR"],
}
HOSTILE = "<script>window.pwned = 1</script> chairs ship Monday"


def _browser_or_skip() -> Any:
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if shutil.which(p) is None]
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append("the selenium package")
    if missing:
        reason = f"needs {', '.join(missing)} (apt-get install chromium chromium-driver)"
        if os.environ.get("PP_REQUIRE_BROWSER") == "1":
            pytest.fail(f"PP_REQUIRE_BROWSER=1 but the browser test {reason}")
        print(f"skipping: the browser test {reason}")
        pytest.skip(f"the browser test {reason}")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    return webdriver, Service


@contextlib.contextmanager
def _chromium(tmp_path: Path) -> Iterator[Any]:
    webdriver, service_cls = _browser_or_skip()
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={tmp_path / 'chromium-profile'}",
        "--window-size=1200,900",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=service_cls(executable_path=CHROMEDRIVER))
    try:
        driver.set_page_load_timeout(30)
        yield driver
    finally:
        driver.quit()


@contextlib.contextmanager
def _server(tmp_path: Path) -> Iterator[str]:
    db = tmp_path / "rooms.sqlite"
    service = RoomService(SqliteRoomStore(db), SqliteLinkStore(db))
    sock = free_socket()
    cfg = ServerConfig(public_url=f"http://127.0.0.1:{sock.getsockname()[1]}")
    with running(create_app(service, cfg), sock) as base:
        yield base


def _reloading() -> tuple[type[Exception], ...]:
    """What selenium raises when the page reloaded itself (every few seconds) mid-read."""
    from selenium.common.exceptions import (
        NoSuchElementException,
        StaleElementReferenceException,
    )

    return (NoSuchElementException, StaleElementReferenceException)


def _until(check: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            if check():
                return
        except _reloading():
            pass  # the page was reloading: read it again
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def _text(driver: Any, css: str) -> str:
    # The page reloads itself while the negotiation runs: an element found just before a
    # reload is stale by the time it is read, so a read is retried for a few seconds.
    deadline = time.monotonic() + 10
    while True:
        try:
            return str(driver.find_element("css selector", css).text)
        except _reloading():
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def test_the_principal_reads_and_answers_on_a_real_page(tmp_path: Path) -> None:
    with _chromium(tmp_path) as driver, _server(tmp_path) as base:

        async def open_room() -> dict[str, str]:
            async with mcp_client(base) as a, mcp_client(base) as b:
                made = await a.call_tool(
                    "create_room",
                    {"topic": "Office chairs", "your_principal": "Ann Lee", "counterpart": "Bo"},
                )
                room = json.loads(made.content[0].text)  # type: ignore[union-attr]
                page_a = re.findall(_PAGE, made.content[1].text)[0]  # type: ignore[union-attr]
                link_a, link_b = room["your_link"], room["invite_link_for_counterpart"]
                await call(a, "join_room", {"link": link_a, "agent_name": "ann-agent"})
                joined = await b.call_tool("join_room", {"link": link_b, "agent_name": "bo-agent"})
                page_b = re.findall(_PAGE, joined.content[1].text)[0]  # type: ignore[union-attr]
                link_b = json.loads(joined.content[0].text)["your_link"]  # type: ignore[union-attr]
                await call(a, "seal_intent_card", {"link": link_a, "card": CARD_A})
                await call(b, "seal_intent_card", {"link": link_b, "card": CARD_B})
                claims = [
                    {"text": "Budget is 5000 EUR", "origin": "stated", "ref": "known_facts[0]"},
                    {"text": HOSTILE, "origin": "assumed"},
                ]
                await call(
                    a,
                    "send_envelope",
                    {
                        "link": link_a,
                        "message": "4500 EUR, delivered Monday.",
                        "claims": claims,
                        "proposal": {"terms": ["Price 4500 EUR"], "depends_on": ["new2"]},
                        "status": "continue",
                    },
                )
                return {"a": link_a, "b": link_b, "page_a": page_a, "page_b": page_b}

        links = asyncio.run(open_room())

        # A's principal watches the room: the page updates itself when B's proxy escalates.
        driver.get(links["page_a"])
        assert _text(driver, "#status") == "negotiating"
        for section in ("#parties", "#card", "#claims", "#escalations", "#transcript", "#ledger"):
            assert driver.find_elements("css selector", section), section
        claims = _text(driver, "#claims")
        assert "stated from known_facts[0]" in claims
        assert HOSTILE in claims  # shown as text, once escaped, never run
        assert driver.execute_script("return window.pwned === undefined")
        assert "\u202e" not in driver.page_source
        assert "U+202E" in _text(driver, "#parties")
        assert "verifies" in _text(driver, "#ledger")

        question = "Can Bo deliver on Monday, and may I accept 4500 EUR?"

        async def escalate() -> None:
            async with mcp_client(base) as b:
                await call(
                    b,
                    "send_envelope",
                    {
                        "link": links["b"],
                        "message": "I must ask Bo.",
                        "reviews": [
                            {"claim_id": "A1.1", "verdict": "accept"},
                            {"claim_id": "A1.2", "verdict": "challenge", "reason": "unsure"},
                        ],
                        "status": "escalate",
                        "escalation": {"question": question},
                    },
                )

        asyncio.run(escalate())
        _until(lambda: _text(driver, "#status") == "paused", 20, "A's page to update itself")
        assert question in _text(driver, "#escalations")  # the other side's question too
        assert not driver.find_elements("css selector", "#question")  # nothing for A to answer

        # B's principal answers on a phone-sized screen, confirming A's assumption.
        driver.set_window_size(390, 844)
        driver.get(links["page_b"])
        assert question in _text(driver, "#question")
        assert "challenge (unsure)" in _text(driver, "#claims")
        overflow = driver.execute_script(
            "return document.documentElement.scrollWidth - window.innerWidth"
        )
        assert overflow <= 0, f"the page scrolls sideways by {overflow}px on a phone"
        driver.save_screenshot(str(tmp_path / "question-phone.png"))
        answer = "Yes: Monday delivery works and 4500 EUR is fine."
        driver.find_element("css selector", "#answer").send_keys(answer)
        driver.find_element("css selector", "input[name=confirm][value='A1.2']").click()
        driver.find_element("css selector", "#question button[type=submit]").click()
        _until(lambda: bool(driver.find_elements("css selector", "#notice")), 20, "the answer")
        assert "Your answer was sealed." in _text(driver, "#notice")
        assert answer in _text(driver, "#escalations")
        assert "confirming A1.2" in _text(driver, "#escalations")
        assert "confirmed by seat B's principal" in _text(driver, "#claim-A1\\.2")
        assert "said by the principal" in _text(driver, "#claims")  # the answer as a claim
        assert "amendments[0]" in _text(driver, "#card")

        async def agree() -> None:
            async with mcp_client(base) as b:
                done = await call(
                    b, "send_envelope", {"link": links["b"], "message": "Deal.", "status": "agree"}
                )
                assert done["room"]["status"] == "agreed"

        asyncio.run(agree())

        # The brief, rendered by a real Markdown library: headings and lists, no raw markup.
        driver.set_window_size(1200, 900)
        driver.get(links["page_a"])
        brief = driver.find_element("css selector", "#brief")
        headings = [h.text for h in brief.find_elements("css selector", "h1, h2")]
        assert "Decision brief: Office chairs" in headings
        assert "What was agreed" in headings
        assert "On whose authority" in headings
        assert brief.find_elements("css selector", "ol li")  # the agreed terms, as a list
        assert "&lt;script&gt;" not in brief.text
        assert "<script>" in brief.text
        assert "<pre" not in brief.get_attribute("innerHTML")
        assert "refresh" not in driver.page_source  # an ended room no longer reloads
        assert "verifies" in _text(driver, "#ledger")
        driver.save_screenshot(str(tmp_path / "brief.png"))
    assert (tmp_path / "brief.png").stat().st_size > 1000
