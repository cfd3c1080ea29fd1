"""What the bundled CLI does in the `plan` permission mode, headless: the facts a plan card would rest on,
checked against the real CLI (on the model double) so an upgrade that changes them fails here.

- Without a ``can_use_tool`` callback, plan mode refuses edits ("Cannot write to … while in plan mode.") and
  ``ExitPlanMode`` does not exist for the session ("No such tool available: ExitPlanMode. ExitPlanMode is
  disabled for this session…"): a headless run can never present its plan.
- With a callback, the CLI does not refuse edits itself in plan mode: it asks the callback, so the callback
  must refuse them while the plan waits. ``ExitPlanMode`` reaches the callback, and the PreToolUse hook, with
  an *empty* input: the plan is only in the stream's tool call (the ToolUseBlock's ``input["plan"]``).
- The CLI tells the model to write its plan into ``<config dir>/plans/<name>.md`` ("the only file you are
  allowed to edit") and then call ExitPlanMode, a deferred tool; that Write reaches the callback as well, and
  an ExitPlanMode made with an empty input is allowed all the same: the plan is then only in the file.
- Allowing ``ExitPlanMode`` answers "User has approved exiting plan mode. You can now proceed." and the
  CLI leaves plan mode; denying it with a message gives the model that message as the tool's (error) result,
  and it stays in plan mode: that is how "Keep planning…" words would reach it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    HookMatcher,
    PermissionResultAllow,
    PermissionResultDeny,
    ToolUseBlock,
)

from tests.conftest import scenario_of

PLAN = "1. write y.txt\n2. done"


def planning(ws: Path) -> Any:
    return scenario_of({"name": "main", "turn": [
        {"say": "Trying to write.", "call": [{"tool": "Write", "input": {"file_path": str(ws / "x.txt"),
                                                                         "content": "early"}}]},
        {"say": "My plan.", "call": [{"tool": "ExitPlanMode", "input": {"plan": PLAN}}]},
        {"say": "Writing.", "call": [{"tool": "Write", "input": {"file_path": str(ws / "y.txt"), "content": "yo"}}]},
        {"say": "Done."},
    ]})


async def drive(md: Any, cli_home: Path, ws: Path, **kw: Any) -> list[dict[str, Any]]:
    """Run the scenario in plan mode; the inputs of the ExitPlanMode calls as the stream carries them."""
    client = ClaudeSDKClient(ClaudeAgentOptions(env=md.env(cli_home), cwd=str(ws), permission_mode="plan",
                                                setting_sources=[], **kw))
    exits: list[dict[str, Any]] = []
    await client.connect()
    try:
        await client.query("plan it")
        async for msg in client.receive_response():
            if isinstance(msg, AssistantMessage):
                exits += [b.input for b in msg.content if isinstance(b, ToolUseBlock) and b.name == "ExitPlanMode"]
    finally:
        await client.disconnect()
    return exits


async def test_without_a_callback_plan_mode_refuses_edits_and_has_no_exit(double_factory: Any, cli_home: Path,
                                                                          tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    md = await double_factory(planning(ws))
    await drive(md, cli_home, ws)
    results = [r.last_tool_result for r in md.model_requests()][1:]
    assert results[0] == f"Cannot write to {ws / 'x.txt'} while in plan mode."
    assert "No such tool available: ExitPlanMode" in results[1]
    assert not list(ws.iterdir())


async def test_with_a_callback_edits_and_the_exit_are_the_callbacks_to_decide(double_factory: Any, cli_home: Path,
                                                                              tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    md = await double_factory(planning(ws))
    asked: list[tuple[str, dict[str, Any]]] = []
    hooked: list[dict[str, Any]] = []

    async def decide(tool: str, args: dict[str, Any], context: Any) -> Any:
        asked.append((tool, args))
        if tool == "Write" and not any(t == "ExitPlanMode" for t, _ in asked):
            return PermissionResultDeny(message="Not before the plan is approved.")
        return PermissionResultAllow()

    async def hook(data: Any, tool_use_id: str | None, context: Any) -> Any:
        if data.get("tool_name") == "ExitPlanMode":
            hooked.append(dict(data.get("tool_input") or {}))
        return {}

    exits = await drive(md, cli_home, ws, can_use_tool=decide,
                        hooks={"PreToolUse": [HookMatcher(matcher=None, hooks=[hook])]})
    assert [t for t, _ in asked] == ["Write", "ExitPlanMode", "Write"]
    assert asked[1][1] == {} and hooked == [{}]  # neither the callback nor the hook sees the plan…
    assert exits == [{"plan": PLAN}]  # …the stream's tool call does
    results = [r.last_tool_result for r in md.model_requests()][1:]
    assert results[0] == "Not before the plan is approved."
    assert results[1] == "User has approved exiting plan mode. You can now proceed."
    assert sorted(p.name for p in ws.iterdir()) == ["y.txt"]


async def test_a_denied_exit_gives_the_model_the_words(double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    md = await double_factory(scenario_of({"name": "main", "turn": [
        {"say": "My plan.", "call": [{"tool": "ExitPlanMode", "input": {"plan": PLAN}}]},
        {"say": "Revised."}]}))

    async def decide(tool: str, args: dict[str, Any], context: Any) -> Any:
        return PermissionResultDeny(message="Keep planning: add tests first.")

    await drive(md, cli_home, ws, can_use_tool=decide)
    assert md.model_requests()[-1].last_tool_result == "Keep planning: add tests first."



async def test_an_allowed_exit_can_set_the_mode_the_work_goes_on_in(double_factory: Any, cli_home: Path,
                                                                    tmp_path: Path) -> None:
    """The allow result's ``setMode`` update takes the CLI out of plan mode into the step's own mode: in
    ``acceptEdits`` the next Write runs without reaching the callback (permission.py relies on this)."""
    from claude_agent_sdk.types import PermissionUpdate

    ws = tmp_path / "ws"
    ws.mkdir()
    md = await double_factory(planning(ws))
    asked: list[tuple[str, str | None]] = []

    async def decide(tool: str, args: dict[str, Any], context: Any) -> Any:
        asked.append((tool, context.tool_use_id))
        if tool == "ExitPlanMode":
            return PermissionResultAllow(updated_permissions=[PermissionUpdate(type="setMode", mode="acceptEdits")])
        return PermissionResultDeny(message="Not before the plan is approved.")

    exits = await drive(md, cli_home, ws, can_use_tool=decide)
    assert [t for t, _ in asked] == ["Write", "ExitPlanMode"]  # the second Write never asked
    assert all(call_id for _, call_id in asked)  # the callback learns the call's id: the plan is found by it
    assert exits == [{"plan": PLAN}]
    assert sorted(p.name for p in ws.iterdir()) == ["y.txt"]


async def test_the_plan_may_be_a_file_in_the_config_dir_and_the_exit_empty(double_factory: Any, cli_home: Path,
                                                                           tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    plan_file = cli_home / "plans" / "my-plan.md"
    md = await double_factory(scenario_of({"name": "main", "turn": [
        {"say": "Writing the plan.", "call": [{"tool": "Write", "input": {"file_path": str(plan_file),
                                                                          "content": PLAN}}]},
        {"say": "Done planning.", "call": [{"tool": "ExitPlanMode", "input": {}}]},
        {"say": "Done."}]}))
    asked: list[str] = []

    async def decide(tool: str, args: dict[str, Any], context: Any) -> Any:
        asked.append(tool)
        return PermissionResultAllow()

    exits = await drive(md, cli_home, ws, can_use_tool=decide)
    assert asked == ["Write", "ExitPlanMode"] and exits == [{}]
    assert plan_file.read_text() == PLAN
    assert f"create your plan at {cli_home}/plans/" in json.dumps(md.model_requests()[0].body)  # where it says
    assert md.model_requests()[-1].last_tool_result == "User has approved exiting plan mode. You can now proceed."
