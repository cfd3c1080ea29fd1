"""AgentSpec / build_options / resolve_env: pure mapping checks, then the real CLI honouring them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    HookMatcher,
    InMemorySessionStore,
    ResultMessage,
    SystemMessage,
    TextBlock,
    create_sdk_mcp_server,
    query,
    tool,
)

from flower_core.devmodel.request import system_text
from flower_core.spec import AgentSpec, build_options, has_credentials, resolve_env
from tests.conftest import scenario_of


class FakeChannel:
    """Stands in for HumanChannel: an in-process ``human`` server with an ``ask`` tool."""

    TOOLS = ("mcp__human__ask", "mcp__human__inbox")

    def __init__(self, answer: str = "blue") -> None:
        self.asked: list[dict[str, Any]] = []
        self.answer = answer

    def mcp_servers(self) -> dict[str, Any]:
        @tool("ask", "Ask the human", {"question": str, "options": list})
        async def ask(args: dict[str, Any]) -> dict[str, Any]:
            self.asked.append(args)
            return {"content": [{"type": "text", "text": self.answer}]}

        return {"human": create_sdk_mcp_server("human", tools=[ask])}


# -- pure mapping --------------------------------------------------------------------------------

def test_defaults_append_to_the_preset_and_stay_portable() -> None:
    opts = build_options(AgentSpec(system_prompt="Be terse."), cwd="/w", env={})
    assert opts.system_prompt == {"type": "preset", "preset": "claude_code", "append": "Be terse."}
    assert opts.permission_mode == "default"  # the original flower's defaults: a read-only agent
    assert opts.allowed_tools == ["Read", "Glob", "Grep"]
    assert opts.setting_sources == []
    assert opts.cwd == "/w" and opts.tools is None and opts.session_store is None
    assert opts.resume is None and opts.fork_session is False


def test_prelude_follows_the_prompt_and_replace_sends_it_alone() -> None:
    opts = build_options(AgentSpec(system_prompt="Rules.", replace_system_prompt=True), cwd=None, prelude="Index.")
    assert opts.system_prompt == "Rules.\n\nIndex."
    bare = build_options(AgentSpec(), cwd=None)
    assert bare.system_prompt == {"type": "preset", "preset": "claude_code"}


def test_channel_adds_its_tools_and_server_once() -> None:
    ch = FakeChannel()
    spec = AgentSpec(allowed_tools=["Read", "mcp__human__ask"],
                     mcp_servers={"other": {"type": "stdio", "command": "x"}}, channel=ch)
    opts = build_options(spec, cwd=None)
    assert opts.allowed_tools == ["Read", "mcp__human__ask", "mcp__human__inbox"]
    assert isinstance(opts.mcp_servers, dict) and sorted(opts.mcp_servers) == ["human", "other"]
    assert spec.allowed_tools == ["Read", "mcp__human__ask"]  # the spec itself is not mutated


def test_fork_and_resume_at_need_resume() -> None:
    spec = AgentSpec()
    alone = build_options(spec, cwd=None, fork=True, resume_at="u1")
    assert (alone.resume, alone.fork_session, alone.resume_session_at) == (None, False, None)
    forked = build_options(spec, cwd=None, resume="s1", fork=True, resume_at="u1")
    assert (forked.resume, forked.fork_session, forked.resume_session_at) == ("s1", True, "u1")


def test_store_flush_hooks_and_optional_fields() -> None:
    store = InMemorySessionStore()
    h1, h2 = HookMatcher(matcher="Bash"), HookMatcher(matcher="Write")
    spec = AgentSpec(model="m1", max_turns=3, max_budget_usd=0.5, tools=["Read"], hooks={"PreToolUse": [h1]},
                     extra={"fallback_model": "m2"})
    opts = build_options(spec, cwd=None, session_store=store, include_partial=True, hooks={"PreToolUse": [h2]})
    assert opts.session_store is store and opts.session_store_flush == "eager"
    assert opts.hooks == {"PreToolUse": [h1, h2]}
    assert (opts.model, opts.max_turns, opts.max_budget_usd, opts.tools) == ("m1", 3, 0.5, ["Read"])
    assert opts.include_partial_messages is True and opts.fallback_model == "m2"
    assert build_options(AgentSpec(), cwd=None).model is None


def test_env_layers_host_then_explicit_then_spec_then_compact() -> None:
    host = {"ANTHROPIC_API_KEY": "k-host", "ANTHROPIC_BASE_URL": "http://h", "CLAUDE_CONFIG_DIR": "/c",
            "CLAUDE_CODE_MAX_RETRIES": "4", "HOME": "/root", "PATH": "/bin", "SLACK_BOT_TOKEN": "xoxb"}
    env = resolve_env({"ANTHROPIC_BASE_URL": "http://127.0.0.1:1"}, environ=host)
    assert env == {"ANTHROPIC_API_KEY": "k-host", "ANTHROPIC_BASE_URL": "http://127.0.0.1:1",
                   "CLAUDE_CONFIG_DIR": "/c", "CLAUDE_CODE_MAX_RETRIES": "4"}
    spec = AgentSpec(env={"CLAUDE_CODE_MAX_RETRIES": "1", "DISABLE_AUTO_COMPACT": "0"}, compact="off",
                     compact_window=200_000)
    opts = build_options(spec, cwd=None, env={"CLAUDE_CODE_MAX_RETRIES": "2"})
    assert opts.env["CLAUDE_CODE_MAX_RETRIES"] == "1"
    assert opts.env["DISABLE_AUTO_COMPACT"] == "1"
    assert opts.env["CLAUDE_CODE_AUTO_COMPACT_WINDOW"] == "200000"
    assert AgentSpec(compact="auto").compact_env() == {} and AgentSpec().compact_env() == {}


def test_invalid_compact_is_rejected_at_construction() -> None:
    with pytest.raises(ValueError, match="compact"):
        AgentSpec(compact="sometimes")


def test_has_credentials(tmp_path: Path) -> None:
    nohome = {"HOME": str(tmp_path / "empty-home")}
    assert not has_credentials(nohome)
    assert not has_credentials({**nohome, "ANTHROPIC_API_KEY": ""})
    assert has_credentials({"ANTHROPIC_API_KEY": "k"})
    assert has_credentials({"ANTHROPIC_AUTH_TOKEN": "t"})
    assert has_credentials({"CLAUDE_CODE_USE_BEDROCK": "1"})
    assert not has_credentials({"CLAUDE_CONFIG_DIR": str(tmp_path)})
    (tmp_path / ".credentials.json").write_text("{}")
    assert has_credentials({"CLAUDE_CONFIG_DIR": str(tmp_path)})
    login = tmp_path / "home" / ".claude"
    login.mkdir(parents=True)
    (login / ".credentials.json").write_text("{}")
    assert has_credentials({"HOME": str(tmp_path / "home")})  # `claude login` without CLAUDE_CONFIG_DIR


def test_bypass_as_root_needs_is_sandbox(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 0)
    monkeypatch.delenv("IS_SANDBOX", raising=False)
    spec = AgentSpec(permission_mode="bypassPermissions")
    with pytest.raises(ValueError, match="IS_SANDBOX=1"):
        build_options(spec, cwd=None)
    with pytest.raises(ValueError):  # the CLI wants exactly "1"
        build_options(spec, cwd=None, env={"IS_SANDBOX": "yes"})
    assert build_options(spec, cwd=None, env={"IS_SANDBOX": "1"}).permission_mode == "bypassPermissions"
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    assert build_options(spec, cwd=None).permission_mode == "bypassPermissions"


# -- the real CLI honours the compiled options ---------------------------------------------------

async def _run(opts: ClaudeAgentOptions) -> list[Any]:
    return [m async for m in query(prompt="go", options=opts)]


def _texts(msgs: list[Any]) -> list[str]:
    return [b.text for m in msgs if isinstance(m, AssistantMessage) for b in m.content if isinstance(b, TextBlock)]


async def test_a_working_spec_writes_and_runs_bash_unattended(double_factory: Any, cli_home: Path,
                                                            tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    md = await double_factory(scenario_of({"name": "main", "turn": [
        {"say": "Writing.", "call": [{"tool": "Write", "input": {"file_path": str(ws / "a.txt"), "content": "hi"}}]},
        {"say": "Running.", "call": [{"tool": "Bash", "input": {
            "command": "echo $((6*7)) > b.txt && echo compact=$DISABLE_AUTO_COMPACT && cat b.txt a.txt"}}]},
        {"say": "Bash said: {last_tool_result}"},
    ]}))
    spec = AgentSpec(system_prompt="You are the flower test agent.", compact="off", max_turns=5,
                     permission_mode="acceptEdits", allowed_tools=["Read", "Glob", "Grep", "Bash"])
    # A HOME of its own: the Bash tool sources the user's shell config, which on a CI box may run a version
    # manager's rehash (60 s on a stale lock, and its complaint in the tool's output).
    home = tmp_path / "home"
    home.mkdir()
    msgs = await _run(build_options(spec, cwd=ws, env={**md.env(cli_home), "HOME": str(home)}))
    assert not [m for m in msgs if isinstance(m, SystemMessage) and m.subtype == "permission_denied"]
    assert (ws / "a.txt").read_text() == "hi" and (ws / "b.txt").read_text().strip() == "42"
    assert _texts(msgs)[-1].split() == ["Bash", "said:", "compact=1", "42", "hi"]
    assert "You are the flower test agent." in system_text(md.model_requests()[0].body)
    assert isinstance(msgs[-1], ResultMessage) and not msgs[-1].is_error


async def test_read_only_role_is_refused_writes_but_reaches_its_channel(double_factory: Any, cli_home: Path,
                                                                         tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    md = await double_factory(scenario_of({"name": "main", "turn": [
        {"say": "Try.", "call": [{"tool": "Write", "input": {"file_path": str(ws / "x.txt"), "content": "no"}}]},
        {"say": "Ask.", "call": [{"tool": "mcp__human__ask", "input": {"question": "Colour?", "options": []}}]},
        {"say": "Human: {last_tool_result}"},
    ]}))
    ch = FakeChannel("blue")
    spec = AgentSpec(channel=ch, max_turns=5)  # the defaults: "default" mode, Read/Glob/Grep approved
    msgs = await _run(build_options(spec, cwd=ws, env=md.env(cli_home)))
    denied = [m for m in msgs if isinstance(m, SystemMessage) and m.subtype == "permission_denied"]
    assert len(denied) == 1 and not (ws / "x.txt").exists()
    assert ch.asked == [{"question": "Colour?", "options": []}]
    assert _texts(msgs)[-1] == "Human: blue"


def test_channel_sets_an_mcp_tool_timeout_longer_than_the_answer_window(tmp_path: Path) -> None:
    from flower_core.human import HumanChannel
    from flower_core.spec import AgentSpec, ask_tool_timeout_ms, build_options

    ch = HumanChannel(timeout_s=1800.0)
    opts = build_options(AgentSpec(channel=ch), cwd=tmp_path, env={})
    assert int(opts.env["MCP_TOOL_TIMEOUT"]) == (1800 + 300) * 1000
    assert ask_tool_timeout_ms(None) > 24 * 3600 * 1000
    forever = build_options(AgentSpec(channel=HumanChannel(timeout_s=None)), cwd=tmp_path, env={})
    assert int(forever.env["MCP_TOOL_TIMEOUT"]) == ask_tool_timeout_ms(None)
