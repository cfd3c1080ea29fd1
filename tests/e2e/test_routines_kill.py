"""A routine's firing across SIGKILLs of a real `flower-bot web` process (its whole process group): killed
at each moment of a firing, the next life starts that occurrence if and only if it had not started, and
exactly once.

The bot runs with `FLOWER_ROUTINE_HOLD=<moment>=60` (a test seam of the scheduler: the firing stands still
at that moment and logs "holding"), so the SIGKILL lands exactly there rather than by luck:

    recorded   the occurrence (with its run id) is committed; no thread, no run
    opened     its thread is recorded too; no run
    started    the run's record is saved and its CLI starting; the occurrence not yet marked started

The routine is a one-off "in 2 seconds" made through POST /api/routines, on the real clock; the model
double outlives every life of the bot. A last test kills the bot, moves two hourly routines' next firing
three hours back in its store (downtime, without the wait) and starts it again: one catches up once, the
other (catch_up = false) fires nothing for what it missed.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import time
from collections.abc import AsyncIterator, Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.conftest import scenario_of
from tests.support.campaign.botproc import BotProcess
from tests.support.fleet_support import Api

pytestmark = pytest.mark.slow


def occurrences(root: Path) -> list[tuple[str, str, str]]:
    """(run id, state, thread) of every occurrence, read from the bot's store while no bot has it open."""
    db = sqlite3.connect(f"file:{root / 'bot-state.db'}?mode=ro", uri=True)
    try:
        return [tuple(r) for r in db.execute("SELECT run_id, state, thread FROM occurrences ORDER BY seq")]
    finally:
        db.close()


def run_ids(root: Path) -> list[str]:
    db = sqlite3.connect(f"file:{root / 'bot-state.db'}?mode=ro", uri=True)
    try:
        return [r[0] for r in db.execute("SELECT run_id FROM runs ORDER BY created_at")]
    finally:
        db.close()


@pytest.fixture
async def bot(tmp_path: Path, double_factory: Callable[..., Any], cli_home: Path) -> AsyncIterator[BotProcess]:
    md = await double_factory(scenario_of({"name": "main", "turn": [{"say": "Triaged: nothing new."}]}))
    proc = BotProcess(tmp_path / "root", tmp_path / "bot.log", md.env(cli_home), max_runs=2)
    try:
        yield proc
    finally:
        await proc.stop()


@pytest.mark.parametrize("moment", ["recorded", "opened", "started"])
async def test_a_firing_killed_at_any_moment_starts_exactly_once(bot: BotProcess, tmp_path: Path,
                                                                 moment: str) -> None:
    root = tmp_path / "root"
    bot.env["FLOWER_ROUTINE_HOLD"] = f"{moment}=60"
    await bot.start()
    async with aiohttp.ClientSession() as session:
        api = Api(session, bot.base)
        status, made = await api.post("/api/routines", {"task": "triage the new issues", "schedule": "in 2 seconds",
                                                        "name": "Triage"})
        assert status == 201 and made["next"], made

        async def holding() -> bool:
            return f"holding 60s at '{moment}'" in bot.tail(20)
        await api.until(f"the firing to stand at {moment!r}", holding, timeout=30)
    await bot.kill(signal.SIGKILL)

    [(run_id, state, thread)] = occurrences(root)
    assert state == "pending"  # recorded before anything else happened
    assert bool(thread) == (moment != "recorded")
    assert run_ids(root) == ([run_id] if moment == "started" else [])

    del bot.env["FLOWER_ROUTINE_HOLD"]
    await bot.start()
    async with aiohttp.ClientSession() as session:
        api = Api(session, bot.base)

        async def settled() -> Any:
            routine = await api.get(f"/api/routines/{made['id']}")
            return routine if routine["last"] and routine["last"][0]["state"] != "pending" else None
        routine = await api.until("the occurrence to settle", settled, timeout=60)
        assert [(o["run_id"], o["state"]) for o in routine["last"]] == [(run_id, "started")]
        assert routine["next"] is None  # a one-off: nothing more
        run = await api.ended(run_id)
        assert run["status"] == "done", bot.tail()
        runs = (await api.get("/api/runs"))["runs"]
        assert [r["id"] for r in runs] == [run_id], runs  # exactly one run, with the id recorded before the kill
        if thread:
            assert run["thread"] == thread  # the thread opened before the kill is the one it runs in
    await bot.kill(signal.SIGTERM)
    assert run_ids(root) == [run_id]
    log = (tmp_path / "bot.log").read_text(encoding="utf-8", errors="replace")
    fired = [ln for ln in log.splitlines() if "fired: outcome=started" in ln]
    assert len(fired) == 1 and f"run_id={run_id}" in fired[0], fired


def set_next_at(root: Path, routine_id: str, t: float) -> None:
    """Move a routine's next firing back (between lives, no bot running): the store as a process would find it
    after that much downtime, without waiting for it."""
    db = sqlite3.connect(root / "bot-state.db")
    try:
        [data] = db.execute("SELECT data FROM routines WHERE routine_id=?", (routine_id,)).fetchone()
        routine = json.loads(data)
        routine["next_at"] = t
        db.execute("UPDATE routines SET data=? WHERE routine_id=?", (json.dumps(routine), routine_id))
        db.commit()
    finally:
        db.close()


async def test_occurrences_missed_while_down_catch_up_once_or_not_at_all(bot: BotProcess, tmp_path: Path) -> None:
    root = tmp_path / "root"
    await bot.start()
    async with aiohttp.ClientSession() as session:
        api = Api(session, bot.base)
        made = {}
        for name, catch_up in (("caught", True), ("dropped", False)):
            status, body = await api.post("/api/routines", {"task": f"hourly {name}", "schedule": "every hour",
                                                            "name": name, "catch_up": catch_up})
            assert status == 201, body
            made[name] = body["id"]
    await bot.kill(signal.SIGKILL)
    three_hours_ago = time.time() - 3 * 3600  # three occurrences of each were missed
    for rid in made.values():
        set_next_at(root, rid, three_hours_ago)

    await bot.start()
    async with aiohttp.ClientSession() as session:
        api = Api(session, bot.base)

        async def caught() -> Any:
            routine = await api.get(f"/api/routines/{made['caught']}")
            return routine if routine["last"] and routine["last"][0]["state"] == "started" else None
        routine = await api.until("the catch-up run", caught, timeout=60)
        assert [(o["kind"], o["state"]) for o in routine["last"]] == [("catch_up", "started")]  # once, not three
        await api.ended(routine["last"][0]["run_id"])
        dropped = await api.get(f"/api/routines/{made['dropped']}")
        assert dropped["last"] == []  # catch_up = false: nothing for what was missed
        for r in (routine, dropped):
            assert r["next"] is not None and datetime.fromisoformat(r["next"]).timestamp() > time.time()
        assert [r["id"] for r in (await api.get("/api/runs"))["runs"]] == [routine["last"][0]["run_id"]]
    await bot.kill(signal.SIGTERM)
