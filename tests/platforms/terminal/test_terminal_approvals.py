"""The terminal asks for tool approvals at its prompt: y once, a for the run, n or words deny (a real pipe,
a real HumanChannel with an ApprovalGate; the gate's decisions are what the CLI would be told)."""

from __future__ import annotations

import asyncio

from adapters.terminal import StdinReader
from flower_core import HumanChannel
from flower_core.human.approval import ApprovalGate
from flower_core.permissions import Policy
from tests.platforms.terminal.test_terminal_stdin import Pipe, pipe, until, wired

__all__ = ["pipe"]


async def test_y_a_n_and_words_decide_approvals_at_the_prompt(pipe: Pipe) -> None:
    ch = HumanChannel(timeout_s=30)
    ch.approvals = gate = ApprovalGate(Policy.of(ask=["Bash", "Write"]), cwd="/w")
    render, out, _ = wired(ch)
    reader = StdinReader(ch, render, fd=pipe.r, poll_s=0.05)
    reader.start()
    try:
        async def decided(tool: str, args: dict[str, str], line: str) -> tuple[bool, str, str]:
            deciding = asyncio.create_task(gate.decide(ch, tool, args))
            await until(lambda: ch.pending_approvals())
            pipe.type(line)
            d = await asyncio.wait_for(deciding, 5)
            return d.allow, d.how, d.message

        assert await decided("Bash", {"command": "make test"}, "y\n") == (True, "once", "")
        assert "  ? the agent wants to run Bash: make test" in out.getvalue()
        assert "  + Bash allowed once" in out.getvalue()
        allowed, how, _ = await decided("Write", {"file_path": "/w/a.txt", "content": "x"}, "n\n")
        assert (allowed, how) == (False, "deny") and "  . Write denied — it did not run" in out.getvalue()
        allowed, how, message = await decided("Write", {"file_path": "/w/b.txt"}, "not that file, use c.txt\n")
        assert (allowed, how) == (False, "deny") and message.endswith("not that file, use c.txt")
        assert "  . Write denied: not that file, use c.txt — it did not run" in out.getvalue()
        assert await decided("Bash", {"command": "ls"}, "a\n") == (True, "run", "")
        assert "  + Bash allowed for the rest of this run" in out.getvalue()
        assert (await gate.decide(ch, "Bash", {"command": "pwd"})).how == "allowed"  # not asked again
        assert ch.pending_approvals() == []
    finally:
        reader.stop()
