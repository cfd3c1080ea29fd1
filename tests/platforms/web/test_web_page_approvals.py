"""The page's "Ask before…" choices, in real Chromium: a run started with "shell commands" ticked asks
before its Bash call, and the card's Allow once runs the command once (the real SDK + CLI on the double)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tests.conftest import scenario_of
from tests.platforms.web.test_web_browser import Page, browser
from tests.support.hub_support import single_flow_on_the_web

__all__ = ["browser"]

EFFECT = "echo ran >> effect.txt; echo out=42"


async def test_ask_before_shell_commands_makes_the_bash_call_wait_for_a_click(
        browser: Page, double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "turn": [
        {"say": "Running.", "call": [{"tool": "Bash", "input": {"command": EFFECT}}]},
        {"say": "Saw: {last_tool_result}"}]}))
    front, hub = await single_flow_on_the_web(md, cli_home, tmp_path)
    try:
        page = browser
        await page.open(front.url)
        await page.type("#task", "Run the effect script.")
        await page.js("document.querySelector('#approve input[value=Bash]').checked = true")
        await page.click("#start")
        title = await page.until("(() => { const c = document.querySelector('li.msg.ask[data-state=open]');"
                                 " return c && c.textContent.includes('wants to run Bash') && c.textContent; })()")
        assert EFFECT in title
        [run] = list(hub.live)
        record = hub.store.get_run(run)
        assert record is not None and not (Path(record.workspace) / "effect.txt").exists()
        await page.click("li.msg.ask[data-state=open] button[data-verb=ans]")  # the first: Allow once
        live = await asyncio.wait_for(hub.query.wait(run), 60)
        assert live is not None and live.outcome is not None and live.outcome.state == "done"
        assert (Path(record.workspace) / "effect.txt").read_text() == "ran\n"
        await page.until("(() => { const c = [...document.querySelectorAll('li.msg.ask')].pop();"
                         " return c && c.textContent.includes('Bash allowed once by'); })()")
    finally:
        await hub.close()
        await front.stop()
