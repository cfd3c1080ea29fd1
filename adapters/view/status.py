"""The status card: one message per run, edited in place as the run moves.

`StatusCard` is plain state the run view updates from events; `render()` turns it into the
`OutMessage` keyed "status". The card carries the live-run buttons (interrupt, oracle, stop) until
the run ends. With a cost cap it shows spent / cap and turns to the "warning" tone at 80% of it
("danger" once reached); the oracle's side questions are counted in and shown on their own line.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import adapters.view.fmt as fmt
from adapters.ids import encode
from adapters.platform import Button, OutMessage
from adapters.view.endings import ending_of

STATUS_KEY = "status"

# state -> (icon, label). "waiting" = a question is open; "interrupted" = a human cut in and the
# session is resuming with their words; "died" = the bot process stopped under the run.
STATES: dict[str, tuple[str, str]] = {
    "starting": ("⏳", "Starting"),
    "running": ("▶️", "Running"),
    "waiting": ("❓", "Waiting for an answer"),
    "approving": ("🔐", "Waiting for approval"),  # every open card is a tool call waiting for a person
    "parked": ("🅿️", "Parked — waiting for an answer"),  # no CLI process until the answer comes
    "parked_approving": ("🅿️", "Parked — waiting for approval"),  # the same, on a tool call's approval
    "reviewing": ("📋", "Waiting for the plan's review"),  # a plan-first run's plan card is open
    "parked_reviewing": ("🅿️", "Parked — waiting for the plan's review"),
    "interrupted": ("⏸️", "Interrupted"),
    "done": ("✅", "Done"),
    "failed": ("❌", "Failed"),
    "stopped": ("⏹️", "Stopped"),
    "died": ("💤", "Stopped: it could not come back after a restart"),
}
FINAL_STATES = frozenset({"done", "failed", "stopped", "died"})
PARKED_STATES = frozenset({"parked", "parked_approving", "parked_reviewing"})
WARN_SHARE = 0.8  # of the cost cap: from here on the card is a warning


@dataclass
class StatusCard:
    run_id: str
    task: str
    started_at: float
    window: int = 1_000_000
    state: str = "starting"
    step_name: str = ""
    step_index: int = 0
    step_total: int = 0
    step_note: str = ""  # "resumed" / "woken" / "reused"
    context: int = 0
    cost_usd: float = 0.0
    aside_usd: float = 0.0  # the oracle's side questions: counted against the cap, shown apart
    cap_usd: float | None = None  # the run's cost cap, once a budget event reported one
    ended_at: float | None = None
    round: int = 1  # 2, 3…: the run was continued after it ended (the title says so)
    origin: str = ""  # what started it when no person did ("⏰ Daily triage, 09:00"): the title's start
    out_of_budget: bool = False  # its cost cap stopped it (the budget's "stopped" event): how it ends
    model: str = ""  # the run's model and effort as chosen ("" = the bot's default, not shown)
    effort: str = ""
    tools: deque[str] = field(default_factory=lambda: deque(maxlen=3))

    def step_text(self) -> str:
        if not self.step_total:
            return "—"
        note = f" ({self.step_note})" if self.step_note else ""
        return f"{self.step_index}/{self.step_total} {self.step_name}{note}"

    def share(self) -> float | None:
        """(run + side questions) / cap; None without a cap."""
        if self.cap_usd is None:
            return None
        total = self.cost_usd + self.aside_usd
        return total / self.cap_usd if self.cap_usd > 0 else 1.0

    def tone(self) -> str:
        share = self.share()
        if share is None:
            return ""
        return "danger" if share >= 1.0 else "warning" if share >= WARN_SHARE else ""

    def budget_text(self) -> str:
        """"$4.22 / $5.00 (84%) ⚠️" — spent including side questions, against the cap."""
        share = self.share()
        if share is None or self.cap_usd is None:
            return "no cap"
        mark = " ⛔" if share >= 1.0 else " ⚠️" if share >= WARN_SHARE else ""
        return f"{fmt.money(self.cost_usd + self.aside_usd)} / {fmt.money(self.cap_usd)} ({share:.0%}){mark}"

    def model_text(self) -> str:
        """"claude-opus-4-6 · effort high"; "" when neither was chosen."""
        parts = [self.model] if self.model else []
        if self.effort:
            parts.append(f"effort {self.effort}")
        return " · ".join(parts)

    def context_text(self) -> str:
        if not self.context:
            return f"— / {fmt.tokens(self.window)}"
        pct = 100.0 * self.context / self.window if self.window else 0.0
        return f"{fmt.tokens(self.context)} / {fmt.tokens(self.window)} ({pct:.0f}%)"


def render(card: StatusCard, now: float) -> OutMessage:
    icon, label = STATES.get(card.state, ("•", card.state))
    title = f"{card.origin} · {icon} {label}" if card.origin else f"{icon} {label}"
    if card.round > 1:
        title += f" · round {card.round}"
    if card.step_total:
        title += f" · step {card.step_index}/{card.step_total} {card.step_name}"
    end = card.ended_at if card.ended_at is not None else now
    fields = [
        ("Step", card.step_text()),
        ("Context", card.context_text()),
        ("Cost", fmt.money(card.cost_usd)),
        ("Elapsed", fmt.duration(end - card.started_at)),
        ("State", label),
    ]
    if card.aside_usd > 0:
        fields.insert(3, ("Side questions", fmt.money(card.aside_usd)))
    if card.cap_usd is not None:
        fields.insert(3, ("Budget", card.budget_text()))
    if card.model_text():
        fields.insert(1, ("Model", card.model_text()))
    lines = [f"Task: {fmt.one_line(card.task, 200)}"]
    if card.tools:
        lines.append("Last tools: " + " · ".join(card.tools))
    buttons: list[Button] = []
    if card.state not in FINAL_STATES:
        buttons = [
            Button("Interrupt…", encode("int", card.run_id)),
            Button("Ask the oracle…", encode("orc", card.run_id)),
            Button("Stop", encode("stop", card.run_id), "danger"),
        ]
    elif card.state == "died":  # it could not come back by itself: a person may try again
        buttons = [Button("Wake", encode("wake", card.run_id), "primary")]
    tone = ending_of(card.state, out_of_budget=card.out_of_budget).tone if card.state in FINAL_STATES else card.tone()
    return OutMessage(STATUS_KEY, "status", "\n".join(lines), title=title, fields=fields, buttons=buttons,
                      replace=True, tone=tone)
