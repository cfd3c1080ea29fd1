"""What the bundled CLI does with the SDK's permission path: the facts tool approvals rest on
(flower_core/runtime/permission.py), checked against the real CLI so an upgrade that changes them fails here.

The path chosen, from what these tests see:
- ``can_use_tool`` (the SDK routes it over stdio, ``--permission-prompt-tool stdio``, in streaming mode)
  is where a person decides: the CLI waits for its answer as long as it takes; allow runs the call
  once (``updatedInput`` replaces the call's input); deny with a message skips the call and the model
  reads the message as the tool result (``is_error``).
- The callback alone misses calls: the CLI settles them first from its own rules. ``acceptEdits``
  settles edits and file-touching commands, an ``allowed_tools`` entry its whole tool, and even the
  ``default`` mode lets read-only commands through (``ls``, ``git status``, ``cat``). A ``PreToolUse``
  hook answering ``"ask"`` sends the call to the callback whatever those rules say (its reason arrives
  as ``decision_reason``), and a hook with no decision leaves the call to them. So the policy lives in
  the hook (ask/deny → "ask") and the decision in the callback; nothing else about a step changes.
- An interrupt while the callback waits cancels it and stores a rejection, like a question's call.
  Closing the CLI while it waits cancels it too and stores nothing after the call (the CLI answers its
  own pending request with an abort error the session never keeps): a resumed session runs the turn
  again and asks again, so a decision kept across a restart is applied to the new request, and the
  tool runs once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from claude_agent_sdk import (
    ClaudeSDKClient,
    HookMatcher,
    PermissionResultAllow,
    PermissionResultDeny,
    UserMessage,
    project_key_for_directory,
)

from flower_core.runtime.attempt import Attempt
from flower_core.runtime.parked import continue_env
from flower_core.session_store import SQLiteSessionStore
from flower_core.spec import AgentSpec, build_options
from tests.conftest import scenario_of

Decide = Callable[[str, dict[str, Any], Any], Awaitable[Any]]


def bash(command: str) -> dict[str, Any]:
    return {"tool": "Bash", "input": {"command": command}}


class Rig:
    """One workspace, one double, a session store, and a CLI driven with a callback of the test's own."""

    def __init__(self, md: Any, cli_home: Path, tmp: Path) -> None:
        self.md, self.cli_home = md, cli_home
        self.ws, self.home = tmp / "ws", tmp / "home"
        self.ws.mkdir()
        self.home.mkdir()  # the Bash tool sources the user's shell config: give it an empty HOME
        self.store = SQLiteSessionStore(tmp / "sessions.db")
        self.seen: list[tuple[str, dict[str, Any], str | None]] = []
        self.sid = ""

    def options(self, decide: Decide, *, mode: str = "default", allowed: list[str] | None = None,
                hook: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> Any:
        async def callback(tool: str, args: dict[str, Any], ctx: Any) -> Any:
            self.seen.append((tool, args, ctx.decision_reason))
            return await decide(tool, args, ctx)

        spec = AgentSpec(name="t", allowed_tools=list(allowed or []), permission_mode=mode, max_turns=12)
        opts = build_options(spec, cwd=self.ws, env={**self.md.env(self.cli_home), "HOME": str(self.home)},
                             session_store=self.store)
        hooks = None
        if hook is not None:
            async def pre(data: Any, tool_use_id: str | None, context: Any) -> Any:
                return hook(data)
            hooks = {"PreToolUse": [HookMatcher(matcher=None, hooks=[pre])]}
        return replace(opts, can_use_tool=callback, hooks=hooks)

    async def run(self, options: Any) -> list[Any]:
        msgs: list[Any] = []
        async with ClaudeSDKClient(options) as client:
            await client.query("go")
            async for msg in client.receive_response():
                msgs.append(msg)
        return msgs

    def effect(self) -> str:
        path = self.ws / "effect.txt"
        return path.read_text() if path.exists() else ""

    def results(self, msgs: list[Any]) -> list[tuple[str, bool | None]]:
        return [(str(b.content), b.is_error) for m in msgs if isinstance(m, UserMessage) and isinstance(m.content, list)
                for b in m.content if type(b).__name__ == "ToolResultBlock"]

    async def entries(self) -> list[dict[str, Any]]:
        key = {"project_key": project_key_for_directory(str(self.ws)), "session_id": self.sid}
        return [dict(e) for e in await self.store.load(key) or []]  # type: ignore[arg-type]


async def rig(double_factory: Any, cli_home: Path, tmp_path: Path, turns: list[dict[str, Any]]) -> Rig:
    return Rig(await double_factory(scenario_of({"name": "main", "turn": turns})), cli_home, tmp_path)


async def allow(tool: str, args: dict[str, Any], ctx: Any) -> Any:
    return PermissionResultAllow()


READ_ONLY = ["ls", "git status", "cat x.txt"]


async def test_the_callback_alone_misses_calls_the_cli_settles_itself(double_factory: Any, cli_home: Path,
                                                                      tmp_path: Path) -> None:
    turns = [{"say": c, "call": [bash(c)]} for c in [*READ_ONLY, "echo ran >> effect.txt"]] + [{"say": "done"}]
    r = await rig(double_factory, cli_home, tmp_path, turns)
    (r.ws / "x.txt").write_text("x")
    await r.run(r.options(allow))  # default mode: the read-only commands never reach the callback
    assert [a["command"] for _, a, _ in r.seen] == ["echo ran >> effect.txt"]
    r.seen.clear()
    await r.run(r.options(allow, mode="acceptEdits"))  # acceptEdits: the file-touching one does not either
    assert r.seen == [] and r.effect() == "ran\nran\n"


async def test_a_hooks_ask_sends_every_call_it_names_to_the_callback_and_leaves_the_rest(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    write = {"tool": "Write", "input": {"file_path": "w.txt", "content": "hi"}}
    read = {"tool": "Read", "input": {"file_path": "x.txt"}}
    turns = [{"say": c, "call": [bash(c)]} for c in READ_ONLY] + [
        {"say": "w", "call": [write]}, {"say": "r", "call": [read]}, {"say": "done"}]
    r = await rig(double_factory, cli_home, tmp_path, turns)
    (r.ws / "x.txt").write_text("x")

    def hook(data: dict[str, Any]) -> dict[str, Any]:
        if data["tool_name"] == "Read":
            return {}
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask",
                                       "permissionDecisionReason": "policy"}}
    msgs = await r.run(r.options(allow, mode="acceptEdits", allowed=["Bash", "Read"], hook=hook))
    assert [(t, a.get("command") or a.get("file_path"), why) for t, a, why in r.seen] == [
        ("Bash", "ls", "policy"), ("Bash", "git status", "policy"), ("Bash", "cat x.txt", "policy"),
        ("Write", str(r.ws / "w.txt"), "policy")]  # made absolute by the CLI; Read, left to its rules, ran unasked
    assert (r.ws / "w.txt").read_text() == "hi"
    results = r.results(msgs)
    assert len(results) == 5 and results[-1] == ("1\tx", None)  # the Read ran and the model got the file


