"""The web front end's HTTP API and WebSockets: aiohttp's test client against a real Hub.

One test drives a real run (SDK + CLI against the model double) through the API end to end; the
others use a hub whose runs are records in the store (no CLI), which is all the validation,
security and catch-up rules need.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestClient, TestServer

from adapters.hub import Hub
from adapters.hub.ledger import CardLedger
from adapters.memory_surface import MemorySurface
from adapters.platform import Button, OutMessage, ThreadRef
from adapters.state import MemoryStateStore, RunRecord
from adapters.web import EventLog, WebFrontend, WebSurface, json_safe, make_app
from flower_core import Event
from tests.conftest import scenario_of
from tests.support.drive import drive
from tests.support.hub_support import INBOX, ask_call, hub_of, make_hub

WEB_THREAD = ThreadRef("web", "page", "tfixed")


async def client_for(front: WebFrontend) -> TestClient:
    client = TestClient(TestServer(make_app(front), host="127.0.0.1"))
    await client.start_server()
    return client


async def frames_until(ws: aiohttp.ClientWebSocketResponse, pred: Callable[[dict[str, Any]], bool],
                       into: list[dict[str, Any]], timeout: float = 60.0) -> dict[str, Any]:
    """Read JSON frames (kept in `into`) until one satisfies `pred`; returns that one."""
    async def loop() -> dict[str, Any]:
        while True:
            frame = await ws.receive_json()
            into.append(frame)
            if pred(frame):
                return frame
    return await asyncio.wait_for(loop(), timeout)


def seqs(frames: list[dict[str, Any]]) -> list[int]:
    return [e["seq"] for f in frames for e in f.get("events", [])]


@pytest.fixture
async def idle(tmp_path: Path) -> AsyncIterator[tuple[WebFrontend, Hub, TestClient]]:
    """A web front end over a hub whose runs are only records (nothing spawns a CLI)."""
    front = WebFrontend(demo=True, event_maxlen=5, max_body=4096, say=lambda s: None)
    hub = hub_of({"web": front.surface}, MemoryStateStore(), root=tmp_path / "runs")
    front.attach(hub)
    client = await client_for(front)
    yield front, hub, client
    await client.close()
    await front.stop()


def saved_run(hub: Hub, tmp_path: Path, run_id: str = "r0000001", status: str = "done",
              thread: ThreadRef = WEB_THREAD) -> RunRecord:
    run_dir = tmp_path / run_id
    record = hub.store.save_run(RunRecord(run_id, thread, "web", "an old task", status, str(tmp_path), str(run_dir)))
    hub.store.bind_thread(thread, run_id)
    return record


# ---- a real run, through the API only --------------------------------------------------------------
async def test_a_run_through_the_api_start_ask_answer_mail_summary(double_factory: Any, cli_home: Path,
                                                                   tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "after_end": "Finished with {last_tool_result}", "turn": [
        {"say": "Let me <b>ask</b>.", "call": [ask_call("Which colour?", ["red", "blue"])]},
        {"say": "Colour: {last_tool_result}. Checking the inbox.", "call": [{"tool": INBOX, "input": {}}]},
        {"say": "Inbox: {last_tool_result}"},
    ]}))
    front = WebFrontend(say=lambda s: None)
    hub = make_hub(tmp_path, md, cli_home, front.surface, MemoryStateStore())  # type: ignore[arg-type]
    front.attach(hub)
    client = await client_for(front)
    try:
        started = await client.post("/api/runs", json={"task": "pick a colour", "timeout_s": 60, "max_asks": 3})
        assert started.status == 201, await started.text()
        run = (await started.json())["id"]
        assert [r["id"] for r in (await (await client.get("/api/runs")).json())["runs"]] == [run]

        # First stream: up to the question.
        first: list[dict[str, Any]] = []
        ws = await client.ws_connect(f"/api/runs/{run}/ws?after=0")
        await frames_until(ws, lambda f: any(e["kind"] == "ask" and e["payload"].get("state") == "asked"
                                             for e in f["events"]), first)
        await ws.close()
        asks = await (await client.get(f"/api/runs/{run}/asks")).json()
        assert [(a["id"], a["question"], a["options"]) for a in asks] == [("1-q1", "Which colour?", ["red", "blue"])]
        assert isinstance(asks[0]["waited_s"], float)

        # Bad input changes nothing: the question stays open, no mail is queued.
        bad = [await client.post(f"/api/runs/{run}/answer", json={"ask_id": "1-q1", "text": "  "}),
               await client.post(f"/api/runs/{run}/answer", json={"ask_id": "1-q9", "text": "red"}),
               await client.post(f"/api/runs/{run}/answer", data=b"{not json", headers={"Content-Type":
                                                                                        "application/json"}),
               await client.post(f"/api/runs/{run}/send", json={"text": ""}),
               await client.post("/api/runs/rnope/answer", json={"ask_id": "1-q1", "text": "red"})]
        assert [r.status for r in bad] == [400, 404, 400, 400, 404]
        assert all([(await r.json())["error"] for r in bad])
        assert [a["id"] for a in await (await client.get(f"/api/runs/{run}/asks")).json()] == ["1-q1"]

        mail = await client.post(f"/api/runs/{run}/send", json={"text": "also count bytes"})
        assert mail.status == 200 and (await mail.json())["ok"]
        # The seed's ask id ("q1") names the open card too.
        yes = await client.post(f"/api/runs/{run}/answer", json={"ask_id": "q1", "text": "blue"})
        assert yes.status == 200 and (await yes.json())["ask_id"] == "1-q1"
        again = await client.post(f"/api/runs/{run}/answer", json={"ask_id": "1-q1", "text": "red"})
        assert again.status == 409 and "already settled" in (await again.json())["error"]
        assert (await client.post(f"/api/runs/{run}/decline", json={"ask_id": "1-q1"})).status == 409

        # Second stream: catch up from the last seq seen, then follow to the end.
        second: list[dict[str, Any]] = []
        ws = await client.ws_connect(f"/api/runs/{run}/ws?after={seqs(first)[-1]}")
        await frames_until(ws, lambda f: f["status"] == "done" and not f["live"], second)
        await ws.close()
        whole = await (await client.get(f"/api/runs/{run}/events?after=0")).json()
        assert not whole["dropped"] and whole["status"] == "done"
        all_seqs = [e["seq"] for e in whole["events"]]
        assert all_seqs == list(range(all_seqs[0], all_seqs[0] + len(all_seqs)))  # numbered without holes
        assert seqs(first) + seqs(second) == all_seqs  # no duplicate, no gap across the reconnect
        assert all(set(e) == {"seq", "kind", "text", "tool", "payload"} for e in whole["events"])
        kinds = {e["kind"] for e in whole["events"]}
        assert {"step", "ask", "text", "tool_call", "result"} <= kinds
        mails = [e for e in whole["events"] if e["kind"] == "ask" and e["payload"].get("kind") == "mail"]
        assert [m["payload"]["state"] for m in mails] == ["queued", "delivered"]
        tail = await (await client.get(f"/api/runs/{run}/events?after={all_seqs[-3]}")).json()
        assert [e["seq"] for e in tail["events"]] == all_seqs[-2:] and tail["last"] == all_seqs[-1]

        # The page's view of the same run: its thread, rendered, ending with the summary.
        thread = front.surface.changes(hub.store.get_run(run).thread)  # type: ignore[union-attr]
        kinds_in_thread = [m["kind"] for m in thread]
        assert kinds_in_thread[0] == "status" and kinds_in_thread[-1] == "summary"
        card = next(m for m in thread if m["key"] == "ask:1-q1")
        assert card["title"].startswith("✅ Answered by web") and not card["buttons"]
        assert any(m["kind"] == "receipt" and m["text"].startswith("📬 Delivered") for m in thread)
        assert any("Let me <b>ask</b>." in m["text"] for m in thread if m["kind"] == "prose")  # kept as text
        assert (await client.post(f"/api/runs/{run}/send", json={"text": "too late"})).status == 409
        assert (await client.post(f"/api/runs/{run}/end")).status == 409
    finally:
        await hub.close()
        await client.close()
        await front.stop()


# ---- validation: every bad input is a clear JSON error, and nothing changes -------------------------------
async def test_bad_input_is_refused_with_a_reason_and_changes_nothing(idle: Any, tmp_path: Path) -> None:
    _, hub, client = idle
    record = saved_run(hub, tmp_path)
    ledger = CardLedger(record.run_dir)
    ledger.asked("1-q1", "Still open?", ["yes"])
    ledger.asked("1-q2", "Settled?", ["yes"])
    ledger.settled("1-q2", "answered", by="alice", answer="yes")
    run = record.run_id

    async def status(method: str, path: str, **kw: Any) -> tuple[int, str]:
        r = await client.request(method, path, **kw)
        body = await r.json()
        assert body["ok"] is False and isinstance(body["error"], str) and body["error"], body
        return r.status, body["error"]

    cases = [
        ("POST", "/api/runs", {"json": {"task": "   "}}, 400, "empty"),
        ("POST", "/api/runs", {"json": {}}, 400, "missing field 'task'"),
        ("POST", "/api/runs", {"json": {"task": "x", "timeout_s": -1}}, 400, "0 or more"),
        ("POST", "/api/runs", {"json": {"task": "x", "max_asks": 1.5}}, 400, "whole number"),
        ("POST", "/api/runs", {"json": {"task": "x", "budget_usd": True}}, 400, "number"),
        ("POST", "/api/runs", {"json": {"task": "x", "timeout": 5}}, 400, "unknown field 'timeout'"),
        ("POST", "/api/runs", {"json": ["task"]}, 400, "JSON object"),
        ("POST", "/api/runs", {"data": b'{"task": ', "headers": {"Content-Type": "application/json"}}, 400,
         "malformed JSON"),
        ("POST", "/api/runs", {"data": b'{"task": "x"}', "headers": {"Content-Type": "text/plain"}}, 415,
         "application/json"),
        ("POST", "/api/runs", {"json": {"task": "x" * 5000}}, 413, "4096 byte limit"),
        ("GET", "/api/runs/rnope", {}, 404, "no run 'rnope'"),
        ("GET", "/api/runs/rnope/events", {}, 404, "no run"),
        ("GET", "/api/runs/rnope/asks", {}, 404, "no run"),
        ("POST", "/api/runs/rnope/send", {"json": {"text": "hi"}}, 404, "no run"),
        ("POST", "/api/runs/rnope/end", {}, 404, "no run"),
        ("GET", f"/api/runs/{run}/events?after=-1", {}, 400, "sequence number"),
        ("GET", f"/api/runs/{run}/events?after=abc", {}, 400, "sequence number"),
        ("POST", f"/api/runs/{run}/answer", {"json": {"ask_id": "1-q7", "text": "yes"}}, 404, "no question"),
        ("POST", f"/api/runs/{run}/answer", {"json": {"ask_id": "1-q2", "text": "no"}}, 409,
         "already settled (answered by alice)"),
        ("POST", f"/api/runs/{run}/decline", {"json": {"ask_id": "1-q2"}}, 409, "already settled"),
        ("POST", f"/api/runs/{run}/answer", {"json": {"ask_id": "1-q1", "text": ""}}, 400, "'text' is empty"),
        ("POST", f"/api/runs/{run}/answer", {"json": {"ask_id": "1-q1"}}, 400, "missing field 'text'"),
        ("POST", f"/api/runs/{run}/answer", {"json": {"ask_id": 1, "text": "x"}}, 400, "must be a string"),
        ("POST", f"/api/runs/{run}/send", {"json": {"text": "hi"}}, 409, "not running"),
        ("POST", f"/api/runs/{run}/interrupt", {"json": {"text": "stop"}}, 409, "not running"),
        ("POST", f"/api/runs/{run}/oracle", {"json": {"question": " "}}, 400, "empty"),
        ("POST", f"/api/runs/{run}/end", {}, 409, "not running"),
        ("POST", "/api/runs/rnope/wake", {}, 404, "no run"),
        ("POST", f"/api/runs/{run}/wake", {"json": {"text": 5}}, 400, "must be a string"),
        ("POST", f"/api/runs/{run}/wake", {}, 409, "finished; wake it with what to do next"),
        ("POST", "/api/action", {"json": {"action_id": "hello"}}, 400, "not a button of this bot"),
        ("GET", "/api/nothing-here", {}, 404, "Not Found"),
    ]
    for method, path, kw, want, words in cases:
        got, error = await status(method, path, **kw)
        assert (got, words in error) == (want, True), (method, path, got, error)
    assert [r.run_id for r in hub.store.list_runs()] == [run]  # no run was started
    assert [c.card_id for c in CardLedger(record.run_dir).open_cards()] == ["1-q1"]
    assert (await (await client.get(f"/api/runs/{run}/asks")).json()) == [
        {"id": "1-q1", "question": "Still open?", "options": ["yes"], "waited_s": None, "kind": "question"}]


# ---- the event log: sequence numbers, catch-up, the maxlen drop signal -------------------------------------
def test_event_log_numbers_events_and_says_when_some_were_dropped() -> None:
    log = EventLog("r1", maxlen=5, base=1000)
    for i in range(3):
        log.append(Event("text", f"t{i}", payload={"context": i}))
    page = log.after(0)
    assert [e["seq"] for e in page.events] == [1001, 1002, 1003] and not page.dropped and page.last == 1003
    for i in range(3, 12):
        log.append(Event("tool_call", f"t{i}", tool="Read"))
    page = log.after(0)
    assert [e["seq"] for e in page.events] == [1008, 1009, 1010, 1011, 1012] and page.dropped
    assert not log.after(1007).dropped and log.after(1006).dropped
    assert [e["seq"] for e in log.after(1010).events] == [1011, 1012]
    assert log.after(1012).events == [] and log.after(1012).last == 1012
    assert log.after(5).dropped  # a cursor from before this log (a restart in between)
    assert [e["seq"] for e in log.after(1008, limit=2).events] == [1009, 1010]


async def test_events_endpoint_and_stream_signal_dropped_events(idle: Any, tmp_path: Path) -> None:
    front, hub, client = idle  # event_maxlen=5
    run = saved_run(hub, tmp_path, status="running").run_id
    for i in range(3):
        front.events.tap(run, Event("text", f"t{i}"))
    first = await (await client.get(f"/api/runs/{run}/events")).json()
    assert [e["text"] for e in first["events"]] == ["t0", "t1", "t2"] and first["dropped"] is False
    cursor = first["last"]

    ws = await client.ws_connect(f"/api/runs/{run}/ws?after={cursor}")
    got: list[dict[str, Any]] = []
    hello = await frames_until(ws, lambda f: True, got)
    assert hello["events"] == [] and hello["dropped"] is False
    front.events.tap(run, Event("tool_call", "notes.md", tool="Read", payload={"input": {"file_path": "notes.md"}}))
    pushed = await frames_until(ws, lambda f: bool(f["events"]), got)
    assert [(e["kind"], e["tool"], e["seq"]) for e in pushed["events"]] == [("tool_call", "Read", cursor + 1)]
    await ws.close()

    for i in range(10):  # the reader is away while more than maxlen events go by
        front.events.tap(run, Event("text", f"late{i}"))
    late = await (await client.get(f"/api/runs/{run}/events?after={cursor + 1}")).json()
    assert late["dropped"] is True and [e["text"] for e in late["events"]] == [f"late{i}" for i in range(5, 10)]
    ws = await client.ws_connect(f"/api/runs/{run}/ws?after={cursor + 1}")
    frame = await frames_until(ws, lambda f: True, got)
    assert frame["dropped"] is True and len(frame["events"]) == 5
    await ws.close()


def test_payloads_are_made_json_safe_and_bounded() -> None:
    class Thing:
        def __str__(self) -> str:
            return "a thing"

    deep: dict[str, Any] = {}
    node = deep
    for _ in range(20):
        node["d"] = {}
        node = node["d"]
    safe = json_safe({"nan": math.nan, "inf": math.inf, "obj": Thing(), "bytes": b"\x00\xff", 3: (1, 2),
                      "long": "x" * 10_000, "set": {1}, "deep": deep, "many": list(range(1000))})
    text = json.dumps(safe, allow_nan=False, ensure_ascii=False)
    assert safe["nan"] is None and safe["inf"] is None and safe["obj"] == "a thing" and safe["3"] == [1, 2]
    assert len(safe["long"]) == 2000 and safe["set"] == [1] and len(safe["many"]) == 200
    assert "…" in text and len(text) < 20_000


# ---- the page's thread: sequence numbers across reconnects and restarts ------------------------------------
async def test_page_socket_catches_up_after_a_reconnect_with_no_duplicate_and_no_gap(idle: Any,
                                                                                      tmp_path: Path) -> None:
    front, hub, client = idle
    run = saved_run(hub, tmp_path, status="running").run_id
    surface = front.surface
    status_id = await surface.post(WEB_THREAD, OutMessage("status", "status", "Task: x", title="▶️ Running"))
    await surface.post(WEB_THREAD, OutMessage("prose:1", "prose", "first words"))
    card_id = await surface.post(WEB_THREAD, OutMessage("ask:1-q1", "ask", "Which?", title="❓",
                                                        buttons=[Button("a", "fl1:ans:r0000001:1-q1:0")]))
    ws = await client.ws_connect("/ws")
    frames: list[dict[str, Any]] = []
    hello = await frames_until(ws, lambda f: f["type"] == "hello", frames)
    assert hello["demo"] is True
    runs = await frames_until(ws, lambda f: f["type"] == "runs", frames)
    assert [r["id"] for r in runs["runs"]] == [run]
    await ws.send_json({"op": "watch", "run": run, "after": 0, "events_after": 0})
    snap = await frames_until(ws, lambda f: f["type"] == "thread", frames)
    assert snap["reset"] is True and [m["key"] for m in snap["messages"]] == ["status", "prose:1", "ask:1-q1"]
    await surface.update(WEB_THREAD, card_id, OutMessage("ask:1-q1", "ask", "Which?", title="✅ Answered by web"))
    live = await frames_until(ws, lambda f: f["type"] == "thread", frames)
    assert [(m["id"], m["title"]) for m in live["messages"]] == [(card_id, "✅ Answered by web")]
    seen = live["head"]
    await ws.close()

    # While the page is away: an edit, two posts. Back with its cursor, it gets exactly those.
    await surface.update(WEB_THREAD, status_id, OutMessage("status", "status", "Task: x", title="✅ Done"))
    await surface.post(WEB_THREAD, OutMessage("prose:2", "prose", "second words"))
    await surface.post(WEB_THREAD, OutMessage("summary:x", "summary", "all done", title="✅ Finished"))
    ws = await client.ws_connect("/ws")
    await ws.send_json({"op": "watch", "run": run, "after": seen, "events_after": 0})
    back = await frames_until(ws, lambda f: f["type"] == "thread", frames)
    assert back["reset"] is False
    assert [(m["key"], m["title"]) for m in back["messages"]] == [("status", "✅ Done"), ("prose:2", ""),
                                                                  ("summary:x", "✅ Finished")]
    assert [m["seq"] for m in back["messages"]] == [seen + 1, seen + 2, seen + 3]
    # A refusal meant for the person on this page arrives as a notice.
    await surface.notify(WEB_THREAD, "web", "That question is already settled.")
    note = await frames_until(ws, lambda f: f["type"] == "notice", frames)
    assert note == {"type": "notice", "run": run, "text": "That question is already settled."}
    await ws.send_json({"op": "watch", "run": "rnope"})
    assert (await frames_until(ws, lambda f: f["type"] == "error", frames))["error"] == "no run 'rnope' on this page"
    await ws.close()


async def test_the_thread_store_survives_a_restart_and_keeps_counting(tmp_path: Path) -> None:
    path = tmp_path / "web-threads.db"
    before = WebSurface(path)
    mid = await before.post(WEB_THREAD, OutMessage("prose:1", "prose", "kept"))
    await before.update(WEB_THREAD, mid, OutMessage("prose:1", "prose", "kept, edited"))
    head = before.head
    before.close()
    after = WebSurface(path)
    assert [(m["id"], m["text"], m["seq"]) for m in after.changes(WEB_THREAD)] == [(mid, "kept, edited", head)]
    new_id = await after.post(WEB_THREAD, OutMessage("prose:2", "prose", "new"))
    assert new_id != mid and [m["seq"] for m in after.changes(WEB_THREAD, head)] == [head + 1]
    with pytest.raises(Exception, match="not found"):
        await after.update(WEB_THREAD, "w999", OutMessage("prose:3", "prose", "x"))
    after.close()


# ---- security: loopback by default, a token elsewhere, same-origin WebSockets -----------------------------
async def test_off_loopback_a_token_is_required_on_every_request_and_socket(tmp_path: Path) -> None:
    printed: list[str] = []
    front = WebFrontend(host="0.0.0.0", port=0, say=printed.append)
    assert front.token and front.token_generated
    hub = hub_of({"web": front.surface}, MemoryStateStore(), root=tmp_path / "runs")
    front.attach(hub)
    front._announce()
    assert f"?token={front.token}" in printed[0]
    client = await client_for(front)  # served on 127.0.0.1; the token rule follows the configured host
    try:
        assert (await client.get("/api/runs")).status == 401
        assert (await client.get("/api/runs", headers={"Authorization": "Bearer wrong"})).status == 401
        assert (await client.get("/")).status == 401
        assert (await client.get("/api/runs", headers={"Authorization": f"Bearer {front.token}"})).status == 200
        assert (await client.get("/api/runs", headers={"X-Flower-Token": front.token})).status == 200
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await client.ws_connect("/ws")
        assert refused.value.status == 401
        opened = await client.get(f"/?token={front.token}", allow_redirects=False)
        assert opened.status == 302 and opened.headers["Location"] == "/"
        assert "flower_token" in opened.cookies and "HttpOnly" in opened.headers["Set-Cookie"]
        page = await client.get("/")  # the cookie jar now carries the token
        assert page.status == 200 and "<title>flower</title>" in await page.text()
        assert "default-src 'self'" in page.headers["Content-Security-Policy"]
        ws = await client.ws_connect("/ws")
        assert (await ws.receive_json())["type"] == "hello"
        await ws.close()
    finally:
        await client.close()
        await front.stop()


async def test_foreign_origins_and_rebound_host_names_are_refused(idle: Any) -> None:
    _, hub, client = idle
    here = f"http://{client.host}:{client.port}"
    with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
        await client.ws_connect("/ws", headers={"Origin": "http://evil.example"})
    assert refused.value.status == 403
    ws = await client.ws_connect("/ws", headers={"Origin": here})
    assert (await ws.receive_json())["type"] == "hello"
    await ws.close()
    post = await client.post("/api/runs", json={"task": "x"}, headers={"Origin": "http://evil.example"})
    assert post.status == 403 and "cross-origin" in (await post.json())["error"]
    rebound = await client.get("/api/runs", headers={"Host": f"evil.example:{client.port}"})
    assert rebound.status == 403 and "loopback" in (await rebound.json())["error"]
    assert hub.store.list_runs() == []


async def test_the_page_and_its_files_are_served(idle: Any) -> None:
    _, _, client = idle
    page = await client.get("/")
    html = await page.text()
    assert page.status == 200 and 'src="/static/app.js"' in html and "http" not in html.split("<body>")[1]
    js = await (await client.get("/static/app.js")).text()
    assert "innerHTML" not in js and "textContent" in js
    assert (await client.get("/static/style.css")).status == 200
    assert (await client.get("/static/../frontend.py")).status in (403, 404)


# ---- runs started elsewhere show on the page too -------------------------------------------------------
async def test_a_run_started_on_another_surface_is_shown_and_answered_on_the_page(double_factory: Any, cli_home: Path,
                                                                                  tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "after_end": "Heard {last_tool_result}", "turn": [
        {"say": "Asking.", "call": [ask_call("Proceed?", ["yes", "no"])]}]}))
    chat, front = MemorySurface(name="chat"), WebFrontend(say=lambda s: None)
    hub = make_hub(tmp_path, md, cli_home, chat, MemoryStateStore())
    if not hasattr(hub, "mirrors"):
        pytest.skip("this hub cannot show a run in more than one place")
    hub.surfaces["web"] = front.surface
    front.attach(hub)
    client = await client_for(front)
    try:
        run = (await drive(hub).start("elsewhere", ThreadRef("chat", "C1", "t1"), "ana")).run_id
        ws = await client.ws_connect("/ws")
        await ws.send_json({"op": "watch", "run": run, "after": 0, "events_after": 0})
        frames: list[dict[str, Any]] = []
        await frames_until(ws, lambda f: f["type"] == "thread" and any(
            m["key"] == "ask:1-q1" and m["buttons"] for m in f["messages"]), frames)
        listed = (await (await client.get("/api/runs")).json())["runs"]
        assert [(r["id"], r["platform"], r["page_thread"]) for r in listed] == [(run, "chat", f"web:page:{run}")]
        said = await client.post(f"/api/runs/{run}/say", json={"text": "q1: yes"})
        assert said.status == 200, await said.text()
        await frames_until(ws, lambda f: f["type"] == "thread" and any(m["kind"] == "summary" for m in f["messages"]),
                           frames, timeout=60)
        await ws.close()
        home = [p.msg for p in chat.messages.values() if p.msg.key == "ask:1-q1"]
        assert home and home[0].title.startswith("✅ Answered by web")
        assert md.model_requests("main")[-1].last_tool_result == "yes"
    finally:
        await hub.close()
        await client.close()
        await front.stop()


# ---- building the front end from the bot's configuration ------------------------------------------------
def test_web_bot_build_reads_flags_env_and_the_web_table(tmp_path: Path) -> None:
    from bots.config import BotConfig, ConfigError
    from bots.web_bot import build

    def cfg(web: dict[str, Any] | None = None, **kw: Any) -> BotConfig:
        return BotConfig(surfaces=["web"], root=tmp_path, tables={"web": web or {}}, **kw)

    plain = build(cfg(demo=True))
    assert (plain.host, plain.port, plain.token, plain.demo) == ("127.0.0.1", 8470, None, True)
    assert plain.surface.path == tmp_path / "web-threads.db"
    assert build(cfg(env={"ANTHROPIC_API_KEY": "k"})).demo is False
    from_table = build(cfg({"host": "::1", "port": 9100}))
    assert (from_table.host, from_table.port) == ("::1", 9100)
    flags = build(cfg({"host": "::1", "port": 9100}, web_host="127.0.0.2", web_port=9000))
    assert (flags.host, flags.port) == ("127.0.0.2", 9000)
    public = build(cfg(web_host="0.0.0.0"))
    assert public.token and public.token_generated
    chosen = build(cfg(web_host="0.0.0.0", env={"FLOWER_WEB_TOKEN": "a-token-of-my-own-choice"}))
    assert chosen.token == "a-token-of-my-own-choice" and not chosen.token_generated
    for bad, words in (({"port": "abc"}, "port must be a number"), ({"port": 70000}, "between 0 and 65535"),
                       ({"port": True}, "port must be a number"), ({"bind": "x"}, "unknown key [web].bind"),
                       ({"token": "short"}, "at least 16 characters"), ({"host": "a b"}, "web host")):
        with pytest.raises(ConfigError, match=words.replace("[", r"\[").replace("]", r"\]")):
            build(cfg(bad))


async def test_a_taken_port_is_a_clear_refusal_at_start(tmp_path: Path) -> None:
    import socket

    from adapters.platform import StartRefused
    from bots.config import BotConfig
    from bots.web_bot import build

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        front = build(BotConfig(surfaces=["web"], root=tmp_path, demo=True, web_port=port))
        front.attach(hub_of({"web": front.surface}, MemoryStateStore(), root=tmp_path))
        with pytest.raises(StartRefused, match=f"cannot listen on 127.0.0.1:{port}"):
            await front.start()  # flower-bot prints it as one line and exits 2
        await front.stop()
