"""Hub.resume (`/flower resume <run id> [text]`) on the hub, for the cases the platform tests do not reach:
a live run is followed in the new thread and the words go to its inbox (their receipt shows there); a run
that was cut off (died) is refused with the way out (wake it); an empty resume of an ended run keeps only
the mirror; a round the hub refuses takes the new mirror away again. And a run that parked on its questions
continues in its session like any other. The real SDK + CLI on the model double, the in-memory surface.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from adapters.memory_surface import MemorySurface
from adapters.platform import ThreadRef
from adapters.state import RunStatus, SQLiteStateStore
from tests.hub.test_parking_hub import parked_card
from tests.hub.test_rounds import MORE, conversation, hub_on
from tests.support.campaign.tally import session_id
from tests.support.drive import drive
from tests.support.hub_support import THREAD, Watch, button

ELSEWHERE = ThreadRef("memory", "C2", "t-elsewhere")


async def test_resume_follows_a_live_run_and_mails_it_then_refuses_a_cut_off_one(double_factory: Any,
                                                                                  cli_home: Path,
                                                                                  tmp_path: Path) -> None:
    md = await double_factory(conversation())
    surface = MemorySurface()
    watch = Watch(surface)
    hub = hub_on(tmp_path, md, cli_home, surface, SQLiteStateStore(tmp_path / "state.db"))
    try:
        run = (await drive(hub).start("write a tool", THREAD, "alice")).run_id
        q1 = await watch.card("ask:1-q1")
        assert not hub.query.resumable(run, "mallory").ok and not hub.query.resumable("rnothere", "alice").ok
        live = await drive(hub).resume(run, ELSEWHERE, "bob", "a word from elsewhere")
        assert live.ok and "Following run" in live.message and "Queued" in live.message, live
        assert [m.thread for m in hub.store.mirrors_of(run)] == [ELSEWHERE]
        await watch.until(lambda s: s.find("ask:1-q1", ELSEWHERE))  # the open card shows there too
        assert (await drive(hub).handle_action(button(q1, "tabs"), "bob", delivery_id="d-1", where=ELSEWHERE)).ok
        await watch.until(lambda s: s.find("mail:", ELSEWHERE))  # the receipt shows where the words were written
        assert not surface.find("mail:", THREAD)
        await hub.query.wait(run)

        # Cut off, not ended: refused with the way out; nothing stored, no round.
        record = hub.store.get_run(run)
        assert record is not None
        hub.store.save_run(replace(record, status=RunStatus.DIED))
        died = await drive(hub).resume(run, ThreadRef("memory", "C3", "t3"), "alice", MORE)
        assert not died.ok and "wake it" in died.message
        assert len(hub.store.mirrors_of(run)) == 1 and hub.store.get_run(run).round == 1  # type: ignore[union-attr]
        hub.store.save_run(record)

        # Ended, no words: only the mirror, and a reply there continues it; empty words change nothing more.
        quiet = ThreadRef("memory", "C4", "t4")
        shown = await drive(hub).resume(run, quiet, "alice")
        assert shown.ok and "a reply in this thread continues it (round 2)" in shown.message
        assert quiet in [m.thread for m in hub.store.mirrors_of(run)] and run not in hub.live
        again = await drive(hub).resume(run, quiet, "alice", MORE)
        assert not again.ok and "already shown here" in again.message

        # A round the hub refuses (no room for one more run) takes the new thread's mirror away again.
        other = (await drive(hub).start("another task", ThreadRef("memory", "C1", "t-other"), "alice")).run_id
        await watch.until(lambda s: s.find("ask:1-q1", ThreadRef("memory", "C1", "t-other")))
        hub.max_runs = 1
        full = await drive(hub).resume(run, ThreadRef("memory", "C5", "t5"), "alice", MORE)
        assert not full.ok and "already going" in full.message, full
        assert [m.thread for m in hub.store.mirrors_of(run)] == [ELSEWHERE, quiet]
        assert hub.store.get_run(run).round == 1 and other in hub.live  # type: ignore[union-attr]
    finally:
        await hub.close()


async def test_a_run_that_parked_on_its_question_continues_in_its_session(double_factory: Any, cli_home: Path,
                                                                         tmp_path: Path) -> None:
    """Round 1 parks while its question waits (no CLI), the answer resumes it, it ends; a thread message then
    starts round 2 in that same session, whose question parks and is answered the same way."""
    md = await double_factory(conversation())
    surface = MemorySurface()
    watch = Watch(surface)
    hub = hub_on(tmp_path, md, cli_home, surface, SQLiteStateStore(tmp_path / "state.db"), park_after_s=0.2)
    try:
        run = (await drive(hub).start("write a tool", THREAD, "alice")).run_id
        q1 = await watch.card("ask:1-q1")
        await watch.until(parked_card)
        assert hub.store.get_run(run).status == "parked"  # type: ignore[union-attr]
        parked = await drive(hub).continue_run(run, MORE, "alice")  # parked is live: words are mail, not a round
        assert not parked.ok and "send it a message" in parked.message
        assert (await drive(hub).handle_action(button(q1, "tabs"), "alice", delivery_id="p-1")).ok
        await hub.query.wait(run)
        assert hub.store.get_run(run).status == "done"  # type: ignore[union-attr]
        before = len(md.model_requests())

        went = await drive(hub).said(THREAD, "bob", MORE)
        assert went is not None and went.ok, went
        q2 = await watch.card("ask:2-q1")
        await watch.until(lambda s: parked_card(s) and hub.store.get_run(run).status == "parked")  # type: ignore[union-attr]
        assert (await drive(hub).handle_action(button(q2, "json"), "bob", delivery_id="p-2")).ok
        await hub.query.wait(run)
        record = hub.store.get_run(run)
        assert record is not None and record.status == "done" and record.round == 2
        later = md.model_requests()[before:]
        assert later and MORE in later[0].last_user_text and later[-1].last_tool_result == "json"
        assert {session_id(r) for r in md.model_requests()} == {session_id(later[0])}  # one session, parked twice
    finally:
        await hub.close()
