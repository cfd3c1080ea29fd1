"""Parking at once with a warm pool, through the real SDK + bundled CLI on the model double: the newest waiting
question keeps its CLI (its answer is a live answer), an older one parks as soon as a newer one is shown."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from flower_core.events import Event
from flower_core.human import HumanChannel
from flower_core.runtime import Runtime
from flower_core.runtime.parking import RESUME_NOTE, ParkPolicy
from flower_core.runtime.warm import WarmPool
from tests.conftest import scenario_of
from tests.support.parking_support import Events, ask_call, last_two, parked
from tests.support.runtime_support import make_runtime, spec

COLOUR = [
    {"say": "Asking.", "call": [ask_call("Which colour?", ["red", "blue"])]},
    {"say": "The human said: {last_tool_result}"},
]


def asked(ev: Event) -> bool:
    return ev.kind == "ask" and ev.payload.get("state") == "asked"


class Run:
    def __init__(self, md: Any, cli_home: Path, tmp: Path, pool: WarmPool | None) -> None:
        self.events = Events()
        self.ch = HumanChannel(on_event=self.events, timeout_s=120)
        self.rt: Runtime = make_runtime(tmp, md, cli_home, park=ParkPolicy(0.0, warm=pool))
        self.task = asyncio.create_task(self.rt.run(spec(channel=self.ch), "pick a colour", step_name="ask",
                                                    on_event=self.events))

    def order(self) -> list[str]:
        return [e.text if e.kind == "system" else f"{e.kind}:{e.payload.get('state')}" for e in self.events.events
                if asked(e) or (e.kind == "system" and e.text in ("parked", "unparked"))]


async def test_the_newest_question_keeps_its_cli_and_pushes_the_older_one_to_park(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "turn": COLOUR}))
    pool = WarmPool(1)
    a = Run(md, cli_home, tmp_path / "a", pool)
    b: Run | None = None
    try:
        await a.events.until(asked)
        b = Run(md, cli_home, tmp_path / "b", pool)
        await b.events.until(asked)
        await a.events.until(parked)  # pushed out by b's question: it parks at once
        assert pool.held() == 1
        before = len(md.model_requests())
        assert b.ch.answer(b.ch.pending()[0].id, "red")  # b is the warm one: its own CLI takes the answer
        got_b = await asyncio.wait_for(b.task, 60)
        live = md.model_requests()[before:]
        assert got_b.ok and got_b.text == "Asking.\n\nThe human said: red"
        assert len(live) == 1 and RESUME_NOTE not in str(live[0].body["messages"][-1])
        assert b.events.system("parked") == []
        assert a.ch.answer(a.ch.pending()[0].id, "blue")  # a was parked: it resumes its session
        got_a = await asyncio.wait_for(a.task, 60)
        assert got_a.ok and got_a.text == "Asking.\n\nThe human said: blue"
        resumed = md.model_requests()[-1]
        assert last_two(resumed)[-1]["blocks"][-1] == ("text", "", RESUME_NOTE)
        assert a.order() == ["ask:asked", "parked", "unparked"]  # shown before it parked
        assert pool.held() == 0
    finally:
        for run in (a, b):
            if run is not None:
                run.task.cancel()
                await asyncio.gather(run.task, return_exceptions=True)
                run.rt.close()


async def test_without_a_pool_a_question_parks_as_soon_as_it_is_shown(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "turn": COLOUR}))
    run = Run(md, cli_home, tmp_path, WarmPool(0))
    try:
        await run.events.until(parked, timeout=30)
        assert run.order() == ["ask:asked", "parked"]
        assert run.ch.answer(run.ch.pending()[0].id, "blue")
        got = await asyncio.wait_for(run.task, 60)
        assert got.ok and got.text == "Asking.\n\nThe human said: blue"
    finally:
        run.task.cancel()
        await asyncio.gather(run.task, return_exceptions=True)
        run.rt.close()


def test_the_pool_keeps_the_newest_and_forgets_what_left() -> None:
    pool, told = WarmPool(2), []
    assert pool.hold("a", 1.0, lambda: told.append("a"))
    assert pool.hold("b", 2.0, lambda: told.append("b"))
    assert pool.hold("c", 3.0, lambda: told.append("c")) and told == ["a"]  # the oldest is pushed out
    assert not pool.hold("a", 1.0, lambda: told.append("a"))  # and stays out for that question
    assert not pool.hold("z", 0.5, lambda: None)  # older than every holder: parks instead
    pool.release("a")
    pool.release("b")
    assert pool.hold("d", 4.0, lambda: None) and pool.held() == 2
    assert not WarmPool(0).hold("x", 1.0, lambda: None)


async def test_a_burst_of_questions_starts_its_clis_one_at_a_time_and_every_run_gets_its_answer(
        double_factory: Any, cli_home: Path, tmp_path: Path, monkeypatch: Any) -> None:
    """Four runs at once with FLOWER_CLI_STARTS=1: never two CLIs connecting together (starts and resumes
    queue), every question shown, all but the warm one parked, and each answer reaches its own run."""
    from flower_core.runtime import attempt

    monkeypatch.setenv(attempt.STARTS_ENV, "1")
    connecting, most = 0, 0
    real = attempt.ClaudeSDKClient

    class Counted(real):  # type: ignore[misc, valid-type]
        async def connect(self, *args: Any, **kw: Any) -> None:
            nonlocal connecting, most
            connecting += 1
            most = max(most, connecting)
            try:
                await super().connect(*args, **kw)
            finally:
                connecting -= 1

    monkeypatch.setattr(attempt, "ClaudeSDKClient", Counted)
    md = await double_factory(scenario_of({"name": "main", "turn": COLOUR}))
    pool = WarmPool(1)
    runs = [Run(md, cli_home, tmp_path / f"r{i}", pool) for i in range(4)]
    try:
        for run in runs:
            await run.events.until(asked, timeout=120)
        # every run but the newest question's parks (it may still be closing its CLI: wait for it)
        newest = max(runs, key=lambda r: r.ch.pending()[0].asked_at)
        for run in runs:
            if run is not newest:
                await run.events.until(parked, timeout=120)
        assert newest.events.system("parked") == []
        for i, run in enumerate(runs):
            assert run.ch.answer(run.ch.pending()[0].id, f"colour {i}")
        got = await asyncio.wait_for(asyncio.gather(*(r.task for r in runs)), 180)
        assert [g.text for g in got] == [f"Asking.\n\nThe human said: colour {i}" for i in range(4)]
        assert most == 1
    finally:
        for run in runs:
            run.task.cancel()
            await asyncio.gather(run.task, return_exceptions=True)
            run.rt.close()
