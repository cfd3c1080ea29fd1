"""The page's Routines panel in real headless Chromium: a routine added from the panel fires by itself on the
real clock (a one-off "in 2 seconds") and its run opens from the panel's link; Pause, Resume and Delete
from its buttons; a bad schedule is explained under the form and nothing is saved. The hub's runs are
engine doubles (no CLI)."""

from __future__ import annotations

from pathlib import Path

from adapters.hub import Hub, HubSettings
from adapters.state import MemoryStateStore
from adapters.transport import LocalTransport
from adapters.web import WebFrontend
from tests.platforms.web.test_web_browser import Page, browser, pytestmark
from tests.support.engine_double import KitDouble

__all__ = ["browser", "pytestmark"]


async def test_the_routines_panel_adds_fires_pauses_resumes_and_deletes(browser: Page, tmp_path: Path) -> None:
    front = WebFrontend(port=0, demo=True, say=lambda s: None)
    hub = Hub({"web": front.surface}, MemoryStateStore(), HubSettings(root=tmp_path / "runs", timezone="UTC"),
              transport=LocalTransport(KitDouble()))  # type: ignore[arg-type]
    front.attach(hub)
    await hub.open()
    await hub.recover()
    await front.start()
    try:
        page = browser
        await page.open(front.url)
        await page.until("!document.getElementById('demo-banner').hidden")  # the layout has settled
        await page.click("#routines-panel > summary")
        await page.until("document.getElementById('routines-panel').open")
        zone = await page.until("document.getElementById('routine-zone').value")
        assert "/" in zone or zone == "UTC"  # the browser's own zone, prefilled

        await page.type("#routine-task", "say hello")
        await page.type("#routine-schedule", "every 5 seconds")
        await page.click("#add-routine")
        error = await page.until("document.getElementById('new-routine-error').textContent")
        assert "under a minute" in error and hub.query.routines() == []

        await page.js("document.getElementById('routine-schedule').value = ''")
        await page.type("#routine-schedule", "in 2 seconds")
        await page.type("#routine-name", "Greeter")
        await page.click("#add-routine")
        await page.until("document.querySelector('#routines li.routine .routine-name')")
        assert await page.js("document.querySelector('#routines .routine-name').textContent") == "⏰ Greeter"
        link = await page.until("(() => { const a = document.querySelector('#routines .routine-last');"
                                " return a && a.textContent.includes('started') && a.textContent; })()", timeout=30)
        [run] = hub.store.list_runs()
        assert run.run_id in link and run.origin.startswith("⏰ Greeter, ")
        await page.click("#routines .routine-last")
        await page.until(f"location.hash === '#run={run.run_id}'")

        await page.click("#routines button[data-verb=pause]")
        await page.until("document.querySelector('#routines li.routine.paused button[data-verb=resume]')")
        assert hub.query.routines()[0].routine.paused
        assert await page.js("document.querySelector('#routines .routine-next').textContent") == "paused"
        await page.click("#routines button[data-verb=resume]")
        await page.until("document.querySelector('#routines li.routine:not(.paused) button[data-verb=pause]')")
        await page.click("#routines button[data-verb=delete]")
        await page.until("!document.querySelector('#routines li.routine')")
        assert hub.query.routines() == []
        # the one console line is the browser's own note of the refused schedule's 400
        assert [e for e in page.errors if "status of 400" not in e] == [], page.errors
    finally:
        await hub.close(deadline_s=2)
        await front.stop()
