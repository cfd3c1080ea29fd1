"""Tool approvals through the real CLI: an ``ask_tools`` call becomes an approval ask on the HumanChannel,
a person decides it, and the tool runs once (or never) with the model reading the outcome."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import ClaudeSDKClient

from flower_core.events import Event
from flower_core.human import HumanChannel, texts
from flower_core.human.approval import ALLOW_ONCE, DENY, ApprovalGate, run_option
from flower_core.permissions import Policy
from flower_core.runtime import Runtime
from flower_core.runtime.attempt import Attempt, Outcome
from flower_core.spec import AgentSpec, build_options
from tests.conftest import scenario_of

EFFECT = "echo ran >> effect.txt; echo out=42"
WORKING: dict[str, Any] = {"permission_mode": "acceptEdits", "allowed_tools": ["Read", "Glob", "Grep", "Bash"]}


def bash(command: str) -> dict[str, Any]:
    return {"tool": "Bash", "input": {"command": command}}


class Run:
    """A channel with a policy, a person who decides each approval with ``decide``, and one attempt."""

    def __init__(self, md: Any, cli_home: Path, tmp: Path, policy: Policy, *, timeout_s: float | None = 600,
                 approval_timeout_s: float | None = None, unattended: str = "deny") -> None:
        self.md, self.cli_home = md, cli_home
        self.ws, self.home = tmp / "ws", tmp / "home"
        self.ws.mkdir(parents=True)
        self.home.mkdir()  # the Bash tool sources the user's shell config: give it an empty HOME
        self.events: list[Event] = []
        self.decide: Callable[[Event], tuple[str, str]] | None = None
        self.channel = HumanChannel(timeout_s=timeout_s, max_asks=0, log_path=tmp / "qa.md", on_event=self._seen)
        self.channel.approvals = ApprovalGate(policy, cwd=self.ws, timeout_s=approval_timeout_s,
                                              unattended=unattended, grants_path=tmp / "grants.json")

    def _seen(self, ev: Event) -> None:
        self.events.append(ev)
        if ev.payload.get("kind") == "approval" and ev.payload["state"] == "asked" and self.decide is not None:
            decision, words = self.decide(ev)
            approve = partial(self.channel.approve, ev.payload["id"], decision, words, by="ana")
            asyncio.get_running_loop().call_soon(approve)

    async def attempt(self) -> Outcome:
        spec = AgentSpec(name="t", channel=self.channel, max_turns=10, **WORKING)
        opts = build_options(spec, cwd=self.ws, env={**self.md.env(self.cli_home), "HOME": str(self.home)})
        return await Attempt(opts, "go", idle_timeout=60).run()

    def asks_made(self) -> list[Any]:
        return [a for a in self.channel.asks if a.kind == "approval"]

    def asked(self) -> list[dict[str, Any]]:
        return [e.payload for e in self.events if e.payload.get("kind") == "approval" and e.payload["state"] == "asked"]

    def effect(self) -> str:
        path = self.ws / "effect.txt"
        return path.read_text() if path.exists() else ""

    def last_result(self) -> Any:
        return self.md.model_requests()[-1].body["messages"][-1]["content"][0]


async def run_of(double_factory: Any, cli_home: Path, tmp: Path, turns: list[dict[str, Any]], policy: Policy,
                 **kw: Any) -> Run:
    return Run(await double_factory(scenario_of({"name": "main", "turn": turns})), cli_home, tmp, policy, **kw)


async def test_allow_once_runs_the_command_once_and_the_model_gets_its_output(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    r = await run_of(double_factory, cli_home, tmp_path, [{"say": "a", "call": [bash(EFFECT)]},
                                                          {"say": "Saw: {last_tool_result}"}], Policy.of(ask=["Bash"]))
    r.decide = lambda ev: ("once", "")
    out = await r.attempt()
    assert out.ok and r.effect() == "ran\n" and out.texts[-1] == "Saw: out=42"
    [asked] = r.asked()
    assert asked["tool"] == "Bash" and asked["input"] == {"command": EFFECT}
    assert asked["options"] == [ALLOW_ONCE, run_option("Bash"), DENY] and asked["remaining"] == -1
    settled = [e.payload for e in r.events if e.payload.get("state") == "answered"]
    assert settled[0]["by"] == "ana" and settled[0]["answer"] == ALLOW_ONCE
    log = (tmp_path / "qa.md").read_text()
    assert "The agent wants to run Bash: " + EFFECT in log and ALLOW_ONCE in log
    decisions = r.channel.approvals.take_decisions() if r.channel.approvals else []
    assert [(d["tool"], d["decision"], d["allowed"], d["by"]) for d in decisions] == [("Bash", "once", True, "ana")]


async def test_deny_with_words_runs_nothing_and_the_model_reads_the_words(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    r = await run_of(double_factory, cli_home, tmp_path, [{"say": "a", "call": [bash(EFFECT)]},
                                                          {"say": "Saw: {last_tool_result}"}], Policy.of(ask=["Bash"]))
    r.decide = lambda ev: ("deny", "Not on the shared box; list the files instead.")
    out = await r.attempt()
    assert out.ok and r.effect() == ""
    result = r.last_result()
    assert result["is_error"] is True and result["content"].endswith("Not on the shared box; list the files instead.")
    assert [e.payload["state"] for e in r.events] == ["asked", "declined"]


async def test_allow_for_this_run_asks_once_and_holds_for_a_new_gate(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    turns = [{"say": "a", "call": [bash(EFFECT)]}, {"say": "b", "call": [bash("echo two >> effect.txt")]},
             {"say": "done"}]
    r = await run_of(double_factory, cli_home, tmp_path, turns, Policy.of(ask=["Bash"]))
    r.decide = lambda ev: ("run", "")
    out = await r.attempt()
    assert out.ok and r.effect() == "ran\ntwo\n" and len(r.asked()) == 1
    # A process started again for this run reads the grant back: Bash is not asked about any more.
    again = ApprovalGate(Policy.of(ask=["Bash"]), cwd=r.ws, grants_path=tmp_path / "grants.json")
    assert again.policy.decide("Bash", {"command": "ls"}) == ("allow", None)


async def test_deny_tools_never_reach_a_person_and_the_model_is_told_the_rule(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    turns = [{"say": "a", "call": [bash("rm -rf effect.txt")]}, {"say": "b", "call": [bash("echo ok >> effect.txt")]},
             {"say": "done"}]
    r = await run_of(double_factory, cli_home, tmp_path, turns, Policy.of(deny=["Bash(rm -rf:*)"]))
    (r.ws / "effect.txt").write_text("kept\n")
    r.decide = lambda ev: ("once", "")
    out = await r.attempt()
    assert out.ok and r.asked() == [] and r.events == []
    assert r.effect() == "kept\nok\n"  # the denied rm never ran; the Bash nobody asks about ran as before
    denied = r.md.model_requests()[1].body["messages"][-1]["content"][0]
    assert denied["is_error"] is True and "Bash(rm -rf:*)" in denied["content"]


async def test_unattended_runs_deny_with_the_seeds_wording_or_allow_when_configured(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    turns = [{"say": "a", "call": [bash(EFFECT)]}, {"say": "Saw: {last_tool_result}"}]
    r = await run_of(double_factory, cli_home, tmp_path / "deny", turns, Policy.of(ask=["Bash"]), timeout_s=0)
    assert (await r.attempt()).ok and r.effect() == "" and r.asked() == []
    assert r.last_result()["content"] == texts.TIMEOUT
    allowing = await run_of(double_factory, cli_home, tmp_path / "allow", turns, Policy.of(ask=["Bash"]), timeout_s=0,
                            unattended="allow")
    assert (await allowing.attempt()).ok and allowing.effect() == "ran\n" and allowing.events == []


async def test_an_approval_timeout_denies_with_a_clear_text(double_factory: Any, cli_home: Path,
                                                            tmp_path: Path) -> None:
    r = await run_of(double_factory, cli_home, tmp_path, [{"say": "a", "call": [bash(EFFECT)]},
                                                          {"say": "Saw: {last_tool_result}"}],
                     Policy.of(ask=["Bash"]), approval_timeout_s=1.0)
    out = await r.attempt()  # nobody decides
    assert out.ok and r.effect() == "" and [e.payload["state"] for e in r.events] == ["asked", "timeout"]
    assert "没有人批准" in r.last_result()["content"]


async def test_a_runtime_step_keeps_its_decisions_in_the_manifest(double_factory: Any, cli_home: Path,
                                                                  tmp_path: Path) -> None:
    turns = [{"say": "a", "call": [bash(EFFECT)]}, {"say": "b", "call": [bash("rm -rf effect.txt")]},
             {"say": "done"}]
    r = await run_of(double_factory, cli_home, tmp_path, turns, Policy.of(ask=["Bash"], deny=["Bash(rm:*)"]))
    r.decide = lambda ev: ("once", "")
    rt = Runtime(workspace=r.ws, run_dir=tmp_path / "runs", env={**r.md.env(r.cli_home), "HOME": str(r.home)},
                 handoff=False)
    try:
        result = await rt.run(AgentSpec(name="work", channel=r.channel, max_turns=10, **WORKING), "go")
    finally:
        rt.close()
    assert result.ok and r.effect() == "ran\n"
    [row] = json.loads(rt.manifest_path.read_text())
    assert [(d["tool"], d["input"], d["decision"], d["allowed"]) for d in row["approvals"]] == [
        ("Bash", EFFECT, "once", True), ("Bash", "rm -rf effect.txt", "rule", False)]
    assert row["approvals"][0]["by"] == "ana" and row["approvals"][0]["ask"] == "q1"


async def test_a_subagents_bash_call_is_asked_about_too(double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory(scenario_of(
        {"name": "worker", "match": "run the effect", "turn": [
            {"say": "On it.", "call": [bash(EFFECT)]}, {"say": "Worker saw: {last_tool_result}"}]},
        {"name": "main", "turn": [
            {"say": "Delegating.", "call": [{"tool": "Agent", "id": "toolu_sub1", "input": {
                "description": "effect", "prompt": "Please run the effect script", "subagent_type": "general-purpose",
                "run_in_background": False}}]},
            {"say": "The worker reported: {last_tool_result}"}]}))
    r = Run(md, cli_home, tmp_path, Policy.of(ask=["Bash"]))
    r.decide = lambda ev: ("once", "")
    out = await r.attempt()
    assert out.ok and r.effect() == "ran\n" and len(r.asked()) == 1 and r.asked()[0]["tool"] == "Bash"
    assert {q.conversation for q in md.model_requests()} == {"main", "worker"}
    assert "Worker saw: out=42" in out.texts[-1]


async def test_an_interrupt_withdraws_a_waiting_approval_so_a_click_as_it_lands_is_refused(
        double_factory: Any, cli_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Someone interrupts while an approval waits, and "Allow once" is clicked in the very instant the
    interrupt goes to the CLI (the click rides on the SDK's interrupt call here): the approval was withdrawn
    before, so the click is refused — else it would be told "allowed" about a call the CLI cancels. The
    command never ran and the model hears the interrupt's words."""
    md = await double_factory(scenario_of({"name": "main", "after_end": "Heard: {last_user_text}", "turn": [
        {"say": "Running.", "call": [bash(EFFECT)]}, {"say": "Saw: {last_tool_result}"}]}))
    r = Run(md, cli_home, tmp_path, Policy.of(ask=["Bash"]))
    rt = Runtime(workspace=r.ws, run_dir=tmp_path / "runs", env={**r.md.env(r.cli_home), "HOME": str(r.home)},
                 handoff=False)
    clicked: list[bool] = []
    real_interrupt = ClaudeSDKClient.interrupt

    async def click_as_the_interrupt_lands(client: ClaudeSDKClient) -> None:
        clicked.extend(r.channel.approve(a.id, "once", by="ana") for a in r.asks_made())
        await real_interrupt(client)

    monkeypatch.setattr(ClaudeSDKClient, "interrupt", click_as_the_interrupt_lands)

    def interrupt_when_asked(ev: Event) -> None:
        r.events.append(ev)
        if ev.payload.get("kind") == "approval" and ev.payload["state"] == "asked":
            asyncio.get_running_loop().call_soon(rt.interrupt, "leave it, use tabs")

    r.channel.on_event = interrupt_when_asked
    try:
        result = await rt.run(AgentSpec(name="work", channel=r.channel, max_turns=10, **WORKING), "go")
    finally:
        rt.close()
    assert result.ok, result.error
    assert clicked == [False] and r.effect() == ""
    assert any("leave it, use tabs" in q.last_user_text for q in md.model_requests())
