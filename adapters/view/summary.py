"""The final summary card: how the run ended, what it produced, what it cost."""

from __future__ import annotations

from dataclasses import dataclass

import adapters.view.fmt as fmt
from adapters.platform import OutMessage
from adapters.view.endings import ending_of

RESULT_MAX = 2500  # the full text is in the workspace; the thread gets the gist


@dataclass(frozen=True)
class RunOutcome:
    """How a run ended. state: done / failed / stopped / died."""

    state: str
    result: str = ""
    cost_usd: float = 0.0
    duration_s: float = 0.0
    failed_at: str = ""
    error: str = ""
    by: str = ""  # who stopped it
    steps: int = 0


def render(key: str, out: RunOutcome, who: fmt.Who = fmt.plain_who, *, out_of_budget: bool = False) -> OutMessage:
    """`out_of_budget`: the run's cost cap stopped it (its tone and title say so: endings.py)."""
    ending = ending_of(out.state, out_of_budget=out_of_budget)
    title = f"{ending.icon} {ending.title}"
    if ending.name == "ended":
        title += f" ({out.state})"
    if out.state == "failed" and out.failed_at and ending.name == "failed":
        title += f" at step {out.failed_at}"
    if out.state == "stopped" and out.by:
        title += f" by {who(out.by)}"
    fields = [("Cost", fmt.money(out.cost_usd)), ("Duration", fmt.duration(out.duration_s))]
    if out.steps:
        fields.append(("Steps", str(out.steps)))
    if out.failed_at:
        fields.append(("Failed step", out.failed_at))
    lines = []
    if out.result.strip():
        lines.append(fmt.clip(out.result.strip(), RESULT_MAX))
    if out.error:
        lines.append(f"Error: {fmt.one_line(out.error, 500)}")
    if not lines:
        lines.append("(no result text)")
    return OutMessage(key, "summary", "\n\n".join(lines), title=title, fields=fields, important=True,
                      replace=True, tone=ending.tone)
