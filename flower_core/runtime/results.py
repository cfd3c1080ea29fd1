"""StepResult: the complete books of one step, as returned by Runtime.run and kept in manifest.json."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class StepResult:
    """What one ``Runtime.run`` call did, summed over its attempts, interrupts and handoffs.

    ``text`` holds only the main thread's prose (never subagent speech, never synthetic API errors).
    ``session_id`` is always the last session of the step; the ones burned by handoffs are in
    ``retired``, in order. ``attempts`` counts attempts that could fail: interrupts and handoffs do
    not add to it. ``context`` is the main thread's last observed context level.
    """

    step: str
    session_id: str | None = None
    ok: bool = False
    cost_usd: float = 0.0
    num_turns: int = 0
    text: str = ""
    error: str | None = None
    started_at: float = 0.0
    ended_at: float = 0.0
    attempts: int = 1
    errors: list[str] = field(default_factory=list)
    resumed: bool = False
    retired: list[str] = field(default_factory=list)
    context: int = 0
    approvals: list[dict[str, Any]] = field(default_factory=list)  # tool-call decisions (human/approval.py)

    @property
    def duration_s(self) -> float:
        """Wall-clock seconds of the step; 0.0 while it has not ended."""
        if not self.ended_at or not self.started_at:
            return 0.0
        return round(self.ended_at - self.started_at, 2)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe row (``duration_s`` included, since asdict() skips properties)."""
        row = asdict(self)
        row["cost_usd"] = round(self.cost_usd, 6)
        row["duration_s"] = self.duration_s
        return row

    def add_text(self, piece: str) -> None:
        """Append one piece of main-thread prose, keeping pieces apart by a blank line."""
        piece = piece.strip()
        if piece:
            self.text = f"{self.text}\n\n{piece}" if self.text else piece
