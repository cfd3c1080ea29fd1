"""HumanChannel through the real SDK + bundled CLI + in-process MCP server, against the model double."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

from claude_agent_sdk import AssistantMessage, ClaudeAgentOptions, ResultMessage, TextBlock, query

from flower_core.events import Event
from flower_core.human import DECLINED, INBOX_EMPTY, OVER_BUDGET, TIMEOUT, HumanChannel
from tests.conftest import scenario_of

ASK = "mcp__human__ask"
INBOX = "mcp__human__inbox"


def ask_call(question: str, options: list[str] | None = None) -> dict[str, Any]:
    args: dict[str, Any] = {"question": question}
    if options is not None:
        args["options"] = options
    return {"tool": ASK, "input": args}


async def run(md: Any, cli_home: Path, workspace: Path, ch: HumanChannel, prompt: str = "go") -> list[Any]:
    opts = ClaudeAgentOptions(env=md.env(cli_home), cwd=str(workspace), max_turns=6,
                              mcp_servers=ch.mcp_servers(), allowed_tools=list(HumanChannel.TOOLS))
    return [m async for m in query(prompt=prompt, options=opts)]


def final_text(msgs: list[Any]) -> str:
    said = [b.text for m in msgs if isinstance(m, AssistantMessage) for b in m.content if isinstance(b, TextBlock)]
    return said[-1] if said else ""


def finished_ok(msgs: list[Any]) -> bool:
    return isinstance(msgs[-1], ResultMessage) and not msgs[-1].is_error


def states(events: list[Event]) -> list[tuple[str, str]]:
    return [(e.payload["id"], e.payload["state"]) for e in events if e.kind == "ask"]


async def test_answer_from_another_thread_reaches_the_model(double_factory: Any, cli_home: Path,
                                                            tmp_path: Path) -> None:
    events: list[Event] = []
    asked = threading.Event()
    log = tmp_path / "notes" / "qa.md"
    outcomes: list[tuple[str, bool, bool]] = []

    def on_event(ev: Event) -> None:
        events.append(ev)
        if ev.payload.get("state") == "asked":
            asked.set()

    ch = HumanChannel(on_event=on_event, log_path=log, max_asks=3)

    def ui_thread() -> None:
        if not asked.wait(60):
            return
        ask_id = ch.pending()[0].id
        first = ch.answer(ask_id, "use blue")
        second = ch.answer(ask_id, "use red")  # a second answer changes nothing
        outcomes.append((threading.current_thread().name, first, second))

    md = await double_factory(scenario_of({"name": "main", "turn": [
        {"say": "Asking.", "call": [ask_call("Which colour?", ["red", "blue"])]},
        {"say": "The human said: {last_tool_result}"},
    ]}))
    t = threading.Thread(target=ui_thread, name="ui")
    t.start()
    msgs = await run(md, cli_home, tmp_path, ch)
    await asyncio.to_thread(t.join, 30)

    assert outcomes == [("ui", True, False)]
    assert final_text(msgs) == "The human said: use blue"
    assert md.model_requests()[-1].last_tool_result == "use blue"
    assert states(events) == [("q1", "asked"), ("q1", "answered")]
    first, last = events
    assert first.text == "Which colour?" and first.payload["options"] == ["red", "blue"]
    assert first.payload["remaining"] == 2 and first.raw is ch.asks[0]
    assert last.payload["answer"] == "use blue" and ch.asks[0].state == "answered"
    assert ch.pending() == [] and ch.remaining == 2
    text = log.read_text(encoding="utf-8")
    assert "Which colour?" in text and "use blue" in text and "red / blue" in text


async def test_pull_mode_answers_then_declines(double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    events: list[Event] = []
    ch = HumanChannel(on_event=events.append, timeout_s=None)
    pulled: list[str] = []

    async def answerer() -> None:
        first = await ch.next_ask()
        assert first is not None
        pulled.append(first.question)
        assert ch.answer(first.id, "port 8080")
        second = await ch.next_ask()
        assert second is not None
        pulled.append(second.question)
        assert ch.decline(second.id, "decide yourself")

    md = await double_factory(scenario_of({"name": "main", "turn": [
        {"say": "Q1", "call": [ask_call("Which port?")]},
        {"say": "Q2", "call": [ask_call("Which licence?", ["MIT", "GPL"])]},
        {"say": "Done: {last_tool_result}"},
    ]}))
    task = asyncio.create_task(answerer())
    msgs = await run(md, cli_home, tmp_path, ch)
    await asyncio.wait_for(task, 10)

    assert pulled == ["Which port?", "Which licence?"]
    reqs = md.model_requests()
    assert reqs[1].last_tool_result == "port 8080"
    assert DECLINED in reqs[2].last_tool_result and "decide yourself" in reqs[2].last_tool_result
    assert finished_ok(msgs)
    assert states(events) == [("q1", "asked"), ("q1", "answered"), ("q2", "asked"), ("q2", "declined")]
    assert events[-1].payload["answer"] == "decide yourself"
    assert await ch.next_ask(timeout=0.05) is None


async def test_short_timeout_gives_the_fixed_text(double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    events: list[Event] = []
    log = tmp_path / "qa.md"
    ch = HumanChannel(on_event=events.append, timeout_s=0.3, log_path=log)
    md = await double_factory(scenario_of({"name": "main", "turn": [
        {"say": "Asking.", "call": [ask_call("Anyone there?")]},
        {"say": "Got: {last_tool_result}"},
    ]}))
    msgs = await run(md, cli_home, tmp_path, ch)
    assert md.model_requests()[-1].last_tool_result == TIMEOUT
    assert final_text(msgs) == f"Got: {TIMEOUT}"
    assert states(events) == [("q1", "asked"), ("q1", "timeout")]
    assert ch.asks[0].waited_s >= 0.3 and ch.answer("q1", "too late") is False
    assert "Anyone there?" in log.read_text(encoding="utf-8")


async def test_unattended_timeout_zero_and_a_raising_ui(double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    seen: list[Event] = []

    def broken_ui(ev: Event) -> None:
        seen.append(ev)
        raise RuntimeError("the UI fell over")

    ch = HumanChannel(on_event=broken_ui, timeout_s=0)
    md = await double_factory(scenario_of({"name": "main", "turn": [
        {"say": "Asking.", "call": [ask_call("Deploy now?")]},
        {"say": "Carrying on."},
    ]}))
    msgs = await run(md, cli_home, tmp_path, ch)
    assert md.model_requests()[-1].last_tool_result == TIMEOUT
    assert finished_ok(msgs) and final_text(msgs) == "Carrying on."
    assert states(seen) == [("q1", "timeout")]  # no "asked" event
    assert len(ch.ui_errors) == 1 and isinstance(ch.ui_errors[0], RuntimeError)


async def test_no_budget_refuses_and_bad_questions_are_explained(double_factory: Any, cli_home: Path,
                                                                 tmp_path: Path) -> None:
    events: list[Event] = []
    ch = HumanChannel(on_event=events.append, max_asks=0)
    md = await double_factory(scenario_of({"name": "main", "turn": [
        {"say": "Blank.", "call": [ask_call("   ")]},
        {"say": "Real.", "call": [ask_call("May I delete the cache?")]},
        {"say": "OK."},
    ]}))
    msgs = await run(md, cli_home, tmp_path, ch)
    reqs = md.model_requests()
    assert "question" in reqs[1].last_tool_result and "提问无效" in reqs[1].last_tool_result
    assert reqs[2].last_tool_result == OVER_BUDGET
    assert finished_ok(msgs)
    assert states(events) == [("q1", "invalid"), ("q2", "over_budget")]
    assert ch.remaining == 0 and ch.pending() == []


async def test_inbox_delivers_mail_sent_from_another_thread(double_factory: Any, cli_home: Path,
                                                            tmp_path: Path) -> None:
    events: list[Event] = []
    brief = tmp_path / "notes" / "brief.md"
    brief.parent.mkdir()
    brief.write_text("# Brief\n\nCount the files.\n", encoding="utf-8")
    ch = HumanChannel(on_event=events.append, amend_path=brief)
    md = await double_factory(scenario_of({"name": "main", "turn": [
        {"say": "Checking mail.", "call": [{"tool": INBOX, "input": {}}]},
        {"say": "Again.", "call": [{"tool": INBOX, "input": {}}]},
        {"say": "Mail was: {last_tool_result}"},
    ]}))
    servers = ch.mcp_servers()  # binds the channel to this loop, as a Runtime does at run start
    sent: list[Any] = []
    t = threading.Thread(target=lambda: sent.append(ch.send("also report the total bytes")))
    t.start()
    t.join()
    assert ch.pending_mail() == sent
    opts = ClaudeAgentOptions(env=md.env(cli_home), cwd=str(tmp_path), max_turns=6, mcp_servers=servers,
                              allowed_tools=list(HumanChannel.TOOLS))
    msgs = [m async for m in query(prompt="go", options=opts)]

    reqs = md.model_requests()
    assert "also report the total bytes" in reqs[1].last_tool_result and "[m1]" in reqs[1].last_tool_result
    assert reqs[2].last_tool_result == INBOX_EMPTY
    assert finished_ok(msgs)
    mail_events = [(e.payload["id"], e.payload["state"], e.payload["amended"]) for e in events
                   if e.payload.get("kind") == "mail"]
    assert mail_events == [("m1", "queued", str(brief)), ("m1", "delivered", str(brief))]  # where it went
    assert ch.pending_mail() == [] and ch.mail[0].state == "delivered"
    text = brief.read_text(encoding="utf-8")
    assert text.startswith("# Brief\n\nCount the files.\n") and text.rstrip().endswith("also report the total bytes")
