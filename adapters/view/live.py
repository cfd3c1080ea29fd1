"""LiveTurn: the model's turn as it happens, as live messages (pure: no I/O).

A live message is one model turn being shown as it is written: its words grow (`open`), are complete
(`said`), then its tool calls follow as tasks (in progress, then complete or error with a short
output), and the next model request closes it (`done`; `cut` when its words never completed). The
agent's plan (its `TodoWrite` list) is one live message of its own, a checklist updated in place
until the run ends.

Only a thread whose platform streams shows live messages (the outbox drops them elsewhere), and the
view makes them only once the run streams at all (its first partial event), so a run without
partial events says exactly what it said before.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import adapters.view.fmt as fmt
from adapters.platform import OutMessage, Task

__all__ = ["PLAN_TOOL", "LiveTurn"]

PLAN_TOOL = "TodoWrite"
TITLE_MAX, OUTPUT_MAX = 120, 200
_PLAN_STATES = {"pending": "pending", "in_progress": "in_progress", "completed": "complete"}


@dataclass
class _Turn:
    key: str
    text: str = ""
    said: bool = False
    tasks: dict[str, Task] = field(default_factory=dict)


class LiveTurn:
    def __init__(self, epoch: str, owner: str) -> None:
        self.epoch, self.owner = epoch, owner
        self._n = 0
        self._turn: _Turn | None = None
        self._plan: tuple[Task, ...] | None = None

    # ---- the turn ---------------------------------------------------------------------------------
    def words(self, text: str) -> OutMessage:
        """More words of the turn's text."""
        turn = self._open()
        turn.text += text
        return self._msg(turn, "open")

    def said(self, text: str) -> tuple[OutMessage, str] | None:
        """The turn's complete text: the message, and its key for the prose that holds the same words.
        None when no words of it were streamed (the prose alone shows it, as before)."""
        turn = self._turn
        if turn is None or turn.said or not turn.text:
            return None
        turn.text, turn.said = text, True
        return self._msg(turn, "said"), turn.key

    def call(self, call_id: str, tool: str, summary: str) -> OutMessage:
        """A tool call of the turn: a task in progress."""
        turn = self._open()
        title = fmt.one_line(f"{fmt.tool_name(tool)} {summary}".strip(), TITLE_MAX)
        turn.tasks[call_id or f"t{len(turn.tasks) + 1}"] = Task(call_id or f"t{len(turn.tasks) + 1}", title)
        return self._msg(turn, "said" if turn.said else "open")

    def result(self, call_id: str, failed: bool, text: str) -> OutMessage | None:
        turn = self._turn
        task = turn.tasks.get(call_id) if turn is not None else None
        if turn is None or task is None:
            return None
        output = fmt.one_line(text, OUTPUT_MAX) if failed or text.strip() else ""
        turn.tasks[call_id] = Task(task.id, task.title, "error" if failed else "complete", output)
        return self._msg(turn, "said" if turn.said else "open")

    def close(self) -> OutMessage | None:
        """The turn is over (the next request, a result, a step…): its message closes as it stands."""
        turn, self._turn = self._turn, None
        if turn is None or not (turn.text.strip() or turn.tasks):
            return None
        finished = turn.said or not turn.text.strip()
        return self._msg(turn, "done" if finished else "cut")

    # ---- the plan ---------------------------------------------------------------------------------
    def plan(self, tool_input: Any) -> OutMessage | None:
        """The agent wrote its plan (TodoWrite's `todos`): the checklist as it stands now."""
        todos = tool_input.get("todos") if isinstance(tool_input, dict) else None
        if not isinstance(todos, list):
            return None
        tasks = []
        for i, item in enumerate(todos, 1):
            if not isinstance(item, dict):
                continue
            title = fmt.one_line(str(item.get("content") or item.get("activeForm") or ""), TITLE_MAX)
            status = _PLAN_STATES.get(str(item.get("status")), "pending")
            if title:
                tasks.append(Task(f"plan-{i}", title, status))
        self._plan = tuple(tasks)
        return self._plan_msg("open")

    def end_plan(self) -> OutMessage | None:
        """The run ended: the plan's message closes as it stands."""
        if self._plan is None:
            return None
        msg = self._plan_msg("done")
        self._plan = None
        return msg

    # ---- pieces -----------------------------------------------------------------------------------
    def _open(self) -> _Turn:
        if self._turn is None:
            self._n += 1
            self._turn = _Turn(f"live:{self.epoch}:{self._n}")
        return self._turn

    def _msg(self, turn: _Turn, state: str) -> OutMessage:
        return OutMessage(turn.key, "live", turn.text, live=state, owner=self.owner, tasks=tuple(turn.tasks.values()))

    def _plan_msg(self, state: str) -> OutMessage:
        return OutMessage(f"plan:{self.epoch}", "live", "", title="Plan", live=state, owner=self.owner,
                          tasks=self._plan or (), plan=True)
