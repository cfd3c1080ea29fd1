"""A parked run holds no open file: its session store closes its connection while the question waits
and opens it again when the answer resumes the session (real SDK + bundled CLI on the model double)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from flower_core.human import HumanChannel
from flower_core.session_store import SQLiteSessionStore
from tests.conftest import scenario_of
from tests.support.parking_support import Events, ask_call, parked
from tests.support.runtime_support import make_runtime, spec

COLOUR = [
    {"say": "Asking.", "call": [ask_call("Which colour?", ["red", "blue"])]},
    {"say": "The human said: {last_tool_result}"},
]


def open_under(folder: Path) -> list[str]:
    """This process's open files inside `folder` (from /proc/self/fd)."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(folder.resolve())):
            found.append(target)
    return found


async def test_a_parked_run_keeps_no_file_open_and_its_answer_still_resumes_the_session(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "turn": COLOUR}))
    events = Events()
    ch = HumanChannel(on_event=events, timeout_s=60)
    rt = make_runtime(tmp_path, md, cli_home, park=0.2)
    task = asyncio.create_task(rt.run(spec(channel=ch), "pick a colour", step_name="ask", on_event=events))
    try:
        await events.until(parked)
        assert (rt.run_dir / "sessions.db").exists()
        assert open_under(rt.run_dir) == []  # the db, its WAL and its shared memory are all closed
        assert ch.answer(ch.pending()[0].id, "blue")
        result = await task
        assert open_under(rt.run_dir)  # the resume opened the store again
    finally:
        rt.close()
    assert result.ok and result.text == "Asking.\n\nThe human said: blue"
    assert open_under(rt.run_dir) == []


def test_a_released_store_opens_again_on_use_and_a_closed_one_does_not(tmp_path: Path) -> None:
    store = SQLiteSessionStore(tmp_path / "s.db")
    store.release()
    assert open_under(tmp_path) == []
    asyncio.run(store.append({"project_key": "p", "session_id": "s1"}, [{"type": "user", "uuid": "u1"}]))
    async def load() -> object:
        return await store.load({"project_key": "p", "session_id": "s1"})

    assert open_under(tmp_path) and asyncio.run(load())
    store.close()

    with pytest.raises(RuntimeError, match="closed"):
        asyncio.run(load())
    assert open_under(tmp_path) == []
