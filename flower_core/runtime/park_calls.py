"""What is in flight in one attempt, and which waiting ask its one call is waiting on (for parking.py and park_live.py).

A run may park only while the main thread's one call waits on a person: a question (the channel's
``mcp__human__ask``), a tool call whose approval is waiting (park_approval.py) or a plan (park_plan.py).
``Calls`` follows the attempt's events; ``waiting_ask`` names the ask that call waits on, if any.
"""

from __future__ import annotations

import asyncio
from typing import Any

# Imported as modules, not through the package: flower_core.runtime's __init__ names runtime.py, which
# imports parking.py, which imports this module (an import circle, tests/test_import_circles.py).
import flower_core.runtime.park_approval as park_approval
import flower_core.runtime.park_plan as park_plan
from flower_core.events import Event
from flower_core.payloads import TaskPayload, ToolCallPayload, ToolResultPayload

_DONE_TASKS = frozenset({"completed", "failed", "killed", "stopped", "cancelled"})


class Calls:
    """What is in flight in one attempt, from its events: tool calls by id, background tasks."""

    def __init__(self) -> None:
        self.main: dict[str, tuple[str, Any]] = {}
        self.side: set[str] = set()  # subagents' calls
        self.tasks: set[str] = set()
        self.changed = asyncio.Event()

    def observe(self, ev: Event) -> None:
        if ev.kind == "tool_call" and (call := ToolCallPayload.of(ev)).id:
            if call.subagent:
                self.side.add(call.id)
            else:
                self.main[call.id] = (ev.tool, call.input)
        elif ev.kind == "tool_result":
            done = ToolResultPayload.of(ev).tool_use_id
            self.main.pop(done, None)
            self.side.discard(done)
        elif ev.kind == "task" and (task := TaskPayload.of(ev)).task_id:
            ended = ev.text == "TaskNotificationMessage" or task.status in _DONE_TASKS
            (self.tasks.discard if ended else self.tasks.add)(task.task_id)
        else:
            return
        self.changed.set()

    def sole(self) -> tuple[str, str, dict[str, Any]] | None:
        """(id, tool, input) of the one call in flight when nothing else runs."""
        if self.side or self.tasks or len(self.main) != 1:
            return None
        call_id, (name, args) = next(iter(self.main.items()))
        return call_id, name, args if isinstance(args, dict) else {}

    def sole_call(self, tool: str) -> tuple[str, dict[str, Any]] | None:
        """(id, input) of the one call in flight when it is ``tool`` and nothing else runs."""
        call = self.sole()
        return (call[0], call[2]) if call is not None and call[1] == tool else None


def parkable(channel: Any) -> Any:
    """The step's channel when it can hold a question while the CLI is closed (a HumanChannel)."""
    needed = ("park", "settled", "withdraw", "restore", "requeue", "pending", "tool_name")
    return channel if channel is not None and all(hasattr(channel, n) for n in needed) else None


def waiting_ask(channel: Any, tool: str, args: dict[str, Any]) -> Any:
    """The channel's one waiting ask that this call waits on: its question, or its tool's approval."""
    if tool == park_plan.TOOL:
        return park_plan.waiting(channel)
    if tool != channel.tool_name:
        return park_approval.waiting(channel, tool, args)
    pending = [a for a in channel.pending() if not getattr(a, "kind", "")]
    if len(pending) != 1:
        return None
    asked = args.get("question")
    same = isinstance(asked, str) and " ".join(asked.split()) == " ".join(pending[0].question.split())
    return pending[0] if same else None
