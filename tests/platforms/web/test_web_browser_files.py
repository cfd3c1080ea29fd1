"""Files on the web page in real headless Chromium: the paperclip attaches a file to the message box,
Send uploads it into the run's inbox/ (the model's inbox read names it), and the file the agent shares
back shows as a link the page downloads. The real SDK + CLI run against the model double."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from adapters.state import MemoryStateStore
from adapters.view import ViewConfig
from adapters.web import WebFrontend
from tests.conftest import scenario_of
from tests.platforms.web.test_web_browser import Page, browser
from tests.support.hub_support import INBOX, ask_call, make_hub

__all__ = ["browser"]


async def test_the_page_attaches_a_file_and_downloads_the_one_the_agent_shares(
        browser: Page, double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "after_end": "Done.", "turn": [
        {"say": "Attach your notes, then say go.", "call": [ask_call("Go?", ["go"])]},
        {"say": "Reading.", "call": [{"tool": INBOX, "input": {}}]},
        {"say": "Inbox: {last_tool_result}",
         "call": [{"tool": "mcp__human__share", "input": {"path": "inbox/hello.txt", "note": "back to you"}}]},
        {"say": "Shared: {last_tool_result}"},
    ]}))
    front = WebFrontend(port=0, db_path=tmp_path / "web-threads.db", say=lambda s: None)
    hub = make_hub(tmp_path, md, cli_home, front.surface, MemoryStateStore(),  # type: ignore[arg-type]
                   view=ViewConfig(status_every_s=0.5, prose_linger_s=0.0))
    front.attach(hub)
    await front.start()
    try:
        page = browser
        await page.open(front.url)
        await page.type("#task", "Read my notes.")
        await page.click("#start")
        await page.until("document.querySelector('li.msg.ask[data-state=open] button[data-verb=ans]')")
        run = next(iter(hub.live))
        upload = tmp_path / "hello.txt"
        upload.write_text("hello from the page\n")

        # The paperclip's file input, filled the way a person's file dialog fills it.
        node = await page.send("Runtime.evaluate", expression="document.getElementById('file-input')")
        await page.send("DOM.setFileInputFiles", files=[str(upload)], objectId=node["result"]["objectId"])
        await page.js("document.getElementById('file-input').dispatchEvent(new Event('change'))")
        chip = await page.until("document.querySelector('#staged li')"
                                " && document.querySelector('#staged li').textContent")
        assert "hello.txt" in chip
        await page.type("#say", "my notes")
        await page.click("#send")
        await page.until("document.getElementById('staged').hidden && document.getElementById('say').value === ''")
        record = hub.query.run(run)
        assert record is not None
        assert (Path(record.workspace) / "inbox" / "hello.txt").read_text() == "hello from the page\n"

        (Path(record.workspace) / "result.txt").write_text("what the run made\n")  # for the summary's Files
        await page.click("li.msg.ask[data-state=open] button[data-verb=ans]")
        link = await page.until("document.querySelector('a.file-link') && document.querySelector('a.file-link').href")
        assert link.endswith(f"/api/runs/{run}/files/inbox/hello.txt")
        got = await page.js("fetch(document.querySelector('a.file-link').href).then(r => r.text())")
        assert got == "hello from the page\n"
        await hub.query.wait(run)
        # The summary names what the run changed; its Files button posts them as download links.
        await page.until("document.querySelector('li.msg.summary button[data-verb=fil]')")
        assert "1 file changed: result.txt" in await page.js("document.querySelector('li.msg.summary').textContent")
        await page.click("li.msg.summary button[data-verb=fil]")
        made = await page.until("[...document.querySelectorAll('a.file-link')].map(a => a.href)"
                                ".find(h => h.endsWith('/files/result.txt'))")
        assert await page.js(f"fetch({made!r}).then(r => r.text())") == "what the run made\n"
        read = md.model_requests("main")[2].last_tool_result
        assert "📎 web attached inbox/hello.txt (20 B, text/plain)" in read and "my notes" in read
        assert not page.errors, page.errors
    finally:
        await hub.close()
        await front.stop()
