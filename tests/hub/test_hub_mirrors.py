"""One run, many places (the hub's side): follow/unfollow, the web page's copy of every run, an ask
settled everywhere with who and where, the owner's DM, a 429 storm in one place only, mail receipts
where the mail was written, and mirrors kept across a restart. Real SDK + CLI on the model double;
three recording in-memory surfaces stand for Slack, Discord and the web page."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from adapters.memory_surface import MemorySurface
from adapters.platform import ThreadRef
from adapters.state import ChannelPolicy, MemoryStateStore, SQLiteStateStore
from tests.conftest import scenario_of
from tests.support.drive import drive
from tests.support.hub_support import BACK_NOTE, INBOX, Watch, ask_call, button, make_hub, transcript_has

HOME = ThreadRef("chat", "C1", "t1")
FOLLOW = ThreadRef("other", "G7", "t9")


def web_of(run_id: str) -> ThreadRef:
    return ThreadRef("web", "page", run_id)


def card_in(surface: MemorySurface, thread: ThreadRef, key: str) -> Any:
    found = [p.msg for p in surface.messages.values() if p.thread == thread and p.msg.key == key]
    return found[0] if found else None


def texts(surface: MemorySurface, thread: ThreadRef) -> list[str]:
    return [p.msg.text for p in surface.messages.values() if p.thread == thread]


def surfaces() -> tuple[MemorySurface, MemorySurface, MemorySurface]:
    return MemorySurface(name="chat", dm=True), MemorySurface(name="other"), MemorySurface(name="web")


async def test_a_run_in_three_places(double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "after_end": "Done: {last_tool_result}", "turn": [
        {"say": "Colour first.", "call": [ask_call("Which colour?", ["red", "blue"])]},
        {"say": "Colour {last_tool_result}.", "call": [ask_call("Which size?", ["S", "L"])]},
        {"say": "Size {last_tool_result}.", "call": [ask_call("Which shape?", ["round", "square"])]},
        {"say": "Shape {last_tool_result}.", "call": [{"tool": INBOX, "input": {}}]},
        {"say": "Inbox: {last_tool_result}", "call": [ask_call("Finish?", ["yes"])]},
    ]}))
    chat, other, web = surfaces()
    store = MemoryStateStore()
    store.set_channel_policy("chat:C1", ChannelPolicy(responders={"bob"}))
    watches = {s.name: Watch(s) for s in (chat, other, web)}
    hub = make_hub(tmp_path, md, cli_home, chat, store, dm_after_s=0.2)
    hub.surfaces.update({"other": other, "web": web})
    hub.mirrors.auto.append(lambda record: web_of(record.run_id))  # what the web front end registers

    run = (await drive(hub).start("colours", HOME, "ana")).run_id
    await watches["web"].until(lambda s: card_in(s, web_of(run), "ask:1-q1") is not None)
    assert card_in(chat, HOME, "ask:1-q1").buttons

    # Following needs the right to act on the run; then the status card and open card show at once.
    assert not (await drive(hub).follow(run, FOLLOW, "mallory")).ok
    assert store.mirrors_of(run) == [m for m in store.mirrors_of(run) if m.thread == web_of(run)]
    followed = await drive(hub).follow(run, FOLLOW, "bob")
    assert followed.ok and not (await drive(hub).follow(run, FOLLOW, "bob")).ok  # already shown there
    await watches["other"].until(lambda s: card_in(s, FOLLOW, "ask:1-q1") is not None)
    assert card_in(other, FOLLOW, "status") is not None

    # Answered on the web: closed everywhere, naming who and where; a late click elsewhere changes nothing.
    q1_web = card_in(web, web_of(run), "ask:1-q1")
    done = await drive(hub).handle_action(button(q1_web, "blue"), "ana", delivery_id="w1", where=web_of(run))
    assert done.ok
    for name, thread in (("chat", HOME), ("other", FOLLOW), ("web", web_of(run))):
        closed = await watches[name].until(lambda s, t=thread: (c := card_in(s, t, "ask:1-q1")) is not None
                                           and not c.buttons and c)
        assert closed.title == "✅ Answered by ana on web", (name, closed.title)
    # (the same button id sits on the stale card in every place)
    late = await drive(hub).handle_action(button(q1_web, "red"), "bob", delivery_id="o1", where=FOLLOW)
    assert late.duplicate and not late.ok and "answered by ana" in late.message

    # The second question waits: the owner gets it as a direct message, whose button answers it.
    dm = ThreadRef("chat", "dm-ana", "")
    dm_card = await watches["chat"].until(lambda s: (c := card_in(s, dm, "ask:1-q2")) is not None and c.buttons
                                          and c)
    assert "waiting on this question" in dm_card.text
    assert "waiting on this question" not in card_in(chat, HOME, "ask:1-q2").text  # the note is the DM's own
    assert texts(chat, dm) == [dm_card.text]  # only the card: no prose, no status in the DM
    assert (await drive(hub).handle_action(button(dm_card, "L"), "ana", delivery_id="dm1", where=dm)).ok
    await watches["other"].until(lambda s: (c := card_in(s, FOLLOW, "ask:1-q2")) is not None and not c.buttons)

    # Mail written in the followed thread: its receipt shows there, not in the run's other places.
    q3 = await watches["chat"].until(lambda s: (c := card_in(s, HOME, "ask:1-q3")) is not None and c)
    mail = await drive(hub).said(FOLLOW, "bob", "also add a legend", origin="msg-77")
    assert mail is not None and mail.ok
    receipt = await watches["other"].until(lambda s: next((p.msg for p in s.messages.values()
                                                           if p.thread == FOLLOW and p.msg.kind == "receipt"), None))
    assert receipt.origin == "msg-77" and not [p for p in chat.messages.values() if p.msg.kind == "receipt"]

    # A 429 storm in one place holds back only that place.
    await watches["other"].until(lambda s: card_in(s, FOLLOW, "ask:1-q3") is not None)
    other.storm(1, retry_after=3.0)
    assert (await drive(hub).handle_action(button(q3, "round"), "bob", delivery_id="c3", where=HOME)).ok
    await watches["chat"].until(lambda s: any("Shape round." in t for t in texts(s, HOME)))
    assert not any("Shape round." in t for t in texts(other, FOLLOW)) and other.counts["failed"] == 1
    await watches["other"].until(lambda s: any("Shape round." in t for t in texts(s, FOLLOW)))

    q4 = await watches["chat"].until(lambda s: (c := card_in(s, HOME, "ask:1-q4")) is not None and c)
    assert "also add a legend" in q4.text or any("also add a legend" in t for t in texts(chat, HOME)
                                                  if t.startswith("Inbox:"))
    assert (await drive(hub).unfollow(FOLLOW, "bob")).ok
    assert not (await drive(hub).unfollow(FOLLOW, "bob")).ok
    assert (await drive(hub).handle_action(button(q4, "yes"), "ana", delivery_id="c4", where=HOME)).ok
    await hub.query.wait(run)
    assert any("Stopped following" in t for t in texts(other, FOLLOW))
    assert chat.thread(HOME, kind="summary") and web.thread(web_of(run), kind="summary")
    assert not other.thread(FOLLOW, kind="summary")  # it stopped following before the end


async def test_mirrors_survive_a_restart(double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "after_end": "Resumed.", "turn": [
        {"say": "Asking.", "call": [ask_call("Go on?", ["yes", "no"])]},
    ]}))
    chat, other, _ = surfaces()
    watch = Watch(other)
    store = SQLiteStateStore(tmp_path / "state.db")
    hub = make_hub(tmp_path, md, cli_home, chat, store)
    hub.surfaces["other"] = other
    run = (await drive(hub).start("keep mirrors", HOME, "ana")).run_id
    assert (await drive(hub).follow(run, FOLLOW, "ana")).ok
    await watch.until(lambda s: card_in(s, FOLLOW, "ask:1-q1") is not None)
    await transcript_has(hub.live[run], "ask", "Go on?")
    await hub.close()
    store.close()

    store = SQLiteStateStore(tmp_path / "state.db")
    hub = make_hub(tmp_path, md, cli_home, chat, store)
    hub.surfaces["other"] = other
    assert await hub.recover() == []
    await watch.until(lambda s: any(BACK_NOTE in t for t in texts(s, FOLLOW)))  # the mirror hears it came back
    assert hub.query.run_in(FOLLOW) == run and run in hub.live
    await hub.close()
    store.close()
