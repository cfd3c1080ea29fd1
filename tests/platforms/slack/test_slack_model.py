"""Model and effort on Slack: real slack-bolt/slack-sdk against the Slack double, the real CLI on the model double.

`/flower model=… effort=… <task>` starts a run whose requests carry both and whose status card shows them;
`/flower model <name>` while its question waits switches the model from the next request; a bad effort is
refused to the person alone and changes nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conftest import scenario_of
from tests.support.slack_double import SlackDouble
from tests.support.slack_support import C1, root_of, slack_bot

OPUS, SONNET = "claude-opus-4-6", "claude-sonnet-4-6"


def sent(md: Any) -> list[tuple[str, Any]]:
    return [(r.body["model"], (r.body.get("output_config") or {}).get("effort"))
            for r in md.model_requests() if r.body.get("tools")]


async def test_model_and_effort_from_the_command_and_while_a_question_waits(double_factory: Any, cli_home: Path,
                                                                           tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "after_end": "Going with {last_tool_result}.", "turn": [
        {"say": "One question.", "call": [{"tool": "mcp__human__ask",
                                            "input": {"question": "Tabs or spaces?", "options": ["tabs", "spaces"]}}]},
    ]}))
    async with SlackDouble(names={"UALICE": "Alice"}) as double, slack_bot(tmp_path, md, cli_home, double) as bot:
        assert await double.slash("/flower", f"model={OPUS} effort=low pick one", user="UALICE", channel=C1) is None
        card = await double.wait_for(lambda d: d.roots(C1) and d.find(C1, root_of(d).ts,
                                                                      lambda m: "Tabs or spaces?" in m.body()
                                                                      and bool(m.buttons())))
        assert sent(md) == [(OPUS, "low")]
        await double.wait_for(lambda d: any(f"{OPUS} · effort low" in f for f in root_of(d).fields()))

        assert await double.slash("/flower", "effort extreme", user="UALICE", channel=C1) is None
        said = await double.wait_for(lambda d: d.ephemerals_for("UALICE") or [r["text"] for r in d.responses])
        assert "Unknown effort" in said[0]
        assert await double.slash("/flower", f"model {SONNET}", user="UALICE", channel=C1) is None
        await double.wait_for(lambda d: any(SONNET in f for f in root_of(d).fields()))
        [run] = bot.store.list_runs()
        assert bot.hub.query.model(run.run_id).model == SONNET  # type: ignore[union-attr]

        await double.click(card, "spaces", user="UALICE")
        await bot.hub.query.wait(run.run_id)
        assert sent(md)[1:] and {m for m, _ in sent(md)[1:]} == {SONNET}
