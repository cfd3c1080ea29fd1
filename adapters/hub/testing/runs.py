"""The run side the door suite runs on: the real in-process engine, with one scripted question in place
of a model.

```
hub ──Transport──▶ RunEngine (real: intent log, Applier, events) ──▶ HumanChannel (real)
                        │                                                 ▲
                        └── workflow: `QuestionRun.play` asks QUESTION ───┘ and waits to be stopped
```

The hub cannot tell it from a run on the CLI: its card comes from the channel's own "asked" event, an
answer settles the channel's question (so the card settles from the channel's event), mail lands in
the channel's inbox, a stop cancels the run. No CLI, no model: a check sees the door and nothing else.

`QuestionRuns` is an `EngineKit` (hand it to the Hub as `kit=`); it keeps every run it built in `runs`,
and a check waits on what a run side received with `until`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from adapters.transport.base import RunSink
from adapters.transport.engine import EngineKit, RunEngine
from adapters.transport.intents import Intent, IntentReply, Op, RunLog
from adapters.transport.plan import RunPlan
from flower_core import HumanChannel

__all__ = ["OPTIONS", "QUESTION", "QuestionRun", "QuestionRuns"]

QUESTION = "Tabs or spaces?"
OPTIONS = ("tabs", "spaces")
T = TypeVar("T")


class QuestionRun:
    """One run's side, as a check reads it: what reached it and how it ended."""

    def __init__(self, run_id: str, plan: RunPlan, changed: Callable[[], None]) -> None:
        self.run_id, self.task = run_id, plan.task
        self.channel = HumanChannel(timeout_s=None)  # a question that waits as long as the check does
        self.intents: list[Intent] = []  # every input the chat side submitted, in order
        self.heard: list[tuple[str, str]] = []  # what the question's call returned: (outcome, answer)
        self.ended = ""  # once ended: its stop reason ("stopped"; "shutdown" when the hub closed), else "done"
        self._changed = changed

    def ops(self, op: Op) -> list[Intent]:
        return [i for i in self.intents if i.op is op]

    @property
    def mail(self) -> list[str]:
        """The inbox as the model would read it (queued or taken)."""
        return [m.text for m in self.channel.mail]

    def changed(self) -> None:
        self._changed()

    async def play(self) -> dict[str, Any]:
        """The workflow: one question, then a long quiet run that ends only when stopped (or shut down)."""
        ask = await self.channel.ask(QUESTION, list(OPTIONS))
        self.heard.append((str(ask.state), ask.answer))
        self.changed()
        await asyncio.Event().wait()
        return {}


class _Workflow:
    """The shape of a flower_core Workflow that RunEngine uses, played by a QuestionRun."""

    def __init__(self, script: QuestionRun) -> None:
        self.script = script
        self.channel = script.channel
        self.results: dict[str, Any] = {}
        self.steps: list[Any] = []

    async def run(self, runtime: object, *, on_event: object = None, on_step: object = None) -> dict[str, Any]:
        return await self.script.play()  # (events go out through the channel, which the engine wired)


class _Runtime:
    """What RunEngine and the Applier ask of a Runtime: words for the next prompt, its cost, close."""

    def __init__(self) -> None:
        self.words: list[str] = []

    def interrupt(self, text: str) -> bool:
        self.words.append(text)
        return False  # no step in flight: the words go with the next prompt

    def total_cost(self) -> float:
        return 0.0

    def close(self) -> None:
        return None


class _Engine(RunEngine):
    def __init__(self, run: QuestionRun, sink: RunSink, log: RunLog | None) -> None:
        super().__init__(run.run_id, _Workflow(run), _Runtime(), sink, oracle=None, log=log)  # type: ignore[arg-type]
        self.script = run

    async def submit(self, intent: Intent) -> IntentReply:
        self.script.intents.append(intent)
        self.script.changed()
        return await super().submit(intent)

    def start(self) -> None:
        super().start()
        if self.task is not None:
            self.task.add_done_callback(self._ended)

    def _ended(self, _task: asyncio.Task[None]) -> None:
        self.script.ended = self.stop_reason or "done"
        self.script.changed()


@dataclass
class QuestionRuns(EngineKit):
    """An EngineKit whose runs each ask QUESTION (OPTIONS) at once and wait; `runs` by run id."""

    runs: dict[str, QuestionRun] = field(default_factory=dict)
    signal: asyncio.Event = field(default_factory=asyncio.Event)

    def build(self, run_id: str, plan: RunPlan, sink: RunSink, *, log: RunLog | None = None) -> RunEngine:
        run = QuestionRun(run_id, plan, self.signal.set)
        self.runs[run_id] = run
        self.signal.set()
        return _Engine(run, sink, log)

    async def until(self, probe: Callable[[], T], what: str, timeout: float = 10.0) -> T:
        """`probe()` once it is truthy, re-read whenever a run side changes; AssertionError naming `what`
        when it is not within `timeout` seconds."""
        async def loop() -> T:
            while True:
                self.signal.clear()
                got = probe()
                if got:
                    return got
                await self.signal.wait()
        try:
            return await asyncio.wait_for(loop(), timeout)
        except TimeoutError:
            raise AssertionError(f"{what}: not within {timeout:g}s") from None

    async def of(self, run_id: str) -> QuestionRun:
        """The run side of `run_id`, once the transport has built it."""
        found = await self.until(lambda: run_id in self.runs, f"the run side of {run_id}")
        assert found
        return self.runs[run_id]
