"""Streaming on the chat side: RunView's live messages, the outbox's stream lane, the web event log."""

from __future__ import annotations

import dataclasses
import logging

import pytest

from adapters.memory_surface import MemorySurface
from adapters.outbox import Outbox, OutboxBounds
from adapters.platform import (
    MEMORY,
    LiveText,
    OutMessage,
    PermanentSurfaceError,
    PlatformLimits,
    StreamRefused,
    ThreadRef,
    TransientSurfaceError,
    provides,
)
from adapters.view import RunView
from adapters.web.events import EventLogs
from flower_core import Event
from tests.hub.test_outbox import SimClock

THREAD = ThreadRef("memory", "C1", "t1")
SLOW = dataclasses.replace(MEMORY, stream_every_s=1.0)


def partial(text: str, sub: bool = False) -> Event:
    return Event("partial", text, payload={"subagent": sub, "index": 0})


def said(text: str, sub: bool = False) -> Event:
    return Event("text", text, payload={"subagent": sub, "context": 0})


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


# ---- the view ---------------------------------------------------------------------------------
def test_the_view_grows_one_live_message_and_its_prose_names_it() -> None:
    view = RunView("r1", "task", clock=Clock())
    out = [m for ev in (partial("Hello "), partial("world"), partial("", sub=False), partial("x", sub=True))
           for m in view.on_event(ev)]
    assert [(m.key, m.kind, m.live, m.text) for m in out if m.kind == "live"] == [
        ("live:0:1", "live", "open", "Hello "), ("live:0:1", "live", "open", "Hello world")]
    assert [m.kind for m in out].count("status") == 1 and view.status_card.state == "running"  # words: running
    closed = view.on_event(said("Hello world."))
    assert [(m.kind, m.live, m.text) for m in closed if m.kind != "status"] == [("live", "said", "Hello world.")]
    (prose,) = _flush(view)
    assert prose.kind == "prose" and prose.text == "Hello world." and prose.live_keys == ("live:0:1",)
    # A text nobody streamed, or a subagent's, is prose as before (no live key).
    view.on_event(said("Plain."))
    view.on_event(said("worker talk", sub=True))
    (plain,) = _flush(view)
    assert plain.text == "Plain." and plain.live_keys == ()


def test_a_turns_tool_calls_are_its_tasks_and_the_next_request_closes_it() -> None:
    view = RunView("r1", "task", clock=Clock())
    view.on_event(partial("Let me look."))
    view.on_event(said("Let me look."))
    (call,) = [m for m in view.on_event(Event("tool_call", "ls -la", tool="Bash", payload={"id": "t1"}))
               if m.kind == "live"]
    assert (call.live, call.text, [(t.id, t.title, t.status) for t in call.tasks]) == (
        "said", "Let me look.", [("t1", "Bash ls -la", "in_progress")])
    (back,) = view.on_event(Event("tool_result", "boom\nmore", payload={"tool_use_id": "t1", "is_error": True}))
    assert [(t.status, t.output) for t in back.tasks] == [("error", "boom more")]
    requesting = Event("partial", "", payload={"subagent": False, "index": 0, "requesting": True})
    (closed,) = view.on_event(requesting)
    assert (closed.key, closed.live, len(closed.tasks)) == ("live:0:1", "done", 1)
    (nxt,) = view.on_event(partial("Next"))
    assert nxt.key == "live:0:2"


def test_the_plan_is_one_checklist_updated_in_place_and_closed_at_the_end() -> None:
    from adapters.view.summary import RunOutcome

    view = RunView("r1", "task", clock=Clock())
    view.on_event(partial("Planning."))
    todos = [{"content": "Read the notes", "status": "completed", "activeForm": "Reading"},
             {"content": "Write the summary", "status": "in_progress", "activeForm": "Writing"},
             {"content": "Check it", "status": "pending", "activeForm": "Checking"}]
    (plan,) = [m for m in view.on_event(Event("tool_call", "{}", tool="TodoWrite", payload={
        "id": "t2", "input": {"todos": todos}})) if m.kind == "live"]
    assert (plan.key, plan.plan, plan.title, plan.live) == ("plan:0", True, "Plan", "open")
    assert [(t.title, t.status) for t in plan.tasks] == [
        ("Read the notes", "complete"), ("Write the summary", "in_progress"), ("Check it", "pending")]
    end = [m for m in view.finish(RunOutcome("done")) if m.kind == "live"]
    assert [(m.key, m.live) for m in end] == [("live:0:1", "cut"), ("plan:0", "done")]


