"""Fewer Slack calls per question: status-card edits and agent-session flips that follow each other
within a second are sent as one (adapters/slack/coalesce.py). The Coalescer on its own (a pure
piece of asyncio), then a real run through slack-bolt/slack-sdk, the SDK + CLI and both doubles."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from adapters.slack.coalesce import Coalescer
from tests.conftest import scenario_of
from tests.support.hub_support import ask_call
from tests.support.slack_double import SlackDouble
from tests.support.slack_support import C1, card, root_of, slack_bot


class Sink:
    def __init__(self, ok: bool = True, hang: bool = False) -> None:
        self.sent: list[tuple[str, str]] = []
        self.ok, self.hang = ok, hang
        self.changed = asyncio.Event()

    async def __call__(self, key: str, value: str) -> bool:
        self.sent.append((key, value))
        self.changed.set()
        if self.hang:
            await asyncio.Event().wait()
        return self.ok


async def test_flips_within_the_window_send_only_the_last_and_nothing_when_it_is_already_shown() -> None:
    sink = Sink()
    c: Coalescer[str, str] = Coalescer(sink, window_s=0.2)
    c.put("t", "processing")
    await asyncio.wait_for(sink.changed.wait(), 5)
    assert sink.sent == [("t", "processing")] and c.shown("t") == "processing"
    c.put("t", "active")
    c.put("t", "processing")  # answered at once: back to what Slack shows
    await c.flush(5)
    assert sink.sent == [("t", "processing")] and c.skipped == 2
    c.put("t", "active")
    c.put("u", "active")
    await c.flush(5)
    assert sorted(sink.sent[1:]) == [("t", "active"), ("u", "active")]
    assert c.waiting == 0 and not c._tasks  # idle: no task per key


async def test_now_skips_the_window_and_a_failed_send_is_tried_again_by_the_next_change() -> None:
    sink = Sink(ok=False)
    c: Coalescer[str, str] = Coalescer(sink, window_s=30.0)
    started = time.monotonic()
    c.put("t", "closed", now=True)
    await asyncio.wait_for(sink.changed.wait(), 5)
    assert time.monotonic() - started < 5 and c.shown("t") is None  # not remembered: Slack did not take it
    sink.ok = True
    c.put("t", "closed", now=True)
    await c.flush(5)
    assert sink.sent == [("t", "closed"), ("t", "closed")] and c.shown("t") == "closed"


async def test_close_is_bounded_even_when_a_send_hangs() -> None:
    sink = Sink(hang=True)
    c: Coalescer[str, str] = Coalescer(sink, window_s=30.0)
    c.put("t", "active")
    started = time.monotonic()
    await c.close(timeout=0.3)
    assert sink.sent == [("t", "active")] and time.monotonic() - started < 5 and not c._tasks


def test_a_negative_window_is_refused() -> None:
    with pytest.raises(ValueError, match="window_s"):
        Coalescer(Sink(), window_s=-1)


def _questions(n: int) -> Any:
    asks = [{"say": "", "call": [ask_call(f"Question {k}?", ["go", "stop"])]} for k in range(1, n + 1)]
    return scenario_of({"name": "main", "turn": [*asks, {"say": "done"}]})


async def test_quick_answers_cost_at_most_three_calls_each_and_a_long_wait_still_shows(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    n = 3
    md = await double_factory(_questions(n))
    async with SlackDouble() as double, slack_bot(tmp_path, md, cli_home, double) as bot:
        assert await double.slash("/flower", "ask away", user="UALICE", channel=C1) is None
        root = (await double.wait_for(lambda d: d.roots(C1)))[-1].ts
        # The first question waits past the window: the status card and the session say so.
        q1 = await double.wait_for(lambda d: card(d, C1, root, "Question 1?"))
        await double.wait_for(lambda d: "Waiting" in root_of(d).header())
        await double.wait_for(lambda d: d.sessions and d.sessions[-1]["status"] == "active")
        await double.click(q1, "go", user="UALICE")
        await double.wait_for(lambda d: card(d, C1, root, "Question 1?", open_=False))
        first = len(double.calls)
        for k in range(2, n + 1):  # the rest are answered as soon as their card shows
            q = await double.wait_for(lambda d, k=k: card(d, C1, root, f"Question {k}?"))
            await double.click(q, "go", user="UALICE")
            await double.wait_for(lambda d, k=k: card(d, C1, root, f"Question {k}?", open_=False))
        run = bot.hub.query.runs()[0].run_id
        await bot.hub.query.wait(run)
        await double.wait_for(lambda d: root_of(d).header().startswith("✅ Done"))
        await double.wait_for(lambda d: d.sessions[-1]["status"] == "closed")
        quick = [c.method for c in double.calls[first:]]
        shown = [(c.method, str(c.args.get("text") or c.args.get("status"))[:40]) for c in double.calls[first:]]
        # Questions 2 and 3: card posted + card edited each (a status flip only if an answer took over a
        # second on a busy machine); then the end: prose, summary, the Done edit, the session closed.
        assert (len(quick) - 4) / (n - 1) <= 3, shown
        assert quick.count("chat.postMessage") == (n - 1) + 2, shown
        assert double.sessions[-1]["status"] == "closed" and "Done" in root_of(double).header()
