"""Oracle: ask "where are we?" about a run in progress without touching the run.

It watches the run's events (``observe`` is an ``on_event`` sink; the last ``window`` events are
kept) and answers a question through a read-only side agent (Read/Glob/Grep, 12 turns, $0.5) on a
Runtime of its own under ``<run_dir>/aside``: its sessions, cost and manifest never mix with the
main run's, and nothing it says enters the main run's context. Given the run's ``budget``, its cost
is booked there as ``aside``: counted against the cap, shown apart.
"""

from __future__ import annotations

from collections import deque
from pathlib import Path
from typing import Any

import flower_core.roles as roles
from flower_core.events import Event, is_partial
from flower_core.payloads import AskPayload, StepPayload, ThreadPayload, ToolResultPayload

ORACLE_OPENING = "Side question about a run in progress."
ASIDE_DIR = "aside"
_LINE = 240


def render_event(ev: Event) -> str | None:
    """One compact line for the oracle's prompt; None for what it does not need (thinking, results)."""
    who = "subagent " if ThreadPayload.of(ev).subagent else ""
    text = " ".join(str(ev.text).split())
    if ev.kind == "thinking" or (ev.kind == "tool_result" and not ToolResultPayload.of(ev).is_error):
        return None
    if ev.kind == "step":
        line = f"== step {text} ({StepPayload.of(ev).position})"
    elif ev.kind == "text":
        line = f"{who}said: {text}"
    elif ev.kind == "tool_call":
        line = f"{who}[{ev.tool}] {text}"
    elif ev.kind == "tool_result":
        line = f"{who}tool error: {text}"
    elif ev.kind == "prompt":
        line = f"{who}task given: {text}"
    elif ev.kind == "ask":
        ask = AskPayload.of(ev)
        if ask.kind == "mail":
            line = f"human said ({ask.state}): {text}"
        else:
            line = f"asked human ({ask.state}): {text}" + (f" -> {ask.answer}" if ask.answer else "")
    else:
        line = f"{ev.kind}: {text}"
    return line if len(line) <= _LINE else line[: _LINE - 1] + "…"


class Oracle:
    """Side questions over the recent event window and the workbench; ``ask`` returns the answer text."""

    def __init__(self, *, workspace: str | Path, run_dir: str | Path = "runs", workbench: Any = None,
                 env: dict[str, str] | None = None, window: int = 60, spec: Any = None, budget: Any = None) -> None:
        self.workspace = Path(workspace)
        self.run_dir = Path(run_dir) / ASIDE_DIR
        self.workbench = workbench
        self.env = env
        self.events: deque[Event] = deque(maxlen=window)
        self.spec = spec if spec is not None else roles.oracle()
        self.results: list[Any] = []
        self.budget = budget  # the run's Budget: side questions are booked there as "aside"
        self._runtime: Any = None

    def observe(self, ev: Event) -> None:
        """An on_event sink: remember the event (the oldest fall off past ``window``), without its SDK message:
        the prompt reads kind, text and payload only, and a run that waits for hours (parked) need not keep
        the CLI's raw messages alive (the init message alone is ~20 kB of parsed JSON). Streamed words are
        left out (the complete text follows them)."""
        if not is_partial(ev):
            self.events.append(Event(ev.kind, ev.text, ev.tool, ev.payload) if ev.raw is not None else ev)

    __call__ = observe

    def prompt(self, question: str) -> str:
        lines = [line for ev in list(self.events) if (line := render_event(ev)) is not None]
        recent = "\n".join(lines) or "(no events yet)"
        parts = [ORACLE_OPENING, f"The question: {question.strip()}",
                 f"The run's recent events, oldest first:\n{recent}"]
        wb = self.workbench
        if wb is not None:
            where = [f"- {label}: {getattr(wb, attr)}" for label, attr in (
                ("brief", "brief"), ("goal", "goal"), ("Q&A log", "qa_log"), ("notes", "notes"),
                ("artifacts", "artifacts")) if hasattr(wb, attr)]
            parts.append("The workbench (read what you need):\n" + "\n".join(where))
        return "\n\n".join(parts)

    async def ask(self, question: str, *, on_event: Any = None) -> str:
        """Run the side agent once; its text, or a one-line note when it could not answer."""
        rt = self._aside()
        result = await rt.run(self.spec, self.prompt(question), step_name=f"oracle#{len(self.results) + 1}",
                              on_event=on_event)
        self.results.append(result)
        if self.budget is not None:
            self.budget.book(getattr(result, "cost_usd", 0.0), aside=True, step=result.step)
        if result.ok and result.text.strip():
            return str(result.text)
        return f"(the oracle could not answer: {result.error or 'no answer'})"

    def total_cost(self) -> float:
        return round(sum(getattr(r, "cost_usd", 0.0) for r in self.results), 4)

    def close(self) -> None:
        if self._runtime is not None:
            self._runtime.close()
            self._runtime = None

    def _aside(self) -> Any:
        if self._runtime is None:
            from flower_core.runtime import Resilience, Runtime  # the SDK loads only when a question is asked

            # No handoff: a side question is short, and its own context never matters to the run. A side
            # question is answered now or not at all: few attempts, no waiting for the network.
            self._runtime = Runtime(workspace=self.workspace, run_dir=self.run_dir, env=self.env, handoff=False,
                                    resilience=Resilience(max_attempts=3, base_delay=2.0, max_delay=60.0,
                                                          probe=False))
        return self._runtime
