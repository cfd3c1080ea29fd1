"""What the bundled CLI does with a question's tool call cut off by closing it: the facts parking
rests on (docs/parking.md), checked against the real CLI so an upgrade that changes them fails here."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from claude_agent_sdk import ClaudeSDKClient, ResultMessage, project_key_for_directory

from flower_core.human import HumanChannel
from flower_core.runtime.attempt import Attempt
from flower_core.runtime.parked import CONTINUE_MAX_AGE_ENV, call_entry, continue_env, result_entry
from flower_core.session_store import SQLiteSessionStore
from flower_core.spec import AgentSpec, build_options
from tests.conftest import scenario_of
from tests.support.parking_support import ask_call, last_two

TURNS = [{"say": "Asking.", "call": [ask_call("Which colour?", ["red", "blue"])]},
         {"say": "The human said: {last_tool_result}"}]
NOTE = "(a short note)"


class Session:
    """One stored session on the double whose last turn is a question cut off by closing the CLI."""

    def __init__(self, md: Any, home: Path, tmp: Path) -> None:
        self.md, self.home = md, home
        self.ws = tmp / "ws"
        self.ws.mkdir(exist_ok=True)
        self.store = SQLiteSessionStore(tmp / "sessions.db")
        self.sid = ""
        self.call_id = ""

    def options(self, *, resume: str | None = None, env: dict[str, str] | None = None) -> Any:
        ch = HumanChannel(timeout_s=600)
        spec = AgentSpec(name="asker", allowed_tools=["Read"], channel=ch, max_turns=6, env=dict(env or {}))
        return build_options(spec, cwd=self.ws, env=self.md.env(self.home), session_store=self.store, resume=resume)

    @property
    def key(self) -> Any:
        return {"project_key": project_key_for_directory(str(self.ws)), "session_id": self.sid}

    async def entries(self) -> list[dict[str, Any]]:
        return [dict(e) for e in await self.store.load(self.key) or []]

    async def cut_off(self, *, interrupt: bool) -> list[str]:
        """Ask, then close the CLI while the call waits; the message types the closing produced."""
        client = ClaudeSDKClient(self.options())
        await client.connect()
        await client.query("pick a colour")
        seen: list[str] = []

        async def consume() -> None:
            async for msg in client.receive_response():
                self.sid = getattr(msg, "session_id", None) or self.sid
                if self.call_id:
                    seen.append(type(msg).__name__)
                for block in getattr(msg, "content", None) or []:
                    if getattr(block, "name", "") == "mcp__human__ask":
                        self.call_id = block.id
        task = asyncio.create_task(consume())
        await self.md.wait_for(lambda reqs: len(reqs) >= 1)
        while not self.call_id or not call_entry(await self.entries() if self.sid else [], self.call_id):
            await asyncio.sleep(0.05)  # the transcript mirror is asynchronous: wait until the call is stored
        if interrupt:
            await client.interrupt()
            await asyncio.wait_for(task, 30)
        await client.disconnect()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return seen

    async def resume(self, prompt: str | None, env: dict[str, str] | None = None, *, idle: float = 60.0) -> Any:
        return await Attempt(self.options(resume=self.sid, env=env), prompt, idle_timeout=idle).run()


@asynccontextmanager
async def session(double_factory: Any, cli_home: Path, tmp_path: Path) -> AsyncIterator[Session]:
    s = Session(await double_factory(scenario_of({"name": "main", "turn": TURNS})), cli_home, tmp_path)
    try:
        yield s
    finally:
        s.store.close()


def tail_types(entries: list[dict[str, Any]], call_id: str) -> list[str]:
    after = entries[entries.index(call_entry(entries, call_id) or {}) + 1:]
    return [e["type"] for e in after if e.get("type") in ("user", "assistant")]


async def test_closing_the_cli_mid_call_stores_nothing_after_the_call(double_factory: Any, cli_home: Path,
                                                                      tmp_path: Path) -> None:
    async with session(double_factory, cli_home, tmp_path) as s:
        assert await s.cut_off(interrupt=False) == []
        assert tail_types(await s.entries(), s.call_id) == []
        # Resumed with a prompt, the CLI closes the call itself and stands in an assistant turn.
        asked = len(s.md.model_requests())
        out = await s.resume("go on")
        req = s.md.model_requests()[asked]
        msgs = [(m["role"], m["content"] if isinstance(m["content"], str) else m["content"][0].get("type"))
                for m in req.body["messages"][-3:]]
        assert out.ok and msgs == [("user", "tool_result"), ("assistant", "text"), ("user", "text")]
        assert req.body["messages"][-3]["content"][0]["content"].startswith("[Tool call interrupted")
        assert req.body["messages"][-2]["content"][0]["text"] == "No response requested."


async def test_interrupting_the_cli_mid_call_stores_a_rejection(double_factory: Any, cli_home: Path,
                                                                tmp_path: Path) -> None:
    async with session(double_factory, cli_home, tmp_path) as s:
        seen = await s.cut_off(interrupt=True)
        assert seen[-1] == ResultMessage.__name__
        entries = await s.entries()
        assert tail_types(entries, s.call_id) == ["user", "user"]
        rejected = entries[entries.index(call_entry(entries, s.call_id) or {}) + 1:]
        texts = [str(e["message"]["content"]) for e in rejected if e.get("type") == "user"]
        assert "doesn't want to proceed" in texts[0] and "[Request interrupted by user for tool use]" in texts[1]


async def test_a_written_result_and_continue_give_the_model_the_answer_as_the_tool_result(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    async with session(double_factory, cli_home, tmp_path) as s:
        await s.cut_off(interrupt=False)
        call = call_entry(await s.entries(), s.call_id)
        assert call is not None
        await s.store.append(s.key, [result_entry(call, s.call_id, "blue")])  # type: ignore[list-item]
        asked = len(s.md.model_requests())
        out = await s.resume(None, continue_env(NOTE))  # no prompt at all: the CLI continues on its own
        req = s.md.model_requests()[asked]
        assert out.ok and out.text == "The human said: blue" and req.turn == 1
        assert last_two(req) == [
            {"role": "assistant", "blocks": [("text", "", "Asking."), ("tool_use", s.call_id, "mcp__human__ask")]},
            {"role": "user", "blocks": [("tool_result", s.call_id, "blue"), ("text", "", NOTE)]},
        ]


async def test_the_cli_does_not_continue_a_turn_past_its_age_limit(double_factory: Any, cli_home: Path,
                                                                   tmp_path: Path) -> None:
    async with session(double_factory, cli_home, tmp_path) as s:
        await s.cut_off(interrupt=False)
        call = call_entry(await s.entries(), s.call_id)
        assert call is not None
        await s.store.append(s.key, [result_entry(call, s.call_id, "blue")])  # type: ignore[list-item]
        asked = len(s.md.model_requests())
        out = await s.resume(None, {**continue_env(NOTE), CONTINUE_MAX_AGE_ENV: "1"}, idle=3.0)
        assert not out.ok and "did not continue the interrupted turn" in (out.error or "")
        assert len(s.md.model_requests()) == asked  # it sat waiting for a prompt: hence the lifted limit


async def test_a_written_result_resumed_with_a_prompt_still_gets_a_stand_in_turn(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    async with session(double_factory, cli_home, tmp_path) as s:
        await s.cut_off(interrupt=False)
        call = call_entry(await s.entries(), s.call_id)
        assert call is not None
        await s.store.append(s.key, [result_entry(call, s.call_id, "blue")])  # type: ignore[list-item]
        asked = len(s.md.model_requests())
        assert (await s.resume("go on")).ok
        tail = s.md.model_requests()[asked].body["messages"][-3:]
        assert tail[0]["content"][0]["type"] == "tool_result" and tail[0]["content"][0]["content"][0]["text"] == "blue"
        assert tail[1] == {"role": "assistant", "content": [{"type": "text", "text": "No response requested."}]}
        assert tail[2]["content"][-1]["text"] == "go on"


async def test_continuing_without_a_written_result_reruns_the_turn(double_factory: Any, cli_home: Path,
                                                                   tmp_path: Path) -> None:
    async with session(double_factory, cli_home, tmp_path) as s:
        await s.cut_off(interrupt=False)
        asked = len(s.md.model_requests())
        rerun = asyncio.create_task(s.resume(None, continue_env(NOTE)))
        try:
            await s.md.wait_for(lambda reqs: len(reqs) > asked)
        finally:
            rerun.cancel()
            await asyncio.gather(rerun, return_exceptions=True)
        req = s.md.model_requests()[asked]
        assert req.turn == 0  # the unanswered call was dropped: the model is asked the first turn again
        assert all(m["role"] != "assistant" for m in req.body["messages"]) and NOTE in str(req.body["messages"])


async def test_a_cli_started_on_the_session_before_the_answer_cannot_take_it(double_factory: Any, cli_home: Path,
                                                                              tmp_path: Path) -> None:
    """Fact 12: a CLI resumed (no prompt) before the answer exists closes the open call itself at start-up; the
    answer streamed to it later as [tool_result, text] never reaches the model, only the text does."""
    async with session(double_factory, cli_home, tmp_path) as s:
        await s.cut_off(interrupt=False)
        client = ClaudeSDKClient(s.options(resume=s.sid))
        await client.connect()
        try:
            asked = len(s.md.model_requests())

            async def answer() -> AsyncIterator[dict[str, Any]]:
                yield {"type": "user", "parent_tool_use_id": None, "session_id": s.sid, "message": {
                    "role": "user", "content": [{"type": "tool_result", "tool_use_id": s.call_id, "content": "blue"},
                                                {"type": "text", "text": NOTE}]}}

            await client.query(answer())
            async for msg in client.receive_response():
                if isinstance(msg, ResultMessage):
                    break
        finally:
            await client.disconnect()
        req = s.md.model_requests()[asked]
        sent = str(req.body["messages"])
        results = [b.get("content") for m in req.body["messages"] if isinstance(m["content"], list)
                   for b in m["content"] if b.get("type") == "tool_result"]
        assert "[Tool call interrupted" in sent and "No response requested." in sent and "blue" not in results
        assert req.body["messages"][-1]["content"][-1]["text"] == NOTE


def test_a_warm_spare_cannot_be_started_on_a_stored_session(tmp_path: Path) -> None:
    """Fact 11: the CLI's pre-warmed spare mode refuses --resume (and its claim binds a fresh session)."""
    import os
    import subprocess

    import claude_agent_sdk

    cli = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(tmp_path), "ANTHROPIC_API_KEY": "x",
           "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}
    done = subprocess.run([str(cli), "--print", "--input-format", "stream-json", "--output-format", "stream-json",
                           "--verbose", "--await-claim", "--resume", "0b7c3d52-1111-4222-8333-944455556666"],
                          input="", capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path)
    said = done.stdout + done.stderr
    assert "--await-claim cannot be combined with --continue, --resume or --fork-session" in said
