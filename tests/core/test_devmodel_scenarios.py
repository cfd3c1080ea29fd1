"""Scenario files: the shipped ones parse, bad ones fail with a clear message, placeholders fill."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from flower_core.devmodel import ScenarioError, load_scenario, parse_scenario, shipped_scenarios
from flower_core.devmodel import request as rq


@pytest.mark.parametrize("name", shipped_scenarios())
def test_shipped_scenarios_parse(name: str) -> None:
    scenario = load_scenario(name)
    assert scenario.conversations and any(c.turns for c in scenario.conversations)


def test_demo_exercises_a_question_tools_a_subagent_and_a_finish() -> None:
    tools = {call.tool for conv in load_scenario("demo").conversations for turn in conv.turns for call in turn.calls}
    assert {"mcp__human__ask", "mcp__human__inbox", "Agent", "Write", "Read"} <= tools


@pytest.mark.parametrize(("doc", "message"), [
    ({}, "needs at least one [[conversation]]"),
    ({"conversation": [{"turn": [{"sya": "typo"}]}]}, "unknown keys ['sya']"),
    ({"conversation": [{"turn": [{"fault": {"kind": "melt"}}]}]}, "fault kind 'melt'"),
    ({"conversation": [{"match": "(", "turn": []}]}, "bad regex"),
    ({"conversation": [{"turn": [{"call": [{"input": {}}]}]}]}, "needs a 'tool' name"),
    ({"conversation": [{"turn": [], "again": {"say": "x"}}]}, "needs 'when'"),
    ({"conversation": [{"turn": [], "again": {"when": "(", "say": "x"}}]}, "again.when: bad regex"),
])
def test_bad_scenarios_say_what_is_wrong(doc: dict[str, object], message: str) -> None:
    with pytest.raises(ScenarioError, match=re.escape(message)):
        parse_scenario(doc, name="bad")


def test_unknown_scenario_lists_the_shipped_ones(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="demo"):
        load_scenario("no-such-scenario")
    broken = tmp_path / "broken.toml"
    broken.write_text("[[conversation]\n")
    with pytest.raises(ScenarioError, match=r"broken\.toml"):
        load_scenario(broken)


def test_routing_and_turn_index_come_from_the_request() -> None:
    scenario = parse_scenario({"conversation": [
        {"name": "worker", "match": "count", "turn": [{"say": "w"}]},
        {"name": "main", "turn": [{"say": "m"}]}]})
    body = {"system": [{"type": "text", "text": "sys"}], "messages": [
        {"role": "user", "content": [{"type": "text", "text": "<system-reminder>x</system-reminder>"},
                                     {"type": "text", "text": "please count"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                      "content": [{"type": "text", "text": "42 words"}]}]}]}
    conv = scenario.route(rq.first_user_text(body), rq.system_text(body))
    assert conv is not None and conv.name == "worker"
    assert rq.assistant_count(body) == 1
    assert rq.render("got {last_tool_result} at {turn}; {keep} braces", body) == "got 42 words at 1; {keep} braces"
    assert rq.last_user_text(body) == "please count"


def test_check_command_parses_a_scenario() -> None:
    out = subprocess.run([sys.executable, "-m", "flower_core.devmodel", "--check", "--scenario", "demo"],
                         capture_output=True, text=True, check=True)
    assert out.stdout.startswith("demo:")
    bad = subprocess.run([sys.executable, "-m", "flower_core.devmodel", "--check", "--scenario", "nope"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "no scenario" in bad.stderr


def test_an_again_turn_matches_results_and_names_its_groups() -> None:
    """`[conversation.again]`: played while the last tool result matches; each matched result is off the count (the
    server's rule: turn = assistant messages - results that matched), and its named groups are placeholders."""
    [conv] = parse_scenario({"conversation": [{"turn": [{"say": "a"}, {"say": "b"}], "again": {
        "when": "sent back(?:: (?P<why>[^\\n]*))?", "say": "again: {why}"}}]}).conversations
    assert conv.again is not None
    assert conv.again.groups("sent back: too long\nmore") == {"why": "too long"}
    assert conv.again.groups("sent back") == {"why": ""} and conv.again.groups("approved") is None
    body = {"messages": [{"role": "user", "content": "go"},
                         {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "X", "input": {}}]},
                         {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                                       "content": "sent back: shorter"}]}]}
    assert rq.tool_results(body) == ["sent back: shorter"]
    assert rq.render(conv.again.turn.say, body, conv.again.groups(rq.last_tool_result(body))) == "again: shorter"