def test_without_partial_events_tool_calls_make_no_live_messages() -> None:
    view = RunView("r1", "task", clock=Clock())
    out = view.on_event(Event("tool_call", "ls", tool="Bash", payload={"id": "t1"}))
    out += view.on_event(Event("tool_result", "ok", payload={"tool_use_id": "t1"}))
    assert not [m for m in out if m.kind == "live"] and not view.streaming


def test_a_turn_cut_before_its_text_closes_the_live_message_as_written() -> None:
    view = RunView("r1", "task", clock=Clock())
    view.on_event(partial("Half a thou"))
    out = view.on_event(Event("result", "error_during_execution", payload={"cost_usd": 0.0}))
    cut = [m for m in out if m.kind == "live"]
    assert [(m.live, m.text) for m in cut] == [("cut", "Half a thou")]
    assert not [m for m in view.on_event(said("Next.")) if m.kind == "live"]  # a new text, not that message
    # A person's mail in the middle of a stream leaves it open.
    view.on_event(partial("Still "))
    mail = Event("ask", "hi", payload={"kind": "mail", "state": "queued", "id": "m1"})
    assert not [m for m in view.on_event(mail) if m.kind == "live"]


def _flush(view: RunView) -> list[OutMessage]:
    out: list[OutMessage] = []
    view._flush_prose(out)
    return out


def test_without_partial_events_the_view_says_what_it_said_before() -> None:
    def run(events: list[Event]) -> list[tuple[str, str, str]]:
        view = RunView("r1", "task", clock=Clock())
        return [(m.key, m.kind, m.text) for ev in events for m in view.on_event(ev)] + [
            (m.key, m.kind, m.text) for m in _flush(view)]

    events = [said("One."), Event("tool_call", "ls", tool="Bash", payload={"id": "t"}), said("Two.")]
    streamed = [partial("One."), said("One."), events[1], partial("Tw"), partial("o."), said("Two.")]
    assert [m for m in run(streamed) if m[1] != "live"] == run(events)


# ---- the outbox -------------------------------------------------------------------------------
def live(key: str, text: str, state: str = "open") -> OutMessage:
    return OutMessage(key, "live", text, live=state)


async def test_a_streaming_thread_shows_words_as_written_paced_and_not_twice() -> None:
    clock = SimClock()
    surface = MemorySurface(limits=SLOW)
    box = Outbox(surface, THREAD, clock=clock, sleeper=clock.sleep)
    assert box.streaming and provides(surface, "stream")
    words = [f"w{i} " for i in range(30)]
    text = ""
    for w in words[:10]:
        text += w
        box.put(live("live:0:1", text))
        await clock.settle()
    # The first words start the message at once; the rest wait for the pace and go as one growth.
    assert surface.stream_calls == 1 and surface.thread(THREAD)[0].text == "w0 "
    await clock.advance(1.0)
    assert surface.stream_calls == 2 and surface.thread(THREAD)[0].text == text
    for w in words[10:]:
        text += w
        box.put(live("live:0:1", text))
        await clock.advance(0.1)
    box.put(live("live:0:1", text.strip(), "done"))
    box.put(OutMessage("prose:0:1", "prose", text.strip(), replace=False, live_keys=("live:0:1",)))
    await clock.advance(5)
    await box.flush()
    (shown,) = surface.thread(THREAD)
    assert (shown.kind, shown.live, shown.text) == ("live", "done", text.strip())
    # 30 words over 2 s: a start, about one growth a second, a close; the prose is not posted again.
    assert surface.stream_calls <= 6 and surface.counts["post"] == 0
    news = "".join(c.text for c in surface.calls if c.op == "stream")
    assert news.strip() == text.strip()  # each call carried only what was new