async def test_allow_runs_once_updated_input_replaces_the_call_and_deny_gives_the_model_the_message(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    turns = [{"say": "a", "call": [bash("echo ran >> effect.txt; echo out=42")]},
             {"say": "b", "call": [bash("echo second >> effect.txt")]},
             {"say": "c", "call": [bash("echo third >> effect.txt")]}, {"say": "Saw: {last_tool_result}"}]
    r = await rig(double_factory, cli_home, tmp_path, turns)
    answers = iter([PermissionResultAllow(),
                    PermissionResultAllow(updated_input={"command": "echo changed >> effect.txt"}),
                    PermissionResultDeny(message="No: use ls instead.")])

    async def decide(tool: str, args: dict[str, Any], ctx: Any) -> Any:
        return next(answers)
    msgs = await r.run(r.options(decide))
    assert r.effect() == "ran\nchanged\n"  # once each; the denied one never ran
    assert r.results(msgs) == [("out=42", False), ("(Bash completed with no output)", False),
                               ("No: use ls instead.", True)]
    last = r.md.model_requests()[-1].body["messages"][-1]["content"][0]
    assert last["type"] == "tool_result" and last["content"] == "No: use ls instead." and last["is_error"] is True


async def cut_off(r: Rig, *, interrupt: bool) -> list[str]:
    """Start a call whose callback never answers, then interrupt or close the CLI; what the callback saw."""
    seen: list[str] = []
    waiting = asyncio.Event()

    async def decide(tool: str, args: dict[str, Any], ctx: Any) -> Any:
        waiting.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise
    client = ClaudeSDKClient(r.options(decide))
    await client.connect()
    await client.query("go")

    async def consume() -> None:
        async for msg in client.receive_response():
            r.sid = getattr(msg, "session_id", None) or r.sid
    task = asyncio.create_task(consume())
    await asyncio.wait_for(waiting.wait(), 60)
    while not [e for e in (await r.entries() if r.sid else []) if "tool_use" in str(e.get("message", ""))]:
        await asyncio.sleep(0.05)  # the transcript mirror is asynchronous: wait until the call is stored
    if interrupt:
        await client.interrupt()
        await asyncio.wait_for(task, 30)
    await asyncio.wait_for(client.disconnect(), 30)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    for _ in range(100):
        if seen:
            break
        await asyncio.sleep(0.05)
    return seen


def after_call(entries: list[dict[str, Any]]) -> list[str]:
    at = max(i for i, e in enumerate(entries) if e.get("type") == "assistant" and "tool_use" in str(e["message"]))
    return [str(e["message"]["content"]) for e in entries[at + 1:] if e.get("type") in ("user", "assistant")]


async def test_an_interrupt_while_the_callback_waits_cancels_it_and_stores_a_rejection(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    r = await rig(double_factory, cli_home, tmp_path, [{"say": "a", "call": [bash("echo ran >> effect.txt")]},
                                                       {"say": "done"}])
    assert await cut_off(r, interrupt=True) == ["cancelled"]
    tail = after_call(await r.entries())
    assert len(tail) == 2 and "doesn't want to proceed" in tail[0] and "[Request interrupted by user" in tail[1]
    assert r.effect() == ""


async def test_closing_the_cli_while_the_callback_waits_stores_nothing_after_the_call(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    r = await rig(double_factory, cli_home, tmp_path, [{"say": "a", "call": [bash("echo ran >> effect.txt")]},
                                                       {"say": "done"}])
    assert await cut_off(r, interrupt=False) == ["cancelled"]
    assert after_call(await r.entries()) == [] and r.effect() == ""
    # Continued, the session runs the turn again: the same call is asked for again, and allowed it runs once.
    asked, requests = len(r.seen), len(r.md.model_requests())
    opts = r.options(allow)
    out = await Attempt(replace(opts, resume=r.sid, env={**opts.env, **continue_env("(go on)")}), None,
                        idle_timeout=60).run()
    assert out.ok and r.md.model_requests()[requests].turn == 0
    assert [t for t, _, _ in r.seen[asked:]] == ["Bash"] and r.effect() == "ran\n"


async def test_continuing_after_a_cut_off_approval_reruns_only_the_last_call_and_keeps_earlier_results(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    """What parking an approval rests on: the CLI interrupted while the callback waits on the turn's second
    call, the rejection cut from the store (as parking does), then continued without a written result. The
    first call's result stays in the session, so the model is asked for the second call again (not the
    first: it ran once, and never runs again), the model writes the call again (a new call id, the same
    input here), the callback is asked about it, and allowed there it runs once."""
    r = await rig(double_factory, cli_home, tmp_path, [{"say": "a", "call": [bash("echo a >> effect.txt")]},
                                                       {"say": "b", "call": [bash("echo b >> effect.txt")]},
                                                       {"say": "done"}])
    first: list[str] = []
    waiting = asyncio.Event()

    async def decide(tool: str, args: dict[str, Any], ctx: Any) -> Any:
        if not first:
            first.append(ctx.tool_use_id)
            return PermissionResultAllow()
        first.append(ctx.tool_use_id)
        waiting.set()
        await asyncio.Event().wait()
    client = ClaudeSDKClient(r.options(decide))
    await client.connect()
    await client.query("go")

    async def consume() -> None:
        async for msg in client.receive_response():
            r.sid = getattr(msg, "session_id", None) or r.sid
    task = asyncio.create_task(consume())
    await asyncio.wait_for(waiting.wait(), 60)
    while not [e for e in (await r.entries() if r.sid else []) if first[1] in str(e.get("message", ""))]:
        await asyncio.sleep(0.05)  # the transcript mirror is asynchronous: wait until the call is stored
    await client.interrupt()
    await asyncio.wait_for(task, 30)
    await asyncio.wait_for(client.disconnect(), 30)
    entries = await r.entries()
    call = next(e for e in entries if e.get("type") == "assistant" and first[1] in str(e["message"]))
    r.store.truncate_after(r.sid, call["uuid"], project_key=project_key_for_directory(str(r.ws)))
    assert after_call(await r.entries()) == [] and r.effect() == "a\n"
    asked, requests = len(r.seen), len(r.md.model_requests())
    opts = r.options(allow)
    out = await Attempt(replace(opts, resume=r.sid, env={**opts.env, **continue_env("(go on)")}), None,
                        idle_timeout=60).run()
    assert out.ok
    again = r.md.model_requests()[requests]
    assert again.turn == 1 and "a" in str(again.body["messages"])  # the first call's turn and result are kept
    assert [(t, a["command"]) for t, a, _ in r.seen[asked:]] == [("Bash", "echo b >> effect.txt")]
    assert r.effect() == "a\nb\n"
