"""The page on a phone and on a desktop, in real headless Chromium: a run (the real SDK + CLI on the model
double, the single flow with "Ask before shell commands") opens a question card, then an approval card for
a very long shell command. At 390 × 844 and at 1280 × 800 the page is measured, not eyeballed: the message
box and its 📎 / Send / ? controls in one row, the composer at most a fifth of the screen, every button of
the open card above the composer and below the status card, nothing wider than the screen. While the
question waits, the status card's Elapsed counts on the page though the server does not edit the card.
Screenshots of each state are kept in pytest's tmp dir.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from tests.conftest import scenario_of
from tests.platforms.web.test_web_browser import Page, browser
from tests.support.hub_support import ask_call, single_flow_on_the_web

__all__ = ["browser"]

# One word of 300 characters: a command no browser can break at a space.
LONG = "echo " + "/very/long/path/" * 18 + "end.txt" + " && printf '%s\\n' " + "x" * 120
SIZES = [(390, 844), (1280, 800)]
SLACK = 4  # px: "the same row" allows for borders and rounding

GEOMETRY = """(() => {
  const r = (e) => e.getBoundingClientRect();
  const card = [...document.querySelectorAll('li.msg.ask[data-state=open]')].pop();
  const composer = r(document.getElementById('composer')), status = r(document.getElementById('status'));
  return {
    width: window.innerWidth, height: window.innerHeight, scrollWidth: document.documentElement.scrollWidth,
    controls: ['say', 'attach', 'send', 'ask-oracle'].map((id) => { const b = r(document.getElementById(id));
      return {id, top: b.top, bottom: b.bottom, left: b.left, right: b.right}; }),
    composer: {top: composer.top, bottom: composer.bottom, height: composer.height},
    statusBottom: status.bottom,
    card: card && {right: r(card).right, buttons: [...card.querySelectorAll('button')].map((b) => ({
      label: b.textContent, top: r(b).top, bottom: r(b).bottom, right: r(b).right})),
      boxes: [...card.querySelectorAll('pre, code')].map((c) => r(c).right)},
  };
})()"""


# The card's Elapsed ("4s", "2m 05s", "2h 02m", adapters/view/fmt.py) in seconds, read in the page.
ELAPSED = """(() => { const t = document.querySelector('#status .cell[data-name=Elapsed] .value').textContent;
  let s = 0; for (const [, n, u] of t.matchAll(/(\\d+)([hms])/g)) s += Number(n) * {h: 3600, m: 60, s: 1}[u];
  return /\\d/.test(t) ? s : null; })()"""


async def at_size(page: Page, width: int, height: int) -> None:
    await page.send("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1,
                    mobile=width < 720)


async def check_layout(page: Page, width: int, height: int, what: str, shots: Path) -> dict[str, Any]:
    """The page's geometry at this size, with the thread scrolled to its end as a person reading it has it."""
    await at_size(page, width, height)
    await page.js("window.scrollTo(0, document.documentElement.scrollHeight)")
    await page.js("new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")  # laid out
    shot = await page.send("Page.captureScreenshot", format="png")
    (shots / f"layout-{what}-{width}.png").write_bytes(base64.b64decode(shot["data"]))
    g: dict[str, Any] = await page.js(GEOMETRY)
    where = f"{what} at {width}px: {json.dumps(g)}"
    assert g["width"] == width and g["scrollWidth"] <= width, where  # nothing overflows sideways
    say, *buttons = g["controls"]
    for b in buttons:  # the controls in one row with the text box, right of it
        assert abs(b["top"] - say["top"]) <= SLACK and b["left"] >= say["right"] - SLACK, where
        assert b["right"] <= width, where
    assert g["composer"]["height"] <= height / 5, where
    assert g["composer"]["bottom"] <= height + 1, where  # the composer is on the screen
    card = g["card"]
    assert card is not None and card["buttons"], where
    assert card["right"] <= width, where
    assert all(right <= width for right in card["boxes"]), where  # a long command stays in its box
    for b in card["buttons"]:  # every button of the open card visible: under the status card, above the composer
        assert b["bottom"] <= g["composer"]["top"] and b["top"] >= g["statusBottom"], (b, where)
        assert b["right"] <= width, (b, where)
    return g


async def test_the_page_fits_a_phone_and_a_desktop_and_elapsed_counts(
        browser: Page, double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "turn": [
        {"say": "One question first.", "call": [ask_call("Which greeting should the note use, and how long?",
                                                         ["Hello, in one line", "Olá, two lines",
                                                          "안녕하세요, as long as it takes"])]},
        {"say": "Running it.", "call": [{"tool": "Bash", "input": {"command": LONG}}]},
        {"say": "Done."}]}))
    # The card is edited on events only (no timer on the server): Elapsed must count on the page.
    front, hub = await single_flow_on_the_web(md, cli_home, tmp_path)
    try:
        page = browser
        await page.open(front.url)
        await at_size(page, 390, 844)  # a phone from the start: the thread scrolls as it would there
        await page.type("#task", "Write a greeting note, then run the long command.")
        await page.js("document.querySelector('#approve input[value=Bash]').checked = true")
        await page.click("#start")
        await page.until("document.querySelector('li.msg.ask[data-state=open] button[data-verb=ans]')")
        [run] = list(hub.live)
        thread = str(hub.store.get_run(run).thread)  # type: ignore[union-attr]

        for width, height in SIZES:
            await check_layout(page, width, height, "question", tmp_path)

        # Elapsed, while the question waits: the page counts; the server's card stays as it was.
        def status_seq() -> int:
            return max(m["seq"] for m in front.surface.changes(thread) if m["kind"] == "status")
        seq = status_seq()
        first = await page.until(f"{ELAPSED} !== null && {{s: {ELAPSED}}}")
        later = await page.until(f"{ELAPSED} >= {first['s'] + 3} && {{s: {ELAPSED}}}", timeout=20)
        assert later["s"] >= first["s"] + 3
        assert status_seq() == seq  # not one edit from the server: the page counted

        await at_size(page, 390, 844)
        await page.click("li.msg.ask[data-state=open] button[data-verb=ans]")
        await page.until("(() => { const c = document.querySelector('li.msg.ask[data-state=open]');"
                         " return c && c.textContent.includes('wants to run Bash'); })()")
        # As the page scrolled the new card in by itself (no scrolling of ours): Deny… clear of the composer.
        await page.js("new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
        own = await page.js("(() => { const d = [...document.querySelectorAll('li.msg.ask[data-state=open] button')]"
                            ".find((b) => b.textContent.startsWith('Deny')); return [d.getBoundingClientRect().bottom,"
                            " document.getElementById('composer').getBoundingClientRect().top]; })()")
        assert own[0] <= own[1], own
        for width, height in SIZES:
            g = await check_layout(page, width, height, "approval", tmp_path)
            assert any(b["label"].startswith("Deny") for b in g["card"]["buttons"]), g
        assert page.errors == []
    except BaseException:
        await browser.screenshot(tmp_path / "screenshot-layout-failure.png", width=390, mobile=True)
        raise
    finally:
        await hub.close()
        await front.stop()