async def test_a_thread_that_cannot_stream_shows_the_prose_as_before(caplog: pytest.LogCaptureFixture) -> None:
    for surface in (MemorySurface(streams=False), _Refusing()):
        box = Outbox(surface, THREAD)
        box.put(live("live:0:1", "Hello"))
        box.put(live("live:0:1", "Hello world.", "done"))
        box.put(OutMessage("prose:0:1", "prose", "Hello world.", replace=False, live_keys=("live:0:1",)))
        await box.flush()
        assert [(m.kind, m.text) for m in surface.thread(THREAD)] == [("prose", "Hello world.")]
    assert not MemorySurface(streams=False).stream_calls


class _Refusing(MemorySurface):
    async def stream(self, thread: ThreadRef, message_id: str | None, live: LiveText) -> str:
        raise StreamRefused("method_not_supported_for_channel_type")


async def test_a_refusal_turns_streaming_off_for_the_thread_and_is_logged_once(
        caplog: pytest.LogCaptureFixture) -> None:
    from adapters import outbox_streams

    outbox_streams._REFUSALS_LOGGED.discard("refusing")
    surface = _Refusing(name="refusing")
    with caplog.at_level(logging.WARNING, logger="adapters.outbox"):
        for n in range(3):
            box = Outbox(surface, ThreadRef("refusing", "C1", f"t{n}"))
            box.put(live("live:0:1", "Hello"))
            await box.flush()
            assert not box.streaming
            box.put(live("live:0:2", "Again"))  # not even tried again in this thread
    assert len([r for r in caplog.records if "refused to stream" in r.message]) == 1


async def test_a_stream_that_fails_hands_its_words_to_the_prose() -> None:
    clock = SimClock()

    class Breaking(MemorySurface):
        async def stream(self, thread: ThreadRef, message_id: str | None, live: LiveText) -> str:
            if message_id is not None:
                raise PermanentSurfaceError("message_not_in_streaming_state")
            return await super().stream(thread, message_id, live)

    surface = Breaking()
    box = Outbox(surface, THREAD, clock=clock, sleeper=clock.sleep)
    box.put(live("live:0:1", "Hel"))
    await clock.settle()
    box.put(live("live:0:1", "Hello world.", "done"))
    box.put(OutMessage("prose:0:1", "prose", "Hello world.", replace=False, live_keys=("live:0:1",)))
    await clock.advance(1)
    await box.flush()
    assert [m.kind for m in surface.thread(THREAD)] == ["live", "prose"]
    assert surface.thread(THREAD, "prose")[0].text == "Hello world."


async def test_a_429_holds_back_only_that_thread_and_the_stream_goes_on_after() -> None:
    clock = SimClock()
    slow, fast = MemorySurface(limits=SLOW), MemorySurface(limits=SLOW)
    a = Outbox(slow, THREAD, clock=clock, sleeper=clock.sleep)
    b = Outbox(fast, THREAD, clock=clock, sleeper=clock.sleep)
    slow.storm(1, retry_after=5.0)
    for box in (a, b):
        box.put(live("live:0:1", "First words"))
    await clock.advance(0.5)
    assert fast.stream_calls == 1 and slow.stream_calls == 0
    await clock.advance(5)
    assert slow.stream_calls == 1 and slow.thread(THREAD)[0].text == "First words"


async def test_a_text_longer_than_a_message_continues_in_the_next() -> None:
    limits = PlatformLimits(text_max=50, post_per_s=100, post_burst=100, update_per_min=6000, update_burst=100,
                            stream_every_s=0.0)
    surface = MemorySurface(limits=limits)
    box = Outbox(surface, THREAD)
    text = " ".join(f"word{i:02d}" for i in range(20))  # 139 characters
    for n in range(10, len(text) + 1, 10):
        box.put(live("live:0:1", text[:n]))
        await box.flush()
    box.put(live("live:0:1", text, "done"))
    await box.flush()
    shown = surface.thread(THREAD)
    assert all(m.live == "done" for m in shown) and len(shown) == 3
    assert "".join(m.text for m in shown) == text and all(len(m.text) <= 50 for m in shown)


async def test_a_transient_error_past_the_give_up_time_hands_over_to_prose() -> None:
    clock = SimClock()

    class Down(MemorySurface):
        async def stream(self, thread: ThreadRef, message_id: str | None, live: LiveText) -> str:
            raise TransientSurfaceError("503", retry_after=50.0)

    surface = Down()
    box = Outbox(surface, THREAD, clock=clock, sleeper=clock.sleep, bounds=OutboxBounds(give_up_s=120.0))
    box.put(live("live:0:1", "Hi"))
    box.put(OutMessage("prose:0:1", "prose", "Hi.", replace=False, live_keys=("live:0:1",)))
    await clock.advance(300)
    await box.flush()
    assert [m.text for m in surface.thread(THREAD)] == ["Hi."]


