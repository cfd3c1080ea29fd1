"""Tool approvals on Slack: real slack-bolt/slack-sdk against the Slack double, the real CLI on the model double.

`/flower approve=bash <task>` makes the agent's Bash call a 🔐 card in the run's thread; Alice's
"Allow once" click runs the command once, the card is edited to say who allowed it, and a malformed
approve list is refused before anything starts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bots.flows import single_flow
from tests.conftest import scenario_of
from tests.support.slack_double import Msg, SlackDouble
from tests.support.slack_support import C1, root_of, slack_bot

EFFECT = "echo ran >> effect.txt; echo out=42"


def approval(double: SlackDouble, root: str, *, open_: bool = True) -> Msg | None:
    return double.find(C1, root, lambda m: ("wants to run Bash" in m.header()) == open_ and "Bash" in m.header()
                       and EFFECT in m.body() and bool(m.buttons()) == open_)


async def test_approve_bash_asks_on_a_card_and_allow_once_runs_it_once(double_factory: Any, cli_home: Path,
                                                                       tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "turn": [
        {"say": "Running.", "call": [{"tool": "Bash", "input": {"command": EFFECT}}]},
        {"say": "Saw: {last_tool_result}"}]}))
    home = tmp_path / "home"  # the Bash tool sources the user's shell config: give it an empty HOME
    home.mkdir()
    async with SlackDouble(names={"UALICE": "Alice"}) as double, \
            slack_bot(tmp_path, md, cli_home, double, factory=single_flow,
                      env={**md.env(cli_home), "HOME": str(home)}) as bot:
        refused = await double.slash("/flower", "approve=Bash( run it", user="UALICE", channel=C1)
        said = await double.wait_for(lambda d: d.ephemerals_for("UALICE") or [r["text"] for r in d.responses])
        assert refused is None and "Bad approval list" in said[0] and not bot.store.list_runs()
        assert await double.slash("/flower", "approve=bash run it", user="UALICE", channel=C1) is None
        card = await double.wait_for(lambda d: d.roots(C1) and approval(d, root_of(d).ts))
        assert card.header() == "🔐 The agent wants to run Bash"
        assert [b["text"]["text"] for b in card.buttons()] == ["Allow once", "Allow Bash for this run", "Deny…"]
        root = root_of(double)
        await double.wait_for(lambda d: "Waiting for approval" in root_of(d).header())
        [run] = bot.store.list_runs()
        assert not (Path(run.workspace) / "effect.txt").exists()

        await double.click(card, "Allow once", user="UALICE")
        settled = await double.wait_for(lambda d: approval(d, root.ts, open_=False))
        assert settled.header() == "✅ Bash allowed once by Alice"
        live = await bot.hub.query.wait(run.run_id)
        assert live is not None and live.outcome is not None and live.outcome.state == "done"
        assert (Path(run.workspace) / "effect.txt").read_text() == "ran\n"
        assert md.model_requests()[-1].last_tool_result == "out=42"
