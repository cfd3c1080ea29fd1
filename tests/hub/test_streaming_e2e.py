"""Streaming through the hub: the real SDK + CLI against a model double that writes slowly."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from adapters.memory_surface import MemorySurface
from adapters.platform import ThreadRef as ThreadRefOf
from adapters.state import MemoryStateStore
from tests.conftest import scenario_of
from tests.support.drive import drive
from tests.support.hub_support import FAST, THREAD, Watch, make_hub

WORDS = " ".join(f"word{i}" for i in range(60)) + "."


def scenario() -> Any:
    return scenario_of({"name": "main", "turn": [
        {"say": "Reading.", "call": [{"tool": "Read", "input": {"file_path": "notes.md"}}]},
        {"say": WORDS, "stream": {"words": 2, "pause_s": 0.05}},
    ]})


async def test_a_reply_is_seen_while_written_and_ends_as_the_complete_text(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory(scenario())
    surface, store = MemorySurface(), MemoryStateStore()
    watch = Watch(surface)
    hub = make_hub(tmp_path, md, cli_home, surface, store,
                   runtime_options={"resilience": FAST, "partial_text": True})
    try:
        started = await drive(hub).start("read the notes", THREAD, "alice")
        assert started.ok
        t0 = time.monotonic()

        def growing(s: MemorySurface) -> Any:
            return next((m for m in s.thread(THREAD, "live") if m.live == "open" and "word" in m.text), None)

        first = await watch.until(growing)
        assert first.text != WORDS and WORDS.startswith(first.text)  # seen before the model finished it
        seen_at = time.monotonic() - t0

        def closed(s: MemorySurface) -> Any:
            return next((m for m in s.thread(THREAD, "live") if m.live == "done" and "word" in m.text), None)

        done = await watch.until(closed)
        assert done.text == WORDS  # ends identical to the complete text
        await watch.until(lambda s: any(m.kind == "summary" for m in s.thread(THREAD)))
        # Shown as written: no prose posts those words again; the live messages are the agent's words.
        assert not [m for m in surface.thread(THREAD, "prose") if "word1" in m.text]
        assert [m.text for m in surface.thread(THREAD, "live")] == ["Reading.", WORDS]
        streams = [c for c in surface.calls if c.op == "stream" and c.msg is not None and "word" in c.msg.text]
        assert 3 <= len(streams) < 61  # grew several times, far fewer calls than deltas
        assert seen_at < 30
    finally:
        await hub.close()


async def test_a_thread_that_does_not_stream_gets_the_prose_of_today(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory(scenario())
    surface, store = MemorySurface(streams=False), MemoryStateStore()
    watch = Watch(surface)
    hub = make_hub(tmp_path, md, cli_home, surface, store,
                   runtime_options={"resilience": FAST, "partial_text": True})
    try:
        assert (await drive(hub).start("read the notes", THREAD, "alice")).ok
        await watch.until(lambda s: any(m.kind == "summary" for m in s.thread(THREAD)))
        assert not surface.thread(THREAD, "live") and surface.stream_calls == 0
        prose = "\n\n".join(m.text for m in surface.thread(THREAD, "prose"))
        assert "Reading." in prose and WORDS in prose
    finally:
        await hub.close()


async def test_a_stream_cut_by_a_kill_is_closed_when_the_run_comes_back(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    from adapters.outbox_streams import CUT_NOTE
    from adapters.state import SQLiteStateStore
    from tests.support.hub_support import kill_cli_children, one_step_flow

    slow = " ".join(f"slow{i}" for i in range(200)) + "."
    md = await double_factory(scenario_of({"name": "main", "turn": [{"say": slow, "stream": {"pause_s": 0.05}}]}))
    surface = MemorySurface()
    watch = Watch(surface)
    flow = one_step_flow(steps=("work",), resume_prompt="Go on.")
    options = {"resilience": FAST, "partial_text": True}
    hub = make_hub(tmp_path, md, cli_home, surface, SQLiteStateStore(tmp_path / "state.db"), factory=flow,
                   runtime_options=options)
    run = (await drive(hub).start("write slowly", THREAD, "alice")).run_id
    cut = await watch.until(lambda s: next((p for p in s.messages.values() if p.msg.live == "open"
                                            and "slow5 " in p.msg.text), None))
    assert kill_cli_children()  # the host goes down mid-sentence
    await hub.close()
    hub.store.close()
    assert cut.msg.live == "open"  # left streaming by the process that died

    hub = make_hub(tmp_path, md, cli_home, surface, SQLiteStateStore(tmp_path / "state.db"), factory=flow,
                   runtime_options=options)
    try:
        assert await hub.recover() == []
        closed = await watch.until(lambda s: s.messages[cut.message_id].msg.live == "done"
                                   and s.messages[cut.message_id].msg)
        assert closed.text.endswith(f"_{CUT_NOTE}_") and "slow5 " in closed.text
        await hub.query.wait(run)
        again = [m for m in surface.thread(THREAD, "live") if m.text == slow]
        assert len(again) == 1 and again[0].live == "done"  # the reply, whole, once
        assert not [m for m in surface.thread(THREAD, "prose") if "slow1 " in m.text]
    finally:
        await hub.close()
        hub.store.close()


async def test_a_mirror_in_a_429_storm_does_not_slow_the_home_thread_or_the_run(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory(scenario())
    home, slow = MemorySurface(name="chat"), MemorySurface(name="slow")
    watch = Watch(home)
    hub = make_hub(tmp_path, md, cli_home, home, MemoryStateStore(),
                   runtime_options={"resilience": FAST, "partial_text": True})
    hub.surfaces.update({"slow": slow})
    mirror = ThreadRefOf("slow", "C9", "t9")
    hub.mirrors.auto.append(lambda record: mirror)  # every run also shows there (as the web page's copy does)
    slow.storm(10_000, retry_after=1.0)  # every call refused for now, each 429 holding that thread 1 s
    try:
        run = (await drive(hub).start("read the notes", ThreadRefOf("chat", "C1", "t1"), "alice")).run_id
        # The home thread streams the reply as it is written, whatever the mirror is going through.
        growing = await watch.until(lambda s: next((m for m in s.thread(kind="live") if m.live == "open"
                                                    and "word1 " in m.text), None))
        assert growing.text != WORDS
        await watch.until(lambda s: any(m.text == WORDS and m.live == "done" for m in s.thread(kind="live")))
        assert not slow.thread(kind="live")  # nothing got through there yet
        slow.storm(0)
        got = await Watch(slow).until(lambda s: next((m for m in s.thread(kind="live") if m.text == WORDS), None),
                                      timeout=60)
        assert got.live == "done"  # once it heals, it catches up with the complete text
        await hub.query.wait(run)
    finally:
        await hub.close()
