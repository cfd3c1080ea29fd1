"""The cost cap on the hub: the real SDK + CLI on the model double, the in-memory surface.

A side question (the oracle) pushes the run over its cap while the main thread sits in a long tool
call: the step stops cooperatively at that boundary, the budget card appears, the status card shows
spent / cap in the danger tone, "+$20" resumes the same session and the run finishes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from adapters.hub import RunOptions, RunPlan, default_factory
from adapters.memory_surface import MemorySurface
from adapters.platform import OutMessage
from adapters.state import MemoryStateStore
from flower_core import AgentSpec, HumanChannel, Step, Workflow
from tests.conftest import scenario_of
from tests.support.drive import drive
from tests.support.hub_support import QUICK, THREAD, Watch, button, hub_of, make_hub
from tests.support.runtime_support import FAST

COSTLY = {"input_tokens": 1000, "output_tokens": 40000}  # $0.603 at Sonnet prices
SLOW = 'python3 -c "import time; time.sleep(30)"'  # the CLI refuses a bare `sleep`


def budget_flow(plan: RunPlan) -> Workflow:
    ch = HumanChannel(timeout_s=60)
    spec = AgentSpec(name="worker", allowed_tools=["Read", "Bash"], channel=ch, max_turns=12)
    return Workflow([Step("work", spec, f"work: {plan.task}")], channel=ch, budget=plan.budget_usd)


def fields(msg: OutMessage) -> dict[str, str]:
    return dict(msg.fields)


async def test_a_side_question_over_the_cap_pauses_the_run_and_plus_20_resumes_it(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory(scenario_of(
        {"name": "oracle", "match": "Side question", "turn": [{"say": "It is sleeping.", "usage": COSTLY}]},
        {"name": "main", "after_end": "Back: {last_user_text}", "turn": [
            {"say": "Looking.", "call": [{"tool": "Read", "input": {"file_path": "notes.md"}}]},
            {"say": "Waiting a while.", "call": [{"tool": "Bash", "input": {"command": SLOW, "description": "wait"}}]},
            {"say": "Back: {last_user_text}"},
        ]}))
    surface, store = MemorySurface(), MemoryStateStore()
    watch = Watch(surface)
    env = {**md.env(cli_home), "ANTHROPIC_MODEL": "claude-sonnet-4-5"}  # every role at Sonnet prices
    hub = hub_of(surface, store, root=tmp_path / "runs", env=env, factory=budget_flow, view=QUICK,
              runtime_options={"resilience": FAST})
    started = await drive(hub).start("wait for it", THREAD, "alice", options=RunOptions(budget_usd=0.5))
    assert started.ok
    run = started.run_id

    status = await watch.until(lambda s: _status(s, lambda m: "Budget" in fields(m)))
    assert fields(status)["Budget"] == "$0.0000 / $0.5000 (0%)" and status.tone == ""
    await md.wait_for(lambda reqs: any(r.conversation == "main" and r.turn == 1 for r in reqs), timeout=60)
    assert (await drive(hub).oracle(run, "what is it doing?", "alice")).ok

    card = await watch.card("ask:1-q1")
    assert card.title == "💰 Budget reached" and card.tone == "danger" and card.important
    assert [b.label for b in card.buttons] == ["+$5 (cap $5.50)", "+$20 (cap $20.50)", "Stop", "Answer in words…"]
    assert fields(card)["Side questions"] == "$0.6030 (included)" and fields(card)["Cap"] == "$0.5000"
    danger = await watch.until(lambda s: _status(s, lambda m: m.tone == "danger"))
    assert fields(danger)["Side questions"] == "$0.6030" and fields(danger)["Budget"].endswith("⛔")
    # The main thread had not finished its long tool call: it was stopped at that boundary, not braked later.
    assert [r.turn for r in md.model_requests("main")] == [0, 1]

    assert (await drive(hub).handle_action(button(card, "+$20 (cap $20.50)"), "alice", delivery_id="b1")).ok
    live = await hub.query.wait(run)
    assert live is not None and live.outcome is not None and live.outcome.state == "done"

    settled = [p.msg for p in surface.find("ask:1-q1") if not p.msg.buttons][-1]
    assert settled.title == "💰 Budget answered by alice: +$20"
    notices = [m.text for m in surface.thread(kind="notice")]
    assert any(t.startswith("💰 Cost cap raised to $20.50") for t in notices)
    resumed = md.model_requests("main")[-1]
    assert "tool use was rejected" in resumed.last_tool_result  # the long call was cut, never finished
    assert "raised the cap to $20.50" in resumed.last_user_text
    prose = [m.text for m in surface.thread(kind="prose")]
    assert prose[-1].startswith("Back: The run paused at its cost cap")
    summary = surface.thread(kind="summary")[-1]
    assert summary.title == "✅ Finished" and fields(summary)["Side questions"] == "$0.6030"
    assert fields(summary)["Budget"].startswith("$0.6") and "/ $20.50" in fields(summary)["Budget"]
    final = _status(surface, lambda m: True)
    assert final is not None and final.tone == "success" and not final.buttons  # the ending's tone, not the cap's


async def test_a_budget_of_zero_is_refused_before_the_run_starts(double_factory: Any, cli_home: Path,
                                                                 tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "turn": [{"say": "never"}]}))
    surface, store = MemorySurface(), MemoryStateStore()
    hub = make_hub(tmp_path, md, cli_home, surface, store, factory=default_factory)
    result = await drive(hub).start("build me a thing", THREAD, "alice", options=RunOptions(budget_usd=0))
    assert not result.ok and "refusing to start" in result.message and "cost cap of $0" in result.message
    assert any("refusing to start" in text for text in surface.notices_for("alice"))
    assert hub.live == {} and md.requests == []


def _status(surface: MemorySurface, pred: Any) -> OutMessage | None:
    found = [p.msg for p in surface.find("status") if p.msg.key == "status"]
    return found[-1] if found and pred(found[-1]) else None
