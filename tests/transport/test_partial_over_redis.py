"""Over Redis, a worker sends partial events coalesced: at most one per PARTIAL_EVERY_S per run, each the words
gathered since, and always before the next event (so the front shows the same words, in order)."""

from __future__ import annotations

import asyncio
from typing import Any

from adapters.transport import wire
from adapters.transport.redis_held import PARTIAL_EVERY_S, Held, HeldSink
from flower_core import Event


class Worker:
    name = "w1"

    def __init__(self) -> None:
        self.published: list[Event] = []

    def publish(self, held: Held, fields: dict[str, str]) -> None:
        self.published.append(wire.event_of(fields))

    def room_changed(self) -> None:
        pass


def partial(text: str, index: int = 0, sub: bool = False) -> Event:
    return Event("partial", text, payload={"subagent": sub, "index": index})


async def test_partial_events_go_out_gathered_and_before_what_follows() -> None:
    worker = Worker()
    sink = HeldSink(worker, Held("r1", 1, "0-0"))  # type: ignore[arg-type]
    for word in ("one ", "two ", "three "):
        sink.on_event(partial(word))
    assert worker.published == []  # gathered, not one entry a word
    await asyncio.sleep(PARTIAL_EVERY_S + 0.1)
    assert [(e.kind, e.text) for e in worker.published] == [("partial", "one two three ")]
    sink.on_event(partial("four "))
    sink.on_event(partial("sub", sub=True))  # another thread's words: not joined to these
    sink.on_event(Event("text", "one two three four", payload={"subagent": False}))
    got: list[Any] = [(e.kind, e.text, e.payload.get("subagent")) for e in worker.published[1:]]
    assert got == [("partial", "four ", False), ("partial", "sub", True), ("text", "one two three four", False)]
    await asyncio.sleep(PARTIAL_EVERY_S + 0.1)
    assert len(worker.published) == 4  # nothing left over after the text
