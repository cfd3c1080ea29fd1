"""Plan first on the page, in real headless Chromium (the real SDK + CLI on the model double, the single flow).

A run started with "Plan first" ticked shows the agent's plan as a plan card: the plan as text with its line
breaks (markup in it stays text), Approve and go / Approve, ask before edits / Keep planning…, every button on
the screen at a phone's width and a desktop's. "Approve and go" lets the edit through and the run finishes;
"Keep planning…" asks for words, which the agent reads before it presents a new plan. A decided card shows
its outcome.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from adapters.hub import Hub
from adapters.state import MemoryStateStore
from adapters.view import ViewConfig
from adapters.web import WebFrontend
from bots.flows import single_flow
from tests.conftest import scenario_of
from tests.platforms.web.test_web_browser import Page, browser
from tests.platforms.web.test_web_layout import SIZES, at_size, check_layout
from tests.platforms.web.test_web_plan import PLAN2, turns
from tests.support.hub_support import hub_of

__all__ = ["browser"]

# Markup in a plan is the agent's text, never the page's: shown as typed, nothing runs.
PLAN = ("1. Write notes.txt with the word yo.\n2. Say done.\n"
        "Careful: <img src=x onerror=\"document.body.dataset.pwned='yes'\"> <b>not bold</b>")
WORDS = "Add a test first."
OPEN = "li.msg.ask.plan-card[data-state=open]"


def open_plan(needle: str) -> str:
    """A JS predicate: the open plan card, once its plan shows `needle`."""
    return (f"(() => {{ const c = document.querySelector('{OPEN}');"
            f" return c && c.querySelector('.plan-text').textContent.includes({needle!r}) && c; }})()")


@dataclass
class Site:
    front: WebFrontend
    hub: Hub
    md: Any
    notes: Path  # the file the agent writes once its plan is approved


@pytest.fixture
async def web(double_factory: Any, cli_home: Path, tmp_path: Path) -> AsyncIterator[Any]:
    """make(*plans) → a Site: a started front end (port 0) over the single flow, its workspace fixed so the
    scenario can name the file it writes."""
    made: list[Site] = []

    async def make(*plans: str) -> Site:
        home, ws = tmp_path / "home", tmp_path / "ws"
        home.mkdir()
        ws.mkdir()
        md = await double_factory(scenario_of({"name": "main", "turn": turns(ws / "notes.txt", plans=plans)}))
        front = WebFrontend(port=0, say=lambda s: None)
        hub = hub_of({"web": front.surface}, MemoryStateStore(), root=tmp_path / "runs",
                     env={**md.env(cli_home), "HOME": str(home)}, factory=single_flow,
                     view=ViewConfig(status_every_s=0.5, prose_linger_s=0.0), workspaces={"web:page": ws})
        front.attach(hub)
        await front.start()
        made.append(Site(front, hub, md, ws / "notes.txt"))
        return made[-1]
    yield make
    for site in made:
        await site.hub.close()
        await site.front.stop()


async def start_planning(page: Page, front: WebFrontend, *, phone: bool = False) -> None:
    await page.open(front.url)
    if phone:  # a phone from the start: the thread scrolls as it would there
        await at_size(page, 390, 844)
    await page.type("#task", "Write a note, but plan it first.")
    await page.click("#plan-first")
    assert await page.js("document.getElementById('plan-first').checked") is True
    await page.click("#start")


async def test_a_plan_card_fits_a_phone_and_a_desktop_and_approve_and_go_finishes(
        browser: Page, web: Any, tmp_path: Path) -> None:
    site: Site = await web(PLAN)
    front, hub, notes = site.front, site.hub, site.notes
    try:
        page = browser
        await start_planning(page, front, phone=True)
        await page.until(open_plan("Say done."))
        [run] = list(hub.live)
        assert not notes.exists()  # the early edit was refused while planning
        shown = await page.js(f"document.querySelector('{OPEN} .plan-text').innerText")
        assert shown == PLAN  # line breaks kept, markup shown as typed
        assert await page.js(f"document.querySelectorAll('{OPEN} .plan-text *').length") == 0
        assert await page.js("document.body.dataset.pwned === undefined")
        labels = await page.js(f"[...document.querySelectorAll('{OPEN} button')].map((b) => b.textContent)")
        assert labels == ["Approve and go", "Approve, ask before edits", "Keep planning…"]
        for width, height in SIZES:
            g = await check_layout(page, width, height, "plan", tmp_path)
            assert [b["label"] for b in g["card"]["buttons"]] == labels, g

        await at_size(page, 390, 844)
        await page.click(f"{OPEN} button[data-decision=go]")
        live = await hub.query.wait(run)
        assert live is not None and live.outcome is not None and live.outcome.state == "done"
        assert notes.read_text() == "yo"
        title = await page.until("(() => { const t = document.querySelector('li.msg.ask[data-state=settled] .title');"
                                 " return t && t.textContent; })()")
        assert title.startswith("✅ Plan approved by web")
        assert page.errors == []
    except BaseException:
        await browser.screenshot(tmp_path / "screenshot-plan-failure.png", width=390, mobile=True)
        raise


async def test_keep_planning_words_reach_the_model_and_a_new_plan_shows(browser: Page, web: Any,
                                                                         tmp_path: Path) -> None:
    site: Site = await web(PLAN, PLAN2)
    front, hub, notes = site.front, site.hub, site.notes
    try:
        page = browser
        await start_planning(page, front)
        await page.until(open_plan("Say done."))
        [run] = list(hub.live)
        await page.click(f"{OPEN} button[data-decision=revise]")
        await page.type(f"{OPEN} form textarea", WORDS)
        await page.click(f"{OPEN} form button[type=submit]")
        await page.until(open_plan("Add a test first."))
        feedback = site.md.model_requests()[-1].last_tool_result
        assert "keep planning" in feedback and WORDS in feedback
        settled = await page.until("(() => { const c = document.querySelector('li.msg.ask[data-state=settled]');"
                                   " return c && c.textContent; })()")
        assert "asked for more planning" in settled and f"Feedback: {WORDS}" in settled
        assert not notes.exists()

        await page.click(f"{OPEN} button[data-decision=go]")
        live = await hub.query.wait(run)
        assert live is not None and live.outcome is not None and live.outcome.state == "done"
        assert notes.read_text() == "yo"
        assert page.errors == []
    except BaseException:
        await browser.screenshot(tmp_path / "screenshot-plan-failure.png", width=1280)
        raise
