"""Slack end to end: the real AsyncApp + Socket Mode against the Slack double, the real SDK + CLI
against the model double, one run through everything a team does in its thread."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from adapters.state import ChannelPolicy
from tests.conftest import scenario_of
from tests.support.hub_support import INBOX, ask_call
from tests.support.slack_double import BOT_USER, Msg, SlackDouble
from tests.support.slack_support import C1, card, root_of, slack_bot

NAMES = {"UALICE": "Alice", "UBOB": "Bob", "UMALLORY": "Mallory"}
# Long enough that an interrupt sent after this turn was requested lands inside it, even on a busy machine.
HEARD = {"say": "Heard: {last_user_text}", "delay_s": 4.0}


def scenario() -> Any:
    return scenario_of(
        {"name": "oracle", "match": "Side question", "turn": [{"say": "We are waiting on the third question."}]},
        {"name": "main", "after_end": "Heard: {last_user_text}", "turn": [
            {"say": "Let me ask. Ping <!channel> and <@U999> and @here, harmlessly.",
             "call": [ask_call("Which colour?", ["red", "blue"])]},
            {"say": "Colour: {last_tool_result}.", "call": [ask_call("Which shape?", ["round", "square"])]},
            {"say": "Shape: {last_tool_result}.", "call": [ask_call("Indentation?", ["spaces"])]},
            {"say": "Indentation: {last_tool_result}. Checking the inbox.", "call": [{"tool": INBOX, "input": {}}]},
            {"say": "Inbox: {last_tool_result}", "call": [{"tool": "Read", "input": {"file_path": "notes.md"}}]},
            HEARD, HEARD, HEARD, HEARD,
        ]})


def texts(double: SlackDouble, root: str) -> list[str]:
    return [m.body() for m in double.thread(C1, root)[1:]]


async def test_a_run_in_a_channel_thread_from_start_to_summary(double_factory: Any, cli_home: Path,
                                                               tmp_path: Path) -> None:
    md = await double_factory(scenario())
    async with SlackDouble(names=NAMES, echo_bot_messages=True) as double, \
            slack_bot(tmp_path, md, cli_home, double) as bot:
        bot.store.set_channel_policy(f"slack:{C1}", ChannelPolicy(responders={"UBOB"}))

        # /flower: the status card is the channel's root message; the run lives in its thread.
        assert await double.slash("/flower", "pick a colour", user="UALICE", channel=C1) is None
        q1 = await double.wait_for(lambda d: d.roots(C1) and card(d, C1, root_of(d).ts, "Which colour?"))
        root = root_of(double)
        run = bot.store.run_for_thread(bot.frontend.ctx.thread(C1, root.ts))
        assert run is not None and len(double.roots(C1)) == 1
        assert [b["text"]["text"] for b in q1.buttons()] == ["red", "blue", "Answer in words…", "Decline"]
        assert "Reply `q1: …`" in q1.body()
        status = await double.wait_for(lambda d: "Waiting" in root_of(d).header() and root_of(d))
        assert "started by alice" in str(status.blocks).lower() and [b["text"]["text"] for b in status.buttons()] == [
            "Interrupt…", "Ask the oracle…", "Stop"]
        assert "confirm" in status.buttons()[0]  # interrupting warns about a subagent's lost work

        # Nobody's mention pings: the agent's <!channel>, <@U999> and @here arrive defused.
        first = await double.wait_for(lambda d: next((t for t in texts(d, root.ts) if "Let me ask" in t), None))
        assert "<!channel>" not in first and "<@U999>" not in first and "@here" not in first

        # An outsider's click: refused to them alone, the card stays open.
        await double.click(q1, "blue", user="UMALLORY")
        await double.wait_for(lambda d: d.ephemerals_for("UMALLORY"))
        assert "only the person who started this run" in double.ephemerals_for("UMALLORY")[0]
        assert card(double, C1, root.ts, "Which colour?") is not None

        # Alice clicks blue; the envelope arrives twice and the same click again in a new envelope.
        click = double.click_payload(q1, "blue", user="UALICE")
        late = double.click_payload(q1, "red", user="UBOB")  # Bob's screen still shows the buttons
        await double.send("interactive", click, envelope_id="env-blue")
        await double.send("interactive", click, envelope_id="env-blue")
        await double.send("interactive", click)
        done = await double.wait_for(lambda d: card(d, C1, root.ts, "Which colour?", open_=False))
        assert done.header() == "✅ Answered by Alice" and "Answer: blue" in done.body() and not done.buttons()
        # Bob clicks red late: told who answered, nothing changes.
        await double.send("interactive", late)
        await double.wait_for(lambda d: d.ephemerals_for("UBOB"))
        assert "already settled (answered by Alice)" in double.ephemerals_for("UBOB")[0]

        # q2 by a thread reply with its key.
        await double.wait_for(lambda d: card(d, C1, root.ts, "Which shape?"))
        await double.say(C1, "q2: square", user="UBOB", thread_ts=root.ts)
        q2 = await double.wait_for(lambda d: card(d, C1, root.ts, "Which shape?", open_=False))
        assert "Answered by Bob" in q2.header() and "square" in q2.body()

        # q3 in words through the modal; meanwhile mail for the inbox and a side question.
        q3 = await double.wait_for(lambda d: card(d, C1, root.ts, "Indentation?"))
        await double.click(q3, "Answer in words…", user="UALICE")
        view_id = await double.wait_for(lambda d: next(iter(d.views), None))
        assert "Indentation?" in str(double.views[view_id]["blocks"])
        mail = await double.say(C1, "also count bytes", user="UALICE", thread_ts=root.ts)
        await double.wait_for(lambda d: d.reactions.get((C1, mail.ts)) == ["incoming_envelope"])
        await double.say(C1, "?where are we", user="UBOB", thread_ts=root.ts)
        oracle = await double.wait_for(lambda d: d.find(C1, root.ts, lambda m: "waiting on the third" in m.body()))
        assert "Oracle" in oracle.header()
        await double.submit(view_id, user="UALICE", text="tabs please")
        await double.wait_for(lambda d: card(d, C1, root.ts, "Indentation?", open_=False))
        await double.wait_for(lambda d: d.reactions.get((C1, mail.ts)) == ["mailbox_with_mail"])

        # /stop with a message: the agent hears it in the same session.
        await md.wait_for(lambda reqs: any(r.conversation == "main" and r.turn >= 5 for r in reqs), timeout=60)
        assert await double.slash("/stop", "use tabs", user="UALICE", channel=C1) is None
        said = await double.wait_for(lambda d: next((r for r in d.responses if "Interrupted" in r["text"]), None))
        assert "subagent in flight loses" in said["text"]
        await md.wait_for(lambda reqs: any("use tabs" in r.last_user_text for r in reqs), timeout=60)
        # Slack's own Stop button on the agent session interrupts too.
        await double.event({"type": "agent_session_stopped", "channel": C1, "thread_ts": root.ts, "user": "UALICE",
                            "event_ts": "1.0", "streaming_message_ts": []})
        await md.wait_for(lambda reqs: any("pressed Stop in Slack" in r.last_user_text for r in reqs), timeout=60)
        await bot.hub.query.wait(run)

        summary = await double.wait_for(lambda d: d.find(C1, root.ts, lambda m: m.header() == "✅ Finished"))
        assert summary is not None and root_of(double).header().startswith("✅ Done")
        assert next(e["text"] for b in summary.blocks if b["type"] == "context" for e in b["elements"]) == \
            "🟢 finished"  # the ending's mark under the header
        assert any(f.startswith("*Context*\n") and "░" in f for f in root_of(double).fields())  # a bar
        assert not root_of(double).buttons()
        main = md.model_requests("main")
        assert main[1].last_tool_result == "blue" and main[2].last_tool_result == "square"
        assert "tabs please" in main[3].last_tool_result and "also count bytes" in main[4].last_tool_result
        heard = next(r for r in main if "use tabs" in r.last_user_text)
        assert "Which colour?" in json.dumps(heard.body)  # the same session: its history came along
        prose = [t for t in texts(double, root.ts) if t.startswith(("Colour:", "Shape:", "Indentation:", "Inbox:"))]
        assert [p.split(":")[0] for p in prose] == ["Colour", "Shape", "Indentation", "Inbox"]  # in order
        # The agent session followed the run: created with its title, active while asking, closed at the end.
        statuses = [s["status"] for s in double.sessions]
        assert double.sessions[0]["title"] == "pick a colour" and double.sessions[0]["initiator_user_id"] == "UALICE"
        # (flips within a second coalesce: a question asked that fast shows "active" first, never "processing")
        assert statuses[0] in ("processing", "active") and "active" in statuses and statuses[-1] == "closed"
        # The bot's own posts came back as message events and were ignored (no mail from the bot).
        assert all(BOT_USER not in r.last_tool_result for r in main)
        assert not any(m.text.startswith("📨") for m in double.thread(C1, root.ts))  # receipts were reactions
        assert _in_order(double.thread(C1, root.ts), "Let me ask", "Which colour?", "Colour: blue")


def _in_order(thread: list[Msg], *needles: str) -> bool:
    at = [next(i for i, m in enumerate(thread) if n in m.body()) for n in needles]
    return at == sorted(at)
