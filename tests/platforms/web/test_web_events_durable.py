"""A run's events outlive the process: the web front end's event logs kept in the bot's state store
(a real SQLiteStateStore file), served after a restart by a new front end, hub and store over the same
file through aiohttp's test client — `/events`, `?after=N` and the WebSocket catch-up — with the same
seqs, the newest `maxlen` on disk as in memory, and new events numbered on from the old ones.

Events enter where a run's events do (the front end's hub tap); a real run through the CLI across a
real process's restarts is in tests/e2e/test_events_restart.py.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from adapters.hub import Hub
from adapters.platform import ThreadRef
from adapters.state import RunRecord, SQLiteStateStore
from adapters.web import WebFrontend
from flower_core import Event
from tests.platforms.web.test_web_api import client_for, frames_until
from tests.support.hub_support import hub_of

THREAD = ThreadRef("web", "page", "tkept")
RUN = "r0000042"
MAXLEN = 5


class Life:
    """One process's worth of the web side: a store over `db`, a hub, a front end and a client."""

    def __init__(self, tmp_path: Path) -> None:
        self.store = SQLiteStateStore(tmp_path / "bot-state.db")
        self.front = WebFrontend(event_maxlen=MAXLEN, say=lambda s: None)
        self.front.keep_events_in(self.store)
        self.hub: Hub = hub_of({"web": self.front.surface}, self.store, root=tmp_path / "runs")
        self.front.attach(self.hub)
        self.client: Any = None

    async def open(self) -> Life:
        self.client = await client_for(self.front)
        return self

    async def events(self, after: int = 0) -> dict[str, Any]:
        body: dict[str, Any] = await (await self.client.get(f"/api/runs/{RUN}/events?after={after}")).json()
        return body

    def tap(self, *texts: str) -> None:
        for text in texts:
            self.front._tap(RUN, Event("text", text, payload={"subagent": False}))  # the hub's call for each event

    async def stop(self) -> None:
        """A clean stop, in the bot's order: the front ends, then the store."""
        await self.client.close()
        await self.front.stop()
        self.store.close()


@pytest.fixture
async def life(tmp_path: Path) -> AsyncIterator[Life]:
    first = await Life(tmp_path).open()
    first.store.save_run(RunRecord(RUN, THREAD, "web", "a task", "done", str(tmp_path), str(tmp_path / RUN)))
    first.store.bind_thread(THREAD, RUN)
    yield first


def rows_on_disk(tmp_path: Path) -> list[int]:
    db = sqlite3.connect(tmp_path / "bot-state.db")
    try:
        return [int(r[0]) for r in db.execute("SELECT seq FROM events WHERE run_id=? ORDER BY seq", (RUN,))]
    finally:
        db.close()


def texts(events: list[dict[str, Any]]) -> list[str]:
    return [e["text"] for e in events]


async def test_an_ended_runs_events_come_back_with_their_seqs_and_the_bound_holds(life: Life,
                                                                                  tmp_path: Path) -> None:
    life.tap(*(f"t{i}" for i in range(12)))  # more than the bound: t7..t11 are kept
    before = await life.events()
    assert texts(before["events"]) == [f"t{i}" for i in range(7, 12)] and before["dropped"] is True
    await life.stop()
    assert rows_on_disk(tmp_path) == [e["seq"] for e in before["events"]]  # the bound on disk too

    again = await Life(tmp_path).open()
    try:
        after = await again.events()
        assert after["events"] == before["events"]  # same events, same seqs
        assert (after["dropped"], after["first"], after["last"]) == (True, before["first"], before["last"])
        middle = before["events"][2]["seq"]
        rest = await again.events(after=middle)
        assert rest["events"] == before["events"][3:] and rest["dropped"] is False
        gone = await again.events(after=before["first"] - 2)  # t5 was pushed out by the bound
        assert gone["dropped"] is True and gone["events"] == before["events"]

        ws = await again.client.ws_connect(f"/api/runs/{RUN}/ws?after={middle}")
        frames: list[dict[str, Any]] = []
        first = await frames_until(ws, lambda f: True, frames)
        assert first["events"] == before["events"][3:] and first["status"] == "done" and first["live"] is False
        again.tap("woken-1")  # the run goes on (woken, or its next round): numbered after the old ones
        pushed = await frames_until(ws, lambda f: bool(f["events"]), frames)
        assert [(e["text"], e["seq"]) for e in pushed["events"]] == [("woken-1", before["last"] + 1)]
        await ws.close()
        again.tap("woken-2", "woken-3")
    finally:
        await again.stop()

    third = await Life(tmp_path).open()
    try:
        whole = await third.events()
        last = before["last"]
        assert [(e["text"], e["seq"]) for e in whole["events"]] == [
            ("t10", last - 1), ("t11", last), ("woken-1", last + 1), ("woken-2", last + 2), ("woken-3", last + 3)]
        assert (await third.events(after=last - 3))["dropped"] is True  # t9 went out of the bound across lives
        assert (await third.events(after=last - 2))["dropped"] is False  # t10 on are held
        assert rows_on_disk(tmp_path) == list(range(last - 1, last + 4))
    finally:
        await third.stop()


async def test_what_a_reader_was_served_is_on_disk_and_the_rest_within_the_flush_delay(life: Life,
                                                                                     tmp_path: Path) -> None:
    """No clean stop here: a second connection to the file reads what a new process would."""
    peek = SQLiteStateStore(tmp_path / "bot-state.db")
    try:
        life.front.events.flush_s = 3600.0  # only a reader can have written these
        life.tap("a", "b")
        served = await life.events()
        stored = peek.load_events(RUN)
        assert stored is not None and [seq for seq, _ in stored.rows] == [e["seq"] for e in served["events"]]

        life.front.events.flush_s = 0.05  # nobody reads these: the loop writes them by itself
        life.tap("c")

        async def written() -> list[int]:
            while True:
                found = peek.load_events(RUN)
                if found is not None and len(found.rows) == 3:
                    return [seq for seq, _ in found.rows]
                await asyncio.sleep(0.02)
        assert await asyncio.wait_for(written(), 30) == [served["last"] - 1, served["last"], served["last"] + 1]
    finally:
        peek.close()
        await life.stop()


async def test_a_run_never_logged_starts_from_the_clock_and_is_not_written_until_it_has_events(
        life: Life, tmp_path: Path) -> None:
    """A WebSocket opened on a quiet run creates an empty log; nothing about it is stored, and its first
    event is numbered from the clock (above anything an earlier process could have handed out)."""
    try:
        ws = await life.client.ws_connect(f"/api/runs/{RUN}/ws?after=0")
        hello = await frames_until(ws, lambda f: True, [])
        assert hello["events"] == [] and hello["dropped"] is False
        await ws.close()
        assert life.store.load_events(RUN) is None
        life.tap("first")
        body = await life.events()
        assert body["events"][0]["seq"] > 1_600_000_000_000_000  # microseconds since 1970
    finally:
        await life.stop()
