"""The errand: one purchase across PXP, Handoff, Parley and VXP, audited link by link.

In process (``ppbind.demo.demo_errand``) every attack the issue names, and the ones we added,
must be caught by the audit and named by its link. Across processes (``examples/errand.py``)
every party runs in its own process on loopback; the report it writes is read in a real
headless browser.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import ppbind
import ppbind.demo

TOP = Path(__file__).resolve().parents[1]

# attack -> (code, link, reason): the audit names each broken link
ATTACKS = {
    "change-price-after-decision": ("binding_terms_changed", "decision", None),
    "commit-another-proposal": ("binding_wrong_proposal", "decision->parley", "commit"),
    "forge-approval": ("binding_forged_approval", "parley->vxp", None),
    "decision-other-key": ("binding_wrong_key", "decision", None),
    "grant-other-nonce": ("binding_grant_mismatch", "decision->parley", "nonce"),
    "decision-rejected": ("binding_not_approved", "decision", None),
    "reuse-decision": ("binding_wrong_proposal", "decision->parley", "commit"),
    "act-other-item": ("binding_act_item", "vxp->act", "item"),
    "release-other-grant": ("binding_release_mismatch", "parley->vxp", None),
    "act-other-decision": ("binding_act_mismatch", "vxp->act", "decision"),
    "act-longer-log": ("binding_log_truncated", "vxp->act", "statements"),
    "act-other-key": ("binding_act_wrong_key", "act", "key"),
}


@pytest.fixture(scope="module")
def errand() -> dict[str, Any]:
    return ppbind.demo.demo_errand()


def test_the_errand_in_process_is_audited_whole(errand: dict[str, Any]) -> None:
    report = ppbind.verify_errand(errand)
    assert report["item"] == "ben-shop/bike-2291"
    assert (report["amount"], report["currency"]) == (44000, "EUR")
    assert report["decision"]["terms_rev"] == 1
    assert report["vxp"] == {
        "company": "https://bikes.ben.example/vxp",
        "terms_digest": report["vxp"]["terms_digest"],
        "final_state": "succeeded",
        "logged": True,
        "statements": 6,
    }
    assert report["act"] == "done"
    assert ppbind.raw_key(errand["principal"]).hex() == report["principal"]
    # byte-reproducible: the vectors depend on it
    assert json.dumps(ppbind.demo.demo_errand()) == json.dumps(errand)


def test_every_attack_is_listed_here() -> None:
    assert set(ATTACKS) | {"act-open"} == set(ppbind.demo.ATTACKS)


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_each_broken_link_is_named(attack: str) -> None:
    code, link, reason = ATTACKS[attack]
    bundle = ppbind.demo.demo_errand(attack)
    with pytest.raises(ppbind.BindingError) as caught:
        ppbind.verify_errand(bundle)
    assert (caught.value.code, caught.value.link, caught.value.reason) == (code, link, reason)


def test_a_dropped_log_entry_is_caught(errand: dict[str, Any]) -> None:
    bundle = json.loads(json.dumps(errand))
    bundle["vxp"]["package"]["statements"].pop(4)
    bundle["vxp"]["package"]["log"]["entries"].pop(4)
    with pytest.raises(ppbind.BindingError) as caught:
        ppbind.verify_errand(bundle)
    assert (caught.value.code, caught.value.link) == ("vxp_invalid", "vxp")


def test_reordered_records_fold_to_the_same_report(errand: dict[str, Any]) -> None:
    bundle = json.loads(json.dumps(errand))
    bundle["handoff"]["records"].reverse()
    assert ppbind.verify_errand(bundle) == ppbind.verify_errand(errand)
    ledger = bundle["pxp"]["ledger"]
    ledger[2], ledger[3] = ledger[3], ledger[2]
    with pytest.raises(ppbind.BindingError) as caught:
        ppbind.verify_errand(bundle)
    assert caught.value.code == "pxp_invalid"


def test_key_confusion_across_protocols_is_caught(errand: dict[str, Any]) -> None:
    """The audit is told another person (whose key the side also holds) is the principal."""
    bundle = json.loads(json.dumps(errand))
    bundle["principal"] = ppbind.PersonKey.from_label("bindings mallory").public_jwk
    with pytest.raises(ppbind.BindingError) as caught:
        ppbind.verify_errand(bundle)
    assert (caught.value.code, caught.value.reason) == ("parley_invalid", "untrusted_issuer")
    bundle["principal"] = ppbind.PersonKey.from_label("bindings ana").public_jwk
    assert ppbind.verify_errand(bundle)["act"] == "done"  # her JWK is her Parley key


def test_an_open_act_is_reported_and_can_be_required() -> None:
    bundle = ppbind.demo.demo_errand("act-open")
    assert ppbind.verify_errand(bundle)["act"] == "open"
    bundle["policy"]["require_act_done"] = True
    with pytest.raises(ppbind.BindingError) as caught:
        ppbind.verify_errand(bundle)
    assert (caught.value.code, caught.value.link) == ("binding_act_open", "act")


def test_a_late_answer_gets_a_fresh_offer_never_a_lapsed_commit() -> None:
    bundle = ppbind.demo.demo_errand(late_answer=True)
    report = ppbind.verify_errand(bundle)
    assert report["decision"]["terms_rev"] == 2
    records = {r["id"]: r for r in bundle["handoff"]["records"]}
    assert records["d-late"]["outcome"] == "approve"  # her late answer is kept
    consent = records["d-fresh"]["terms"]["x_binding"]["parley"]["consent"]
    assert bundle["parley"]["receipt"]["at"] < consent["expires"]
    assert report["parley"]["proposal"] == consent["proposal"]


def test_errand_verify_command(tmp_path: Path, errand: dict[str, Any]) -> None:
    (tmp_path / "errand.json").write_text(json.dumps(errand), encoding="utf-8")
    ok = subprocess.run(
        [sys.executable, "-m", "ppbind", "verify", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.startswith("OK")
    broken = ppbind.demo.demo_errand("forge-approval")
    (tmp_path / "errand.json").write_text(json.dumps(broken), encoding="utf-8")
    bad = subprocess.run(
        [sys.executable, "-m", "ppbind", "verify", str(tmp_path), "--json"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert bad.returncode == 1
    assert json.loads(bad.stdout)["error"]["code"] == "binding_forged_approval"
    (tmp_path / "errand.json").write_text("{", encoding="utf-8")
    unusable = subprocess.run(
        [sys.executable, "-m", "ppbind", "verify", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert unusable.returncode == 2
    assert unusable.stderr.splitlines()[-1].startswith("error: binding_input_invalid: ")
    missing = subprocess.run(
        [sys.executable, "-m", "ppbind", "verify", str(tmp_path / "nowhere")],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert missing.returncode == 2
    assert missing.stderr.splitlines() == [
        line for line in missing.stderr.splitlines() if line.startswith("error: ")
    ]
    assert missing.stderr.startswith("error: binding_input_invalid: cannot read ")


# ---------------------------------------------------------------------- across processes

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


@pytest.fixture(scope="module")
def across(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """`make demo`'s program, every party its own process, writing into a fresh folder."""
    out = tmp_path_factory.mktemp("errand") / "build"
    done = subprocess.run(
        [sys.executable, str(TOP / "examples" / "errand.py"), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
        cwd=out.parent,
    )
    return done, out


@pytest.mark.slow
def test_the_errand_across_processes(
    across: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    done, out = across
    assert done.returncode == 0, done.stderr[-3000:] + done.stdout[-3000:]
    for step in (
        "1. Negotiate (PXP)",
        "3. Ask Ana",
        "4. Commit",
        "5. Prove (VXP)",
        "6. What only Ana can do",
        "Every link holds",
    ):
        assert step in done.stdout
    bundle = json.loads((out / "errand.json").read_text(encoding="utf-8"))
    report = ppbind.verify_errand(bundle)
    assert report["act"] == "done"
    assert report["vxp"]["logged"] is True
    # Ana's key never left her side: the agent's records hold her public key only
    seed = (out / "desk" / "ana.seed").read_text(encoding="utf-8")
    assert seed not in done.stdout
    assert seed not in json.dumps(bundle)
    assert "- [x] Collect the bike" in (out / "STATE.md").read_text(encoding="utf-8")
    # the written records are what the audit reads: break one link and the command says so
    bundle["parley"]["receipt"]["cost"]["amount"] = 1
    (out / "broken").mkdir()
    (out / "broken" / "errand.json").write_text(json.dumps(bundle), encoding="utf-8")
    bad = subprocess.run(
        [sys.executable, "-m", "ppbind", "verify", str(out / "broken")],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert bad.returncode == 1
    assert "binding_receipt_mismatch" in bad.stdout


def _browser_or_skip() -> Any:
    import os
    import shutil

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


@pytest.mark.slow
def test_the_report_reads_right_in_a_real_browser(
    across: tuple[subprocess.CompletedProcess[str], Path], tmp_path: Path
) -> None:
    import functools
    import http.server
    import threading

    webdriver, service_cls = _browser_or_skip()
    done, out = across
    assert done.returncode == 0, done.stderr[-3000:]
    # a second report, of a broken errand whose unsigned receipt carries markup
    bundle = json.loads((out / "errand.json").read_text(encoding="utf-8"))
    bundle["parley"]["receipt"]["summary"] = "<script>window.pwned = 1</script><b>free</b>"
    with pytest.raises(ppbind.BindingError) as caught:
        ppbind.verify_errand(bundle)
    (out / "broken.html").write_text(ppbind.report_html(bundle, caught.value), encoding="utf-8")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(out))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--window-size=1200,900",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=service_cls(executable_path=CHROMEDRIVER))
    try:
        driver.set_page_load_timeout(30)
        driver.get(f"{base}/report.html")
        from selenium.webdriver.common.by import By

        assert "verified" in driver.title
        titles = [h.text for h in driver.find_elements(By.TAG_NAME, "h2")]
        assert titles[0].startswith("1. The agreement")
        assert titles[-1].startswith("6. The audit")
        text = driver.find_element(By.TAG_NAME, "body").text
        for shown in (
            "price: 440.00 EUR",
            "answered 'approve'",
            "for 440.00 EUR",
            "6 signed statements",
            "Ana settled it 'done'",
        ):
            assert shown in text, shown
        assert "every link holds" in titles[-1]
        driver.set_window_size(390, 844)  # a phone: nothing is cut off sideways
        width = driver.execute_script("return document.documentElement.scrollWidth")
        assert width <= 390
        driver.get(f"{base}/broken.html")
        assert "BROKEN" in driver.title
        assert driver.execute_script("return window.pwned === undefined")
        body = driver.find_element(By.TAG_NAME, "body").text
        assert "<script>window.pwned = 1</script><b>free</b>" in body  # shown, not run
        assert "binding_receipt_mismatch" in body
        assert driver.find_elements(By.TAG_NAME, "b") == []
    finally:
        driver.quit()
        server.shutdown()
        server.server_close()


def test_a_dearer_offer_under_the_decided_cap_is_refused_by_parley_itself() -> None:
    """The consent grant's spend cap is the decided price: Parley refuses a dearer commit."""
    import hashlib

    import parley
    import vxp

    d = ppbind.demo.DEMO
    ana = ppbind.PersonKey.from_label("bindings ana")
    agent = ppbind.PersonKey.from_label("bindings agent")
    clock = [1_796_205_600.0]
    shop = ppbind.demo.BikeShop(
        service_id=d["service"],
        issuer=d["issuer"],
        base_url="https://bikes.ben.example",
        trusted=[ana.public],
        bikes=[ppbind.demo.Bike(d["item"], d["amount"], d["currency"], "City bike")],
        keys={r: vxp.demo_key(f"test {r}") for r in ("company", "log", "witness")},
        clock=lambda: clock[0],
        rand=lambda n: hashlib.sha256(str(clock[0]).encode()).digest()[:n],
    )
    errand_grant = parley.mint_grant(
        ana.parley,
        agent.public,
        [{"svc": [d["service"]]}, {"verbs": ["INTENT"]}, {"can": ["shop.buy"]}],
        iat=1_796_205_600,
    )
    terms = ppbind.agreed_terms(d["item"], d["amount"], d["currency"], d["service"])
    buyer = parley.Agent(agent.parley, [errand_grant], service=d["service"], clock=lambda: clock[0])
    shop.bikes[d["item"]] = ppbind.demo.Bike(
        d["item"], d["amount"] + 1000, d["currency"], "City bike"
    )
    reply = shop.service.handle(buyer.intent("shop.buy", ppbind.intent_params(terms)))[-1]
    assert "proposals" in reply, reply
    dearer = reply["proposals"][0]
    consent = parley.consent_request(dearer, service=d["service"], principal=ana.public)
    capped = parley.mint_grant(
        ana.parley,
        agent.public,
        [
            *parley.grants.consent_caveats(consent),
            {"spend": {"max": d["amount"], "currency": "EUR"}},
        ],
        iat=1_796_205_601,
    )
    committer = parley.Agent(agent.parley, service=d["service"], clock=lambda: clock[0])
    refused = shop.service.handle(committer.commit(dearer, grants=[capped]))[-1]
    assert refused["kind"] == "ERROR"
    assert refused["code"] == "consent_required"
    assert d["item"] not in shop.sold
    # the control: the same grant with the dearer cap passes Parley's check and reaches the
    # shop, which refuses it only because no signed approval came with it
    wide = parley.mint_grant(
        ana.parley,
        agent.public,
        [
            *parley.grants.consent_caveats(consent),
            {"spend": {"max": d["amount"] + 1000, "currency": "EUR"}},
        ],
        iat=1_796_205_602,
    )
    control = shop.service.handle(committer.commit(dearer, grants=[wide]))[-1]
    assert control["code"] == "forbidden", control


@pytest.mark.slow
def test_the_demo_reports_a_broken_link_and_fails(
    across: tuple[subprocess.CompletedProcess[str], Path], tmp_path: Path
) -> None:
    """The example's last step on a broken errand: exit status 1, and the report says why."""
    import importlib.util

    done, out = across
    assert done.returncode == 0, done.stderr[-3000:]
    spec = importlib.util.spec_from_file_location("errand_example", TOP / "examples" / "errand.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    bundle = json.loads((out / "errand.json").read_text(encoding="utf-8"))
    bundle["pxp"]["brief"]["agreement"]["terms"][1] = "price: 400.00 EUR"
    assert module.audit(tmp_path, bundle) is False
    assert "BROKEN" in (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "binding_agreement_mismatch" in (tmp_path / "report.md").read_text(encoding="utf-8")


def test_every_lapsed_offer_ends_sealed_expired() -> None:
    import hashlib
    from datetime import UTC, datetime

    import parley
    import vxp

    d = ppbind.demo.DEMO
    ana = ppbind.PersonKey.from_label("bindings ana")
    agent = ppbind.PersonKey.from_label("bindings agent")
    clock = [1_796_205_600.0]
    keys = {r: vxp.demo_key(f"test {r}") for r in ("company", "log", "witness")}
    shop = ppbind.demo.BikeShop(
        service_id=d["service"],
        issuer=d["issuer"],
        base_url="https://bikes.ben.example",
        trusted=[ana.public],
        bikes=[ppbind.demo.Bike(d["item"], d["amount"], d["currency"], "City bike")],
        keys=keys,
        clock=lambda: clock[0],
        rand=lambda n: hashlib.sha256(str(clock[0]).encode()).digest()[:n],
    )
    grant = parley.mint_grant(
        ana.parley, agent.public, [{"svc": [d["service"]]}, {"verbs": ["INTENT"]}], iat=1
    )
    buyer = parley.Agent(agent.parley, [grant], service=d["service"], clock=lambda: clock[0])
    terms = ppbind.agreed_terms(d["item"], d["amount"], d["currency"], d["service"])
    first = shop.service.handle(buyer.intent("shop.buy", ppbind.intent_params(terms)))[-1]
    op = first["proposals"][0]["data"]["x_binding"]["vxp"]["request_id"]
    assert op not in shop.packages
    clock[0] = first["proposals"][0]["expires"] + 1.0
    shop.service.handle(buyer.intent("shop.buy", ppbind.intent_params(terms)))
    _, package = shop.packages[op]
    verdict = vxp.verify(
        package, shop.metadata, shop.jwks, now=datetime.fromtimestamp(clock[0] + 5, UTC)
    )
    assert verdict.valid, verdict.failure
    assert verdict.final_state == "expired"
    assert shop.sweep(int(clock[0]) + 1000) != [op]  # sealed once


def test_the_proxies_are_pluggable() -> None:
    """Any pxp.Proxy may negotiate; the shop's proxy here is a class, not a script."""
    d = ppbind.demo.DEMO
    terms = ppbind.agreed_terms(d["item"], d["amount"], d["currency"], d["service"], "by Friday")

    class Shop:
        def next_envelope(self, view: Any) -> dict[str, Any]:
            assert view.seat == "B"
            return {
                "message": "440 EUR if you collect by Friday.",
                "proposal": {"terms": terms, "depends_on": []},
                "status": "continue",
            }

    proxies = {**ppbind.demo.errand_proxies(terms), "B": Shop()}
    bundle = ppbind.demo.demo_errand(proxies=proxies)
    report = ppbind.verify_errand(bundle)
    assert bundle["pxp"]["brief"]["agreement"]["terms"][-1] == "by Friday"
    assert (
        report["pxp"]["proposal_hash"]
        != ppbind.verify_errand(ppbind.demo.demo_errand())["pxp"]["proposal_hash"]
    )


# ---------------------------------------------------------------------- review findings


def _act_amended(bundle: dict[str, Any], change: Any) -> dict[str, Any]:
    """The agent amends the act after Ana settled it done (a requester record, unsigned)."""
    import handoff

    h = bundle["handoff"]
    roles = handoff.Roles.from_json(h["roles"])
    registry = handoff.Registry(roles=roles, extensions=handoff.EXTENSIONS)
    registry.add_many(h["records"])
    act = handoff.ItemId("acts", h["act"]["project"], h["act"]["key"])
    terms = json.loads(json.dumps(handoff.evidence.terms_at(registry, act, 1), default=dict))
    change(bundle, terms)
    amended = handoff.make_amended(
        registry, act, terms, by="ana-agent", ts="2026-12-02T10:30:00Z", record_id="a2"
    )
    h["records"].append(amended)
    return bundle


def test_an_act_changed_after_ana_confirmed_it_is_not_done(errand: dict[str, Any]) -> None:
    """Review finding 1: her old `done` never confirms terms she did not see."""

    def text(bundle: dict[str, Any], terms: dict[str, Any]) -> None:
        terms["text"] = "Pay Ben another 300 EUR in cash at collection"

    def replay(bundle: dict[str, Any], terms: dict[str, Any]) -> None:
        bundle["parley"]["receipt"]["id"] = "r_second_receipt"
        terms["x_binding"]["parley"]["receipt"] = "r_second_receipt"
        terms["x_binding"]["vxp"]["statements"] = 1
        first = bundle["vxp"]["package"]["statements"][0]
        terms["x_binding"]["vxp"]["last"] = ppbind.statement_digest(first)

    for change in (text, replay):
        bundle = _act_amended(json.loads(json.dumps(errand)), change)
        with pytest.raises(ppbind.BindingError) as caught:
            ppbind.verify_errand(bundle)
        assert (caught.value.code, caught.value.link) == ("binding_act_changed", "act")


def test_deep_nesting_is_a_binding_error_and_unusable_for_the_command(
    errand: dict[str, Any], tmp_path: Path
) -> None:
    """Review finding 2: no RecursionError from the audit or `errand verify`."""
    bundle = json.loads(json.dumps(errand))
    deep: list[Any] = []
    for _ in range(900):
        deep = [deep]
    bundle["handoff"]["records"][0]["terms"]["x_deep"] = deep
    with pytest.raises(ppbind.BindingError) as caught:
        ppbind.verify_errand(bundle)
    assert (caught.value.code, caught.value.reason) == ("binding_input_invalid", "handoff")
    (tmp_path / "errand.json").write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "ppbind", "verify", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith("error: binding_input_invalid: "), done.stderr


def test_the_command_refuses_duplicate_members_and_non_json_numbers(
    errand: dict[str, Any], tmp_path: Path
) -> None:
    """Review finding 4: one reading of the file, I-JSON."""
    text = json.dumps(errand).replace(
        '"limit": {"amount": 45000', '"limit": {"amount": 1, "amount": 45000', 1
    )
    assert '"amount": 1, "amount": 45000' in text
    for bad in (text, json.dumps(errand).replace("44000", "NaN", 1)):
        (tmp_path / "errand.json").write_text(bad, encoding="utf-8")
        done = subprocess.run(
            [sys.executable, "-m", "ppbind", "verify", str(tmp_path)],
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        assert done.returncode == 2, done.stdout + done.stderr
        assert done.stderr.startswith("error: binding_input_invalid: "), done.stderr


def test_a_proof_signed_by_keys_the_agent_was_not_configured_with_is_refused() -> None:
    """Review finding 3: the issuer's keys are pinned in the mandate, not taken from the proof."""
    import vxp

    honest = ppbind.demo.demo_errand()
    impostor = ppbind.demo.demo_errand(shop_keys="impostor")
    assert impostor["vxp"]["package"]["company"] == honest["vxp"]["package"]["company"]
    assert impostor["vxp"]["jwks"] != honest["vxp"]["jwks"]
    impostor["mandate"]["issuer_keys"] = honest["mandate"]["issuer_keys"]
    with pytest.raises(ppbind.BindingError) as caught:
        ppbind.verify_errand(impostor)
    assert (caught.value.code, caught.value.reason) == ("binding_wrong_company", "issuer_keys")
    pinned = sorted(vxp.key_thumbprint(k) for k in honest["vxp"]["jwks"]["keys"])
    assert honest["mandate"]["issuer_keys"] == pinned


def test_errand_verify_takes_the_mandate_from_the_principal(
    errand: dict[str, Any], tmp_path: Path
) -> None:
    """`--mandate FILE`: the audited file's own mandate copy is not what decides."""
    bundle = json.loads(json.dumps(errand))
    mandate = bundle["mandate"]
    bundle["mandate"] = {**mandate, "limit": {"amount": 10**9, "currency": "EUR"}}
    bundle["mandate"]["issuer_keys"] = sorted(
        __import__("vxp").key_thumbprint(k) for k in bundle["vxp"]["jwks"]["keys"]
    )
    (tmp_path / "errand.json").write_text(json.dumps(bundle), encoding="utf-8")
    strict = {**mandate, "limit": {"amount": 40000, "currency": "EUR"}}
    (tmp_path / "mandate.json").write_text(json.dumps(strict), encoding="utf-8")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "ppbind",
            "verify",
            str(tmp_path),
            "--mandate",
            str(tmp_path / "mandate.json"),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "binding_over_limit" in done.stdout
