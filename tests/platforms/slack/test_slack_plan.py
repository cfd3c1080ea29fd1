"""Plan first on Slack: real slack-bolt/slack-sdk against the Slack double, the real SDK + CLI on the model double.

`/flower plan <task>` starts a run in the CLI's plan mode: its early Write is refused, its plan arrives as a
card in the run's thread (Approve and go / Approve, ask before edits / Keep planning…) and the file is written
only after "Approve and go". "Keep planning…" opens the words modal; its words reach the agent and it presents a
new plan on a second card. A plan longer than the card shows is uploaded whole beside it. A late click on a
decided plan card is told, to that person alone, that it is settled.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from adapters.slack.inbound import parse_flower, parse_mention
from adapters.slack.render import render
from adapters.view.card import AskCard
from adapters.view.plan_card import render_plan
from bots.flows import single_flow
from flower_core.human.plan_review import APPROVED, OPTIONS
from tests.conftest import scenario_of
from tests.support.plan_support import BUTTONS, CARD_TITLE, PLAN, PLAN2, turns, workspace
from tests.support.plan_support import tool_results as results
from tests.support.slack_blocks import message_problem, view_problem
from tests.support.slack_double import BOT_USER, Msg, SlackDouble
from tests.support.slack_support import C1, root_of, slack_bot

TITLE = CARD_TITLE
NAMES = {"UALICE": "Alice", "UBOB": "Bob"}


@pytest.mark.parametrize(("text", "kind", "task", "plan"), [
    ("plan write the notes", "start", "write the notes", True),
    ("PLAN fix it", "start", "fix it", True),
    ("plan fix", "start", "fix", True),  # a one-word task after an option, as for `budget=5 fix`
    ("budget=5 plan fix the bug", "start", "fix the bug", True),
    ("plan every weekday at 9:00 triage the issues", "routine", "triage the issues", True),
    ("plan", "usage", "", False),  # plan what?
    ("budget=5 plan", "start", "plan", False),  # alone after the options, `plan` is the task
    ("start plan the release", "start", "plan the release", False),  # a task that begins with "plan"
    ("planning the release", "start", "planning the release", False),
    ("plan=yes fix it", "start", "plan=yes fix it", False),  # not an option spelled like that
])
def test_plan_is_a_bare_word_among_the_options(text: str, kind: str, task: str, plan: bool) -> None:
    cmd = parse_flower(text)
    assert (cmd.kind, cmd.text, cmd.plan) == (kind, task, plan)


@pytest.mark.parametrize(("text", "task", "plan"), [
    ("plan write the notes", "write the notes", True),
    ("status", "status", False),  # a mention starts a run: a subcommand's name is a task
    ("every day at 9:00 triage", "every day at 9:00 triage", False),  # no routines from a mention
    ("budget=x do it", "budget=x do it", False),  # an option it cannot read stays in the task
    ("refactor", "refactor", False),
])
def test_a_mention_takes_the_options_of_flower_and_nothing_else(text: str, task: str, plan: bool) -> None:
    cmd = parse_mention(text)
    assert (cmd.kind, cmd.text, cmd.plan) == ("start", task, plan)


def test_plan_among_other_options_keeps_them() -> None:
    cmd = parse_flower("plan model=claude-opus-4-6 effort=high budget=2 fix the bug")
    assert (cmd.kind, cmd.text, cmd.plan, cmd.model, cmd.effort, cmd.options) == (
        "start", "fix the bug", True, "claude-opus-4-6", "high", {"budget_usd": 2.0})


@pytest.mark.parametrize(("state", "answer"), [("asked", ""), ("answered", OPTIONS[0]), ("answered", "w" * 5000),
                                               ("declined", "w" * 5000), ("cancelled", "")])
def test_the_plan_card_keeps_within_slacks_limits_whatever_its_size(state: str, answer: str) -> None:
    card = AskCard("1-q1", "a1", "Review the plan", list(OPTIONS), state=state, answer=answer, by="U" * 300,
                   note="n" * 3000, kind="plan", facts={"plan": "p" * 20_000, "plan_chars": 20_000})
    blocks, _ = render(render_plan("r1", card))
    assert message_problem([b.to_dict() for b in blocks]) == ""


def test_the_block_kit_check_refuses_what_slack_refuses() -> None:
    button = {"type": "button", "text": {"type": "plain_text", "text": "ok"}, "action_id": "a"}
    assert message_problem([{"type": "header", "text": {"type": "plain_text", "text": "h" * 151}}])
    assert message_problem([{"type": "markdown", "text": "m" * 6001}] * 2)
    assert message_problem([{"type": "actions", "elements": [button, button]}])  # the same action_id twice
    assert message_problem([{"type": "actions", "elements": [{**button, "text": {"text": "l" * 76}}]}])
    assert message_problem([{"type": "context", "elements": []}] * 51)
    fine = [{"type": "header", "text": {"type": "plain_text", "text": "h"}}, {"type": "markdown", "text": "m" * 12_000},
            {"type": "actions", "elements": [button]}]
    assert message_problem(fine) == ""


def plan_card(double: SlackDouble, root: str, plan: str, *, open_: bool = True) -> Msg | None:
    """The plan card showing (the start of) `plan`: with its buttons, or decided (no buttons)."""
    return double.find(C1, root, lambda m: plan[:40] in m.body() and bool(m.buttons()) == open_
                       and m.header().startswith("📋") == open_)


def bot_for(tmp_path: Path, md: Any, cli_home: Path, double: SlackDouble) -> Any:
    home = tmp_path / "home"  # the CLI reads the user's settings: give it an empty HOME
    home.mkdir(exist_ok=True)
    return slack_bot(tmp_path, md, cli_home, double, factory=single_flow, env={**md.env(cli_home), "HOME": str(home)},
                     workspaces={f"slack:{C1}": workspace(tmp_path)})


async def told(double: SlackDouble, payload: dict[str, Any], user: str) -> str:
    """Send one click and return the one ephemeral line it got."""
    before = len(double.ephemerals_for(user))
    await double.send("interactive", payload)
    await double.wait_for(lambda d: len(d.ephemerals_for(user)) > before, timeout=30)
    return double.ephemerals_for(user)[-1]


async def test_plan_card_then_approve_and_go_writes_only_after_approval(double_factory: Any, cli_home: Path,
                                                                        tmp_path: Path) -> None:
    notes = workspace(tmp_path) / "notes.txt"
    md = await double_factory(scenario_of({"name": "main", "turn": turns(str(notes))}))
    async with SlackDouble(names=NAMES) as double, bot_for(tmp_path, md, cli_home, double) as bot:
        assert await double.slash("/flower", "plan write the notes", user="UALICE", channel=C1) is None
        card = copy.deepcopy(await double.wait_for(lambda d: d.roots(C1) and plan_card(d, root_of(d).ts, PLAN)))
        assert card.header() == TITLE and PLAN in card.body()
        assert [b["text"]["text"] for b in card.buttons()] == BUTTONS
        assert message_problem(card.blocks) == ""  # what Slack would accept, by its documented limits
        [run] = bot.store.list_runs()
        assert run.task == "write the notes"
        assert "nothing may change before a person has approved your plan" in results(md)[1]  # the early Write
        assert not notes.exists()

        await double.click(card, "Approve and go", user="UALICE")
        live = await bot.hub.query.wait(run.run_id)
        assert live is not None and live.outcome is not None and live.outcome.state == "done"
        assert notes.read_text() == "yo" and APPROVED in results(md)
        settled = await double.wait_for(lambda d: plan_card(d, root_of(d).ts, PLAN, open_=False))
        assert settled.header() == "✅ Plan approved by Alice — the agent goes on" and not settled.buttons()

        # Bob's screen still shows the buttons: his click is told, to him alone, that the plan is decided.
        late = await told(double, double.click_payload(card, "Approve, ask before edits", user="UBOB"), "UBOB")
        assert "already settled" in late and "Alice" in late


async def test_keep_planning_words_reach_the_agent_and_a_new_plan_card_follows(double_factory: Any, cli_home: Path,
                                                                               tmp_path: Path) -> None:
    notes = workspace(tmp_path) / "notes.txt"
    md = await double_factory(scenario_of({"name": "main", "turn": turns(str(notes), plans=(PLAN, PLAN2))}))
    async with SlackDouble(names=NAMES) as double, bot_for(tmp_path, md, cli_home, double) as bot:
        # A mention takes /flower's options: `plan` among them, after another one.
        await double.say(C1, f"<@{BOT_USER}> effort=low plan write the notes", user="UALICE", mention=True)
        first = await double.wait_for(lambda d: d.roots(C1) and plan_card(d, root_of(d).ts, PLAN))
        root = root_of(double).ts
        [run] = bot.store.list_runs()
        assert run.task == "write the notes"
        assert {(r.body.get("output_config") or {}).get("effort") for r in md.model_requests()} == {"low"}

        await double.click(first, "Keep planning…", user="UALICE")
        view_id = await double.wait_for(lambda d: next(iter(d.views), None))
        view = double.views[view_id]
        assert view["title"]["text"] == "Keep planning"
        assert PLAN in view["blocks"][0]["elements"][0]["text"]  # the plan above the words
        assert view_problem(view) == ""
        await double.submit(view_id, user="UALICE", text="Add a test first.")

        second = await double.wait_for(lambda d: plan_card(d, root, PLAN2))
        assert [b["text"]["text"] for b in second.buttons()] == BUTTONS
        feedback = results(md)[-1]
        assert "keep planning" in feedback and "Add a test first." in feedback
        settled = await double.wait_for(lambda d: plan_card(d, root, PLAN, open_=False))
        assert settled.header() == "📝 Alice asked for more planning" and "Add a test first." in settled.body()
        assert not notes.exists()

        await double.click(second, "Approve and go", user="UALICE")
        live = await bot.hub.query.wait(run.run_id)
        assert live is not None and live.outcome is not None and live.outcome.state == "done"
        assert notes.read_text() == "yo"


async def test_a_long_plan_is_uploaded_whole_beside_its_card(double_factory: Any, cli_home: Path,
                                                             tmp_path: Path) -> None:
    long_plan = PLAN + "\n" + "\n".join(f"{i}. Check module {i:03d} and note what it needs." for i in range(3, 120))
    assert len(long_plan) > 2500
    notes = workspace(tmp_path) / "notes.txt"
    md = await double_factory(scenario_of({"name": "main", "turn": turns(str(notes), plans=(long_plan,))}))
    async with SlackDouble(names=NAMES) as double, bot_for(tmp_path, md, cli_home, double) as bot:
        assert await double.slash("/flower", "plan write the notes", user="UALICE", channel=C1) is None
        card = await double.wait_for(lambda d: d.roots(C1) and plan_card(d, root_of(d).ts, long_plan))
        root = root_of(double).ts
        assert message_problem(card.blocks) == ""
        assert "The whole plan is in the file below." in card.body() and "module 119" not in card.body()
        [up] = await double.wait_for(lambda d: d.uploads)
        assert up["data"].decode() == long_plan and up["name"].endswith(".md")
        assert up["channel"] == C1 and up["thread_ts"] == root and "whole plan" in up["comment"]

        await double.click(card, "Approve and go", user="UALICE")
        [run] = bot.store.list_runs()
        live = await bot.hub.query.wait(run.run_id)
        assert live is not None and live.outcome is not None and live.outcome.state == "done"
        assert notes.read_text() == "yo"