# ---- the web event log ------------------------------------------------------------------------
def test_the_event_log_keeps_seqs_and_shows_words_being_written_only_apart() -> None:
    logs = EventLogs()
    logs.tap("r1", Event("step", "work", payload={"index": 1, "total": 1}))
    log = logs.get("r1")
    assert log is not None
    first = log.last
    logs.tap("r1", partial("Hel"))
    logs.tap("r1", partial("lo"))
    logs.tap("r1", partial("worker", sub=True))
    assert log.last == first and log.total == 1  # no seq for words being written
    assert log.writing == {"after": first, "text": "Hello"}
    logs.tap("r1", said("Hello."))
    assert log.writing is None and log.last == first + 1
    assert [e["kind"] for e in log.after(0).events] == ["step", "text"]


async def test_an_outbox_closes_only_the_streams_an_earlier_process_left_open() -> None:
    from adapters.outbox_streams import CUT_NOTE, OPEN_STREAMS
    from adapters.state import MemoryStateStore

    surface, store = MemorySurface(), MemoryStateStore()
    first = Outbox(surface, THREAD, store=store)
    first.put(live("live:0:1", "Half a sent"))
    await first.flush()
    (mid,) = store.get_message(THREAD, OPEN_STREAMS).split()  # type: ignore[union-attr]
    # A second outbox of this process for the same thread (a note to a sleeping run's thread) leaves it be.
    other = Outbox(surface, THREAD, store=store)
    await other.flush()
    assert surface.messages[mid].msg.live == "open"
    # A new process (its own store object over the same state) closes it, keeping the words.
    store_b = MemoryStateStore()
    store_b.save_message(THREAD, OPEN_STREAMS, store.get_message(THREAD, OPEN_STREAMS) or "")
    after = Outbox(surface, THREAD, store=store_b)
    await after.flush()
    shown = surface.messages[mid].msg
    assert (shown.live, shown.text) == ("done", f"Half a sent\n\n_{CUT_NOTE}_")
    assert store_b.get_message(THREAD, OPEN_STREAMS) == "-"
    # The first outbox closing its own stream clears it from the store too.
    first.put(live("live:0:1", "Half a sentence.", "done"))
    await first.flush()
    assert store.get_message(THREAD, OPEN_STREAMS) == "-"


async def test_the_bots_counting_wrapper_counts_stream_calls_and_keeps_the_member_its_own() -> None:
    from adapters.ops.metrics import CountingSurface, Metrics
    from adapters.platform import PlatformSurface, as_platform

    metrics = Metrics()
    counted = CountingSurface(MemorySurface(), metrics)
    assert provides(counted, "stream")
    await as_platform(counted).stream(THREAD, None, LiveText("k", "hi", "hi"))
    assert metrics.platform_calls.labels("memory", "stream")._value.get() == 1

    class Plain(PlatformSurface):  # no stream of its own: the wrapper says so too
        name, limits = "plain", MEMORY

        async def post(self, thread: ThreadRef, msg: OutMessage) -> str:
            return "1"

        async def update(self, thread: ThreadRef, message_id: str, msg: OutMessage) -> None:
            return None

        async def notify(self, thread: ThreadRef, user: str, text: str) -> None:
            return None

    assert not provides(CountingSurface(Plain(), metrics), "stream")


def test_a_question_closes_the_turn_so_no_message_streams_while_a_person_is_awaited() -> None:
    view = RunView("r1", "task", clock=Clock())
    view.on_event(partial("Which one?"))
    view.on_event(said("Which one?"))
    view.on_event(Event("tool_call", "", tool="mcp__human__ask", payload={"id": "t1", "input": {}}))
    out = view.on_event(Event("ask", "Which one?", payload={"id": "q1", "state": "asked", "options": ["a"]}))
    assert [(m.kind, m.live) for m in out if m.kind in ("live", "ask")] == [("live", "done"), ("ask", "")]
