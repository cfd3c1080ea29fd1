"""The web page end to end in real headless Chromium (Debian's package), driven over the DevTools
protocol with aiohttp — no driver, no browser download.

A demo run on the model double's `demo` scenario through the real starter workflow: started from
the page, its question answered by clicking an option, inbox mail sent from the composer and seen
going from queued to delivered, the final summary; then the server restarts under the open page,
which reconnects by itself and catches up without showing anything twice. A screenshot of the
finished run is kept in pytest's tmp dir (and as docs/screenshot-web.png with FLOWER_UPDATE_SCREENSHOT=1).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from adapters.hub import default_factory
from adapters.platform import OutMessage
from adapters.state import MemoryStateStore
from adapters.view import RunOutcome, ViewConfig
from adapters.view import summary as summaries
from adapters.web import WebFrontend
from tests.support.hub_support import hub_of, make_hub

CHROMIUM = Path("/usr/bin/chromium")
ROOT = Path(__file__).resolve().parents[3]
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-extensions", "--disable-default-apps", "--mute-audio", "--window-size=1280,900",
         "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0"]

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium "
                                                               "(apt-get install chromium chromium-driver)")


class Page:
    """One tab, spoken to over the DevTools protocol (flattened session on the browser socket)."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self.session = ""
        self.errors: list[str] = []  # console errors and uncaught exceptions on the page
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._events: dict[str, list[asyncio.Future[dict[str, Any]]]] = {}
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        async for msg in self.ws:
            data = json.loads(msg.data)
            if "id" in data and data["id"] in self._waiting:
                self._waiting.pop(data["id"]).set_result(data)
                continue
            method, params = data.get("method", ""), data.get("params", {})
            if method == "Runtime.exceptionThrown":
                self.errors.append(json.dumps(params.get("exceptionDetails", {}))[:500])
            elif method == "Runtime.consoleAPICalled" and params.get("type") == "error":
                self.errors.append(" ".join(str(a.get("value", a.get("description"))) for a in params["args"]))
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                self.errors.append(f"{params['entry'].get('text', '')} {params['entry'].get('url', '')}".strip())
            for fut in self._events.pop(method, []):
                if not fut.done():
                    fut.set_result(params)

    async def send(self, method: str, timeout: float = 30.0, **params: Any) -> dict[str, Any]:
        n = next(self._ids)
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[n] = fut
        frame: dict[str, Any] = {"id": n, "method": method, "params": params}
        if self.session and not method.startswith("Target."):
            frame["sessionId"] = self.session
        await self.ws.send_json(frame)
        reply = await asyncio.wait_for(fut, timeout)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply.get("result", {})

    def next_event(self, method: str) -> asyncio.Future[dict[str, Any]]:
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._events.setdefault(method, []).append(fut)
        return fut

    async def open(self, url: str) -> None:
        target = await self.send("Target.createTarget", url="about:blank")
        attached = await self.send("Target.attachToTarget", targetId=target["targetId"], flatten=True)
        self.session = attached["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            await self.send(f"{domain}.enable")
        loaded = self.next_event("Page.loadEventFired")
        await self.send("Page.navigate", url=url)
        await asyncio.wait_for(loaded, 30)

    async def js(self, expression: str, timeout: float = 30.0) -> Any:
        result = await self.send("Runtime.evaluate", timeout=timeout, expression=expression, awaitPromise=True,
                                 returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"page script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    async def until(self, predicate: str, timeout: float = 90.0) -> Any:
        """Wait, inside the page, until the JS expression is truthy: re-checked on every DOM change."""
        script = f"""new Promise((resolve, reject) => {{
            const check = () => {{ try {{ return ({predicate}); }} catch (e) {{ return null; }} }};
            const first = check();
            if (first) return resolve(first);
            const obs = new MutationObserver(() => {{
                const got = check();
                if (got) {{ obs.disconnect(); clearTimeout(timer); resolve(got); }}
            }});
            obs.observe(document, {{subtree: true, childList: true, attributes: true, characterData: true}});
            const timer = setTimeout(() => {{
                obs.disconnect(); reject(new Error("timed out: " + {json.dumps(predicate)}));
            }}, {int(timeout * 1000)});
        }})"""
        return await self.js(script, timeout=timeout + 5)

    async def click(self, selector: str) -> None:
        """A real mouse click at the element's centre (after scrolling it into view), exactly once.

        The page re-renders as events arrive (the status card, a card edited in place), so a button can move
        or be replaced between measuring it and pressing: a guard on the window's capture phase lets the click
        through only if it lands on the element, swallows it otherwise, and the click is tried again."""
        sel = json.dumps(selector)
        for _ in range(10):
            box = await self.js(f"""(() => {{ const e = document.querySelector({sel});
                e.scrollIntoView({{block: "center"}}); const r = e.getBoundingClientRect();
                window.__click = "none";
                const guard = (ev) => {{
                    window.removeEventListener("click", guard, true);
                    const now = document.querySelector({sel});
                    if (now && now.contains(ev.target)) {{ window.__click = "hit"; return; }}
                    ev.preventDefault(); ev.stopImmediatePropagation(); window.__click = "missed";
                }};
                window.__clickGuard = guard;
                window.addEventListener("click", guard, true);
                return {{x: r.x + r.width / 2, y: r.y + r.height / 2, disabled: Boolean(e.disabled)}}; }})()""")
            for kind in ("mousePressed", "mouseReleased"):
                await self.send("Input.dispatchMouseEvent", type=kind, x=box["x"], y=box["y"], button="left",
                                clickCount=1)
            landed = await self.js("(() => { window.removeEventListener('click', window.__clickGuard, true);"
                                   " return window.__click; })()")
            if landed == "hit" or box["disabled"]:
                return
        raise AssertionError(f"the click on {selector} never landed on it (the page kept moving it)")

    async def type(self, selector: str, text: str) -> None:
        await self.click(selector)
        await self.send("Input.insertText", text=text)

    async def screenshot(self, *paths: Path, width: int = 1280, mobile: bool = False) -> None:
        """The whole page (up to 4000 px tall) at this width, saved to each path."""
        await self.send("Emulation.setDeviceMetricsOverride", width=width, height=900, deviceScaleFactor=1,
                        mobile=mobile)
        height = int(await self.js("Math.min(4000, document.documentElement.scrollHeight)"))
        await self.send("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1,
                        mobile=mobile)
        await self.js("window.scrollTo(0, 0)")
        shot = await self.send("Page.captureScreenshot", format="png")
        await self.send("Emulation.clearDeviceMetricsOverride")
        for path in paths:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(base64.b64decode(shot["data"]))

    async def close(self) -> None:
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader


@pytest.fixture
async def browser(tmp_path: Path) -> AsyncIterator[Page]:
    profile = tmp_path / "chromium-profile"
    proc = await asyncio.create_subprocess_exec(str(CHROMIUM), *FLAGS, f"--user-data-dir={profile}", "about:blank",
                                                stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
    assert proc.stderr is not None
    stderr = proc.stderr

    async def endpoint() -> str:
        while True:  # Chromium says where its DevTools socket is on stderr, once it listens
            line = (await stderr.readline()).decode(errors="replace")
            if not line:
                raise RuntimeError("chromium exited before opening its DevTools socket")
            if "DevTools listening on " in line:
                return line.split("DevTools listening on ", 1)[1].strip()

    drain: asyncio.Task[bytes] | None = None
    session = aiohttp.ClientSession()
    page: Page | None = None
    try:
        url = await asyncio.wait_for(endpoint(), 30)
        drain = asyncio.create_task(stderr.read())  # keep the pipe from filling up
        page = Page(await session.ws_connect(url, max_msg_size=64 * 1024 * 1024))
        yield page
    finally:
        if page is not None:
            await page.close()
        await session.close()
        if proc.returncode is None:
            proc.terminate()
            try:
                await asyncio.wait_for(proc.wait(), 10)
            except TimeoutError:
                proc.kill()
                await proc.wait()
        if drain is not None:
            drain.cancel()
        shutil.rmtree(profile, ignore_errors=True)


async def test_a_demo_run_in_the_page_from_start_to_summary(browser: Page, double_factory: Any, cli_home: Path,
                                                            tmp_path: Path) -> None:
    md = await double_factory("demo")
    store, db = MemoryStateStore(), tmp_path / "web-threads.db"
    front = WebFrontend(port=0, demo=True, db_path=db, say=lambda s: None)
    hub = make_hub(tmp_path, md, cli_home, front.surface, store, factory=default_factory,  # type: ignore[arg-type]
                   view=ViewConfig(status_every_s=0.5, prose_linger_s=0.2))
    front.attach(hub)
    await front.start()
    later: WebFrontend | None = None
    try:
        page = browser
        await page.open(front.url)
        await page.until("!document.getElementById('demo-banner').hidden")

        await page.type("#task", "Write a greeting note, then count its words.")
        await page.click("#start")
        await page.until("document.querySelector('li.msg.ask[data-state=open] button[data-verb=ans]')")
        run = next(iter(hub.live))
        assert await page.js("location.hash") == f"#run={run}"

        # Mail while the question is open: queued now, delivered when the worker reads its inbox.
        await page.type("#say", "Please keep it to one line.")
        await page.click("#send")
        await page.until("document.querySelector('li.msg.receipt[data-state=queued]')")
        await page.until("document.getElementById('say').value === ''")  # cleared once the server took it

        # Stop shows the subagent warning and the choice to end the run; Cancel changes nothing.
        await page.click("#stop")
        warning = await page.until("document.getElementById('stop-dialog').open && "
                                   "document.querySelector('#stop-dialog .warn').textContent")
        assert "subagent in flight loses its unfinished work" in " ".join(warning.split())
        assert await page.js("document.getElementById('do-end').textContent") == "End the run"
        await page.click("#stop-dialog button[value=cancel]")
        await page.until("!document.getElementById('stop-dialog').open")
        # The oracle box: a side question, answered in the thread without disturbing the run.
        await page.type("#say", "where are we?")
        await page.click("#ask-oracle")
        oracle = await page.until("(() => { const o = document.querySelector('li.msg.oracle');"
                                  " return o && o.textContent.includes('offline demo') && o.textContent; })()")
        assert "where are we?" in oracle
        await page.screenshot(tmp_path / "screenshot-web-asking.png")
        await page.click("li.msg.ask[data-state=open] button[data-verb=ans]")
        title = await page.until("(() => { const t = document.querySelector('li.msg.ask[data-state=settled] .title');"
                                 " return t && t.textContent; })()")
        assert title.startswith("✅ Answered by web")
        await page.until("document.querySelector('li.msg.receipt[data-state=delivered]')")
        summary = await page.until("(() => { const s = document.querySelector('li.msg.summary .title');"
                                   " return s && s.textContent; })()")
        assert summary == "✅ Finished"
        await page.until("document.querySelector('#status[data-state=done]') && "
                         "document.querySelector('#runs .badge.done')")
        assert await page.js("document.querySelectorAll('#stop').length") == 0  # a finished run has no Stop
        assert "Read" in await page.js("document.querySelector('#status .activity summary').textContent")
        # The README's picture is refreshed on demand only, so a test run leaves the tree clean.
        keep = [ROOT / "docs" / "screenshot-web.png"] if os.environ.get("FLOWER_UPDATE_SCREENSHOT") else []
        await page.screenshot(*keep, tmp_path / "screenshot-web.png")

        thread = str(store.get_run(run).thread)  # type: ignore[union-attr]
        shown = await page.js("[...document.querySelectorAll('#thread li.msg')].map(li => li.dataset.id)")
        stored = [m["id"] for m in front.surface.changes(thread) if m["kind"] != "status"]
        assert shown == stored and len(set(shown)) == len(shown)

        # The server restarts under the open page: it reconnects, catches up, shows nothing twice.
        port = front.port
        await front.stop()
        await page.until("document.body.dataset.connected === 'no'")
        later = WebFrontend(port=port, demo=True, db_path=db, say=lambda s: None)
        later.attach(hub_of({"web": later.surface}, store, root=tmp_path / "runs"))
        await later.start()
        await page.until("document.body.dataset.connected === 'yes'")
        note = await later.surface.post(store.get_run(run).thread,  # type: ignore[union-attr]
                                        OutMessage("note:after", "notice", "Back after a restart <script>"))
        await page.until(f"document.querySelector('li.msg[data-id={note}]')")
        shown = await page.js("[...document.querySelectorAll('#thread li.msg')].map(li => li.dataset.id)")
        assert shown == [*stored, note]
        assert await page.js(f"document.querySelector('li.msg[data-id={note}]').textContent") == \
            "Back after a restart <script>"  # agent text stays text

        # Each ending has a card of its own colour (the view's summaries, as a run's end posts them).
        endings = {"failed": (RunOutcome("failed", error="boom", failed_at="work"), False),
                   "budget": (RunOutcome("failed", error="stopped at the cost cap"), True),
                   "stopped": (RunOutcome("stopped", by="web"), False), "ended": (RunOutcome("exploded"), False)}
        for name, (outcome, spent) in endings.items():
            await later.surface.post(store.get_run(run).thread,  # type: ignore[union-attr]
                                     summaries.render(f"summary:{name}", outcome, out_of_budget=spent))
        await page.until("document.querySelectorAll('li.msg.summary').length === 5")
        colours = await page.js("[...document.querySelectorAll('li.msg.summary')].map(li => [li.className, "
                                "getComputedStyle(li).backgroundColor])")
        assert [c for c, _ in colours] == ["msg summary tone-success", "msg summary tone-danger",
                                           "msg summary tone-warning", "msg summary tone-muted",
                                           "msg summary tone-info"], colours
        assert len({bg for _, bg in colours}) == 5, colours  # five endings, five colours
        done, failed = (tuple(int(x) for x in bg[bg.index("(") + 1:-1].split(",")[:3]) for _, bg in colours[:2])
        assert done[1] > done[0] and failed[0] > failed[1], colours  # green for done, red for failed

        # At a phone's width the page still fits: nothing wider than the screen.
        await page.send("Emulation.setDeviceMetricsOverride", width=390, height=844, deviceScaleFactor=2, mobile=True)
        assert await page.js("document.documentElement.scrollWidth") <= 390
        await page.screenshot(tmp_path / "screenshot-web-phone.png", width=390, mobile=True)
        assert page.errors == []
    except BaseException:
        with contextlib.suppress(Exception):  # what the page showed when it went wrong, for the report
            await browser.screenshot(tmp_path / "screenshot-web-failure.png")
        raise
    finally:
        await hub.close()
        await front.stop()
        if later is not None:
            await later.stop()


async def test_model_and_effort_from_the_page(browser: Page, double_factory: Any, cli_home: Path,
                                              tmp_path: Path) -> None:
    """The form's Options choose the model and effort; the status card shows them and its Model row changes
    the model while the question waits; the model's next request carries the new one."""
    from tests.conftest import scenario_of
    from tests.support.hub_support import one_step_flow

    opus, sonnet = "claude-opus-4-6", "claude-sonnet-4-6"
    md = await double_factory(scenario_of({"name": "main", "after_end": "Going with {last_tool_result}.", "turn": [
        {"say": "One question.", "call": [{"tool": "mcp__human__ask",
                                            "input": {"question": "Tabs or spaces?", "options": ["tabs", "spaces"]}}]},
    ]}))
    front = WebFrontend(port=0, say=lambda s: None)
    hub = make_hub(tmp_path, md, cli_home, front.surface, MemoryStateStore(), factory=one_step_flow(),  # type: ignore[arg-type]
                   view=ViewConfig(status_every_s=0.5, prose_linger_s=0.2))
    front.attach(hub)
    await front.start()
    try:
        page = browser
        await page.open(front.url)
        await page.type("#task", "Pick a style.")
        await page.js("document.querySelector('details.options').open = true")
        await page.type("#model", opus)
        await page.js("document.getElementById('effort').value = 'low'")
        await page.click("#start")
        await page.until("document.querySelector('li.msg.ask[data-state=open] button[data-verb=ans]')")
        shown = await page.until("(() => { const v = document.querySelector('#status .model-row .value');"
                                 f" return v && v.textContent.includes('{opus}') && v.textContent; }})()")
        assert shown == f"{opus} · effort low"
        sent = [r.body for r in md.model_requests() if r.body.get("tools")]
        assert [(b["model"], b["output_config"]["effort"]) for b in sent] == [(opus, "low")]

        await page.type("#model-name", sonnet)
        await page.click(".model-form button")
        await page.until("(() => { const v = document.querySelector('#status .model-row .value');"
                         f" return v && v.textContent.includes('{sonnet}'); }})()")
        await page.click("li.msg.ask[data-state=open] button[data-verb=ans]")
        run = next(iter(hub.live))
        await hub.query.wait(run)
        after = [r.body["model"] for r in md.model_requests() if r.body.get("tools")][1:]
        assert after and set(after) == {sonnet}
    finally:
        await hub.close()
        await front.stop()
