"""Slack: a click on a card that no longer takes an answer is always answered, with the hub's line.

The real AsyncApp + Socket Mode against the Slack double, the real SDK + CLI against the model double, and
a second bot (a new hub over the same state: SQLite store, run directories) standing in for a restart.
Bob's screen still shows the buttons of every card; each of his clicks gets its own ephemeral line, the
same line again when he clicks again (never "said a moment ago, so nothing").
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from adapters.state import SQLiteStateStore
from tests.conftest import scenario_of
from tests.support.drive import drive
from tests.support.hub_support import ask_call, transcript_has
from tests.support.slack_double import SlackDouble
from tests.support.slack_support import C1, card, root_of, slack_bot


def scenario() -> Any:
    """Two questions in one session; the second one waits across the restart."""
    return scenario_of({"name": "main", "after_end": "Done.", "turn": [
        {"say": "One question first.", "call": [ask_call("Tabs or spaces?", ["tabs", "spaces"])]},
        {"say": "Got {last_tool_result}. One more.", "call": [ask_call("Dark or light?", ["dark", "light"])]},
    ]})


NAMES = {"UALICE": "Alice", "UBOB": "Bob"}
ANSWERED = "That question is already settled (answered by Alice)."
# Names are not kept across a restart (adapters/people.py): a new process names Alice by her id until she acts.
ANSWERED_BY_ID = "That question is already settled (answered by UALICE)."
ENDED = "This run has ended (stopped); its questions are closed."


async def click_told(double: SlackDouble, payload: dict[str, Any], user: str) -> str:
    """Send one click and return the ephemeral line it got (waits for exactly one more)."""
    before = len(double.ephemerals_for(user))
    await double.send("interactive", payload)
    await double.wait_for(lambda d: len(d.ephemerals_for(user)) > before, timeout=30)
    told = double.ephemerals_for(user)[before:]
    assert len(told) == 1, told
    return told[0]


async def test_stale_clicks_are_answered_before_and_after_a_restart(double_factory: Any, cli_home: Path,
                                                                    tmp_path: Path) -> None:
    md = await double_factory(scenario())
    async with SlackDouble(names=NAMES) as double:
        store = SQLiteStateStore(tmp_path / "state.db")
        async with slack_bot(tmp_path, md, cli_home, double, store=store) as bot:
            assert await double.slash("/flower", "pick a style", user="UALICE", channel=C1) is None
            # (the double edits its messages in place: keep the cards as Bob's screen shows them, open)
            q1 = copy.deepcopy(await double.wait_for(lambda d: d.roots(C1) and card(d, C1, root_of(d).ts,
                                                                                    "Tabs or spaces?")))
            root = root_of(double).ts
            run = bot.store.run_for_thread(bot.frontend.ctx.thread(C1, root))
            assert run is not None
            await double.click(q1, "tabs", user="UALICE")
            await double.wait_for(lambda d: card(d, C1, root, "Tabs or spaces?", open_=False))
            # Answered elsewhere: told who, and told again on a second click a moment later.
            assert await click_told(double, double.click_payload(q1, "spaces", user="UBOB"), "UBOB") == ANSWERED
            assert await click_told(double, double.click_payload(q1, "spaces", user="UBOB"), "UBOB") == ANSWERED
            q2 = copy.deepcopy(await double.wait_for(lambda d: card(d, C1, root, "Dark or light?")))
            await transcript_has(bot.hub.live[run], "ask", "Dark or light?")
        store.close()

        # A new process over the same state: the run comes back, its second question on its old card.
        async with slack_bot(tmp_path, md, cli_home, double, store=SQLiteStateStore(tmp_path / "state.db")) as bot:
            await double.wait_for(lambda d: root_of(d).header().startswith("🅿️"))
            # A card from before the restart, of the run the restart brought back.
            assert await click_told(double, double.click_payload(q1, "spaces", user="UBOB"), "UBOB") == ANSWERED_BY_ID
            assert (await drive(bot.hub).stop(run, "UALICE")).ok
            await bot.hub.query.wait(run)
            await double.wait_for(lambda d: card(d, C1, root, "Dark or light?", open_=False))
            # The run has ended: its open question closed with it.
            assert await click_told(double, double.click_payload(q2, "dark", user="UBOB"), "UBOB") == ENDED
            assert await click_told(double, double.click_payload(q2, "light", user="UBOB"), "UBOB") == ENDED
            assert await click_told(double, double.click_payload(q1, "tabs", user="UBOB"), "UBOB") == ANSWERED_BY_ID
            # Alice, who answered q1, clicking it again is told too.
            assert await click_told(double, double.click_payload(q1, "tabs", user="UALICE"), "UALICE") == ANSWERED
        status = bot.store.get_run(run)
        assert status is not None and status.status == "stopped"
        bot.store.close()
    assert all(payload is None for payload in double.acks.values())  # every click acked, nothing else said there
