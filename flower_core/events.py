"""Event: the one shape every front end consumes. normalize() flattens SDK messages into it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

EventKind = Literal[
    "text", "thinking", "prompt", "tool_call", "tool_result", "result", "error", "reset",
    "system", "task", "unknown", "ask", "retry", "step", "handoff",
]

EVENT_KINDS: tuple[str, ...] = (
    "text", "thinking", "prompt", "tool_call", "tool_result", "result", "error", "reset",
    "system", "task", "unknown", "ask", "retry", "step", "handoff",
)


@dataclass
class Event:
    """One thing that happened in a run. Front ends read kind/text/tool/payload, never raw."""

    kind: EventKind
    text: str = ""
    tool: str = ""
    payload: dict[str, Any] = field(default_factory=dict)
    raw: Any = None

    def __str__(self) -> str:
        if self.kind == "tool_call":
            return f"[{self.tool}] {self.text}"
        return self.text or f"<{self.kind}>"

    def to_dict(self) -> dict[str, Any]:
        """The JSON-safe part of the event (raw is deliberately left out)."""
        return {"kind": self.kind, "text": self.text, "tool": self.tool, "payload": self.payload}
