"""Words that arrive after the last step ended: the person was told "Interrupted", so the run does not end
unheard. Real SDK + CLI on the model double; the engine's sink speaks at the one moment that matters
(the last step has just finished, the workflow has not returned yet)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from adapters.state import MemoryStateStore
from adapters.transport.applier import Applier
from adapters.transport.base import RunEnd
from adapters.transport.engine import RunEngine
from adapters.transport.intents import BoundLog, Intent, Op, StoreIntentLog
from flower_core import Event, Step, Workflow
from tests.conftest import scenario_of
from tests.support.runtime_support import make_runtime, spec


class LateSink:
    """A RunSink that interrupts the run as its last step is reported done."""

    def __init__(self) -> None:
        self.engine: RunEngine | None = None
        self.events: list[Event] = []
        self.end: RunEnd | None = None
        self.ended_now = asyncio.Event()
        self.replies: list[bool] = []

    def on_event(self, ev: Event) -> None:
        self.events.append(ev)

    def step_done(self, name: str) -> None:
        assert self.engine is not None
        if not self.replies:  # what applying an interrupt intent does, at once: no step is running now
            self.replies.append(self.engine.runtime.interrupt("and add a README"))

    async def ended(self, end: RunEnd) -> None:
        self.end = end
        self.ended_now.set()

    def handed_over(self, holder: str, previous: str) -> None:
        return None


async def test_words_after_the_last_step_are_heard_before_the_run_ends(double_factory: Any, cli_home: Path,
                                                                       tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "after_end": "Heard: {last_user_text}",
                                           "turn": [{"say": "Built it."}]}))
    runtime = make_runtime(tmp_path, md, cli_home)
    sink = LateSink()
    engine = RunEngine("r-late", Workflow([Step("build", spec(), "build it")]), runtime, sink)
    sink.engine = engine
    try:
        engine.start()
        await asyncio.wait_for(sink.ended_now.wait(), 120)
    finally:
        runtime.close()
    assert sink.end is not None and sink.end.state == "done", sink.end
    assert sink.replies == [False]  # no step was running: the words waited for the end
    last = md.model_requests()[-1]
    assert last.last_user_text.startswith("and add a README")
    assert "Built it." in json.dumps(last.body)  # the same session went on: the first turn is in its history
    assert sink.end.text.startswith("Heard: and add a README")


class Sleeper:
    """A runtime between steps (no step will run again): interrupts wait in its unread words."""

    def __init__(self) -> None:
        self.unread: str | None = None

    def interrupt(self, text: str = "") -> bool:
        self.unread = text if self.unread is None else f"{self.unread}\n{text}"
        return False

    def take_unread(self) -> str | None:
        words, self.unread = self.unread, None
        return words


async def test_words_no_turn_heard_are_settled_moot_and_said_in_the_thread() -> None:
    """Words that land after the engine's last look (a run ending that very moment) are not booked as
    heard: the intent is settled moot and an `unheard` event tells the thread."""
    store, runtime, events = MemoryStateStore(), Sleeper(), []
    log = BoundLog(StoreIntentLog(store), "r1")
    applier = Applier("r1", channel=None, runtime=runtime, log_=log, ask_oracle=_no_oracle,
                      cancel=lambda _why: False, emit=events.append)
    await applier.replay()
    late, heard = Intent(Op.INTERRUPT, "and add a README", user="ana"), Intent(Op.INTERRUPT, "use tabs", user="bo")
    for intent in (heard, late):
        assert log.append(intent)
        assert (await applier.apply(intent)).in_flight is False
    assert runtime.take_unread() == "use tabs\nand add a README"
    runtime.interrupt("and add a README")  # "use tabs" was heard by a late turn; this one came after it
    await applier.ended("done")
    assert store.count_unsettled_intents() == 0
    assert [(e.payload["subtype"], e.payload["text"], e.payload["user"]) for e in events] == [
        ("unheard", "and add a README", "ana")]

    after = Intent(Op.INTERRUPT, "and a licence", user="ana")  # read by the holder once the end is settled
    assert log.append(after)
    reply = await applier.apply(after)
    assert reply.ended and not reply.ok and runtime.take_unread() is None
    assert store.count_unsettled_intents() == 0


async def _no_oracle(question: str) -> str:
    raise LookupError("no oracle")
