"""A model change is an intent like any other: the holder applies it to its runtime and keeps it unsettled until
the run ends, so whoever holds the run next (a restarted bot, a worker taking it over with the launch's older
plan) applies it again before its first attempt; a refused one is settled as refused and never replayed."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from adapters.state import MemoryStateStore
from adapters.transport.applier import Applier
from adapters.transport.intents import BoundLog, Intent, Op, StoreIntentLog
from flower_core import Event
from flower_core.runtime import ModelRefused
from flower_core.runtime.transcript import SessionFacts


class Steered:
    """A runtime as the applier sees it, recording what it was told to steer to."""

    def __init__(self, refuse: str = "") -> None:
        self.steers: list[tuple[str | None, str | None]] = []
        self.refuse = refuse

    async def session_facts(self, session_ids: Iterable[str]) -> SessionFacts:
        return SessionFacts()

    def interrupt(self, message: str = "") -> bool:
        return False

    async def steer(self, *, model: str | None = None, effort: str | None = None) -> Any:
        if model and model == self.refuse:
            raise ModelRefused(f"Model '{model}' not found")
        self.steers.append((model, effort))


async def _oracle(_: str) -> str:
    return ""


def applier(runtime: Steered, log: BoundLog, events: list[Event]) -> Applier:
    return Applier("r1", channel=None, runtime=runtime, log_=log, ask_oracle=_oracle, cancel=lambda _: True,
                   emit=events.append)


def steer(model: str = "", effort: str = "") -> Intent:
    return Intent(Op.MODEL, json.dumps({"model": model or None, "effort": effort or None}), user="U1")


async def test_a_change_is_replayed_by_the_next_holder_and_a_refused_one_is_not() -> None:
    log = BoundLog(StoreIntentLog(MemoryStateStore()), "r1")
    first, events = Steered(refuse="claude-nonesuch"), []
    a = applier(first, log, events)
    assert await a.replay() is False
    for intent in (steer("claude-sonnet-4-6"), steer(effort="high"), steer("claude-nonesuch")):
        assert log.append(intent)
        reply = await a.apply(intent)
        assert reply.ok == ("nonesuch" not in intent.text), reply
    assert first.steers == [("claude-sonnet-4-6", None), (None, "high")]
    assert len(log.unsettled()) == 2  # the refused one is settled already
    await a.ended("died")  # the holder went away mid-run: nothing more is settled

    second = Steered()
    b = applier(second, log, [])
    assert await b.replay() is False
    assert second.steers == [("claude-sonnet-4-6", None), (None, "high")]  # in order, before any attempt
    a_model_refused_at_start = Event("retry", text="refused", payload={"model_refused": "claude-sonnet-4-6",
                                                                         "model": ""})
    b.observe(a_model_refused_at_start)
    assert [json.loads(i.text)["effort"] for i in log.unsettled()] == ["high"]  # the refused model: never again
    await b.ended("done")
    assert log.unsettled() == []
