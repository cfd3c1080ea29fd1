"""What the plan-first tests share: the plans, the scenario (an edit tried while planning, the plan(s), the edit,
the end), the card as every platform shows it, and what the model read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flower_core.human.plan_review import OPTIONS

PLAN = "1. Write notes.txt with the word yo.\n2. Say done."
PLAN2 = "1. Add a test first.\n2. Write notes.txt with the word yo."
WORDS = "Add a test first."
CARD_TITLE = "📋 The agent's plan — nothing changes before it is approved"
BUTTONS = list(OPTIONS)


def write(path: str | Path, content: str) -> dict[str, Any]:
    return {"tool": "Write", "input": {"file_path": str(path), "content": content}}


def turns(path: str | Path, *, plans: tuple[str, ...] = (PLAN,)) -> list[dict[str, Any]]:
    """The edit of ``path`` tried while planning (refused), the plan(s), the edit, the end."""
    early = [{"say": "Trying to write early.", "call": [write(path, "early")]}]
    presented = [{"say": "Here is my plan.", "call": [{"tool": "ExitPlanMode", "input": {"plan": p}}]} for p in plans]
    return early + presented + [{"say": "Writing.", "call": [write(path, "yo")]}, {"say": "Done: {last_tool_result}"}]


def tool_results(md: Any) -> list[str]:
    """The last tool result of every request the model double served, in order."""
    return [r.last_tool_result for r in md.model_requests()]


def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    return ws
