"""Render: Event → terminal lines. Swapping the terminal UI means swapping this one class.

Everything the terminal front end prints goes through one Render: the events of the run (as the
`on_event` sink) and the few lines the input thread and the controller add (receipts, the interrupt
warning, oracle answers, the final summary). Icons are plain ASCII on purpose: emoji and
box-drawing glyphs make some terminals fall back to other fonts and misalign.
"""

from __future__ import annotations

import os
import re
import sys
import threading
from typing import Any, TextIO

from flower_core import Event, is_partial
from flower_core.human.plan_review import GO, GO_ASK, decision_of
from flower_core.human.plan_review import KIND as PLAN
from flower_core.payloads import (
    AskPayload,
    BudgetPayload,
    HandoffPayload,
    MailPayload,
    ResultPayload,
    StepPayload,
    SystemPayload,
    ThreadPayload,
    ToolResultPayload,
)

# SGR styles; used only when colour is on, so tests and pipes see plain text.
_STYLE = {"dim": "2", "bold": "1", "ok": "32", "warn": "33", "error": "31", "ask": "36"}

# Escape sequences and control characters a model or tool might emit (screen clears, cursor moves):
# swallowed so they cannot repaint the user's terminal. Newlines and tabs stay.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-_]|[\x00-\x08\x0b-\x1f\x7f]")

_QUIET_KINDS = frozenset({"thinking", "prompt", "task"})
# Tool calls whose own events say more: a question prints as a question card.
_SHOWN_ELSEWHERE = frozenset({"mcp__human__ask"})
BRAKE = "error_max_budget_usd"  # a result's subtype when the CLI stopped at the cost cap it was given
WARN_SHARE = 0.8


def clean(text: str) -> str:
    """Text safe to print: terminal control sequences removed."""
    return _ESCAPES.sub("", text)


def _one_line(text: str, limit: int = 200) -> str:
    flat = " ".join(clean(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _tool_name(tool: str) -> str:
    """``mcp__human__inbox`` → ``human.inbox``; built-in names unchanged."""
    if tool.startswith("mcp__") and "__" in tool[5:]:
        server, name = tool[5:].split("__", 1)
        return f"{server}.{name}"
    return tool


def _money(value: Any) -> str:
    v = float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0
    return f"${v:.4f}" if v < 1 else f"${v:.2f}"


def _duration(seconds: float) -> str:
    s = max(0, int(seconds))
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class Render:
    """Event → terminal. The only piece to replace for a different terminal look.

    An instance is the ``on_event`` sink: ``render(ev)`` prints; ``lines(ev)`` returns what would be
    printed, so the mapping is testable without a terminal. Writing is serialized by a lock because
    the input thread prints too.
    """

    def __init__(self, stream: TextIO | None = None, *, color: bool | None = None) -> None:
        self._stream = stream
        self._color = color
        self._lock = threading.Lock()
        self._shown_asks: set[str] = set()
        self._budget_warned = False  # the 80%-of-the-cap line is printed once
        self._words = ""  # the main thread's words printed as they were written, their line not yet ended
        self.ui_errors: list[BaseException] = []

    # -- output -----------------------------------------------------------------------------
    @property
    def stream(self) -> TextIO:
        return self._stream if self._stream is not None else sys.stdout

    def _styled(self, text: str, tone: str) -> str:
        use = self._color
        if use is None:  # a terminal that can show colour, unless the user opted out (no-color.org)
            use = (bool(getattr(self.stream, "isatty", lambda: False)()) and "NO_COLOR" not in os.environ
                   and os.environ.get("TERM") != "dumb")
            self._color = use
        if not use or tone not in _STYLE:
            return text
        return f"\x1b[{_STYLE[tone]}m{text}\x1b[0m"

    def write(self, lines: list[str] | list[tuple[str, str]]) -> None:
        """Print lines, each a string or (text, tone). Never raises: a broken terminal must not
        take the run down with it."""
        if not lines:
            return
        try:
            out = []
            for item in lines:
                text, tone = (item, "") if isinstance(item, str) else item
                out.append(self._styled(text, tone))
            with self._lock:
                ended, self._words = "\n" if self._words else "", ""  # words being written end their line first
                self.stream.write(ended + "\n".join(out) + "\n")
                self.stream.flush()
        except Exception as exc:  # the UI is never allowed to break the run
            self.ui_errors.append(exc)

    def _raw(self, text: str, words: str) -> None:
        with self._lock:
            self.stream.write(text)
            self.stream.flush()
            self._words = words

    def say(self, text: str, tone: str = "") -> None:
        """One notice from the front end itself (receipts, warnings)."""
        self.write([(line, tone) for line in text.split("\n")])

    def __call__(self, ev: Event) -> None:
        """The on_event sink: synchronous, quick, never raises. Words being written (partial events) print as
        they arrive; the complete text then prints only what they had not shown."""
        try:
            if is_partial(ev):
                if ev.text and not ThreadPayload.of(ev).subagent:
                    text = clean(ev.text)
                    self._raw(text, self._words + text)
                return
            if ev.kind == "text" and self._words and not ThreadPayload.of(ev).subagent:
                whole, printed = clean(ev.text).rstrip(), self._words
                if whole.startswith(printed) or (printed.startswith(whole) and not printed[len(whole):].strip()):
                    self._raw(whole[len(printed):] + "\n", "")
                    return
            self.write(self.lines(ev))
        except Exception as exc:
            self.ui_errors.append(exc)

    # -- events → lines -----------------------------------------------------------------------
    def lines(self, ev: Event) -> list[tuple[str, str]]:
        """The lines (text, tone) one event prints. Unknown kinds get one dim line."""
        kind = ev.kind
        sub = ThreadPayload.of(ev).subagent
        if kind == "step":
            step = StepPayload.of(ev)
            extra = " (resumed)" if step.resumed else ""
            title = f"=== {clean(ev.text)} ({step.position}){extra} ==="
            return [("", ""), (title, "bold")]
        if kind == "text":
            return [] if sub or not ev.text.strip() else [(clean(ev.text).rstrip(), "")]
        if kind == "tool_call":
            if ev.tool in _SHOWN_ELSEWHERE:
                return []
            bar = "  | " if sub else "  "
            tool, summary = _tool_name(ev.tool), _one_line(ev.text)
            return [(f"{bar}[{tool}] {summary}".rstrip(), "dim" if sub else "")]
        if kind == "tool_result":
            if not ToolResultPayload.of(ev).is_error:
                return []
            return [(f"  x tool failed: {_one_line(ev.text) or '(no text)'}", "error")]
        if kind == "ask":
            ask = AskPayload.of(ev)
            return self._mail(ev) if ask.kind == "mail" else self._ask(ev, ask)
        if kind == "retry":
            return [(f"  ~ retry: {_one_line(ev.text)}", "warn")]
        if kind == "handoff":
            return self._handoff(ev)
        if kind == "error":
            return [(f"  x {_one_line(ev.text, 300)}", "error")]
        if kind == "reset":
            return [(f"  # context reset: {_one_line(ev.text) or 'conversation reset'}", "warn")]
        if kind == "result":
            result = ResultPayload.of(ev)
            cost = result.cost_usd
            if ev.text == BRAKE:  # the CLI stopped at the cost cap it was given: a pause, not a crash
                bits = ["cost cap reached"]
                if cost is not None:
                    bits.append(f"${cost:.4f}")
                return [(f"  - {' · '.join(bits)}", "warn")]
            bits = [clean(ev.text) or "result"]
            if result.num_turns is not None:
                bits.append(f"{result.num_turns} turns")
            if cost is not None:
                bits.append(f"${cost:.4f}")
            return [(f"  - {' · '.join(bits)}", "error" if result.is_error else "dim")]
        if kind == "system":
            if ev.text == "permission_denied":
                return [("  ! a tool was refused by the permission settings", "warn")]
            if SystemPayload.of(ev).subtype == "budget":
                return self._budget(BudgetPayload.of(ev))
            return []
        if kind in _QUIET_KINDS:
            return []
        # "unknown" and any kind added after this UI was written: one dim line, never a crash.
        return [(f"  · {kind}: {_one_line(ev.text)}".rstrip(), "dim")]

    def _budget(self, b: BudgetPayload) -> list[tuple[str, str]]:
        """The cost cap's events: one warning at 80%, and what became of a pause."""
        phase, total, cap = b.phase, _money(b.total), _money(b.cap)
        if phase == "set":
            return [(f"- cost cap {cap}: when the run reaches it, it pauses and asks you here", "dim")]
        if phase == "spent":
            share = b.share
            if share is not None and WARN_SHARE <= share < 1.0 and not self._budget_warned:
                self._budget_warned = True
                return [(f"  ! cost {total} of the {cap} cap ({share:.0%})", "warn")]
            return []
        if phase == "raised":
            out = [(f"  $ cap raised to {cap} — going on in the same session", "ok")]
            if b.note:
                out.append((f"    it hears: {_one_line(b.note)}", "dim"))
            self._budget_warned = False
            return out
        if phase in ("stopped", "refused"):
            return [(f"  x {_one_line(b.note or 'stopped at the cost cap', 300)}", "error")]
        return []

    def _budget_ask(self, ask: AskPayload) -> list[tuple[str, str]]:
        figures = ask.figures
        total, cap, aside = _money(figures.total), _money(figures.cap), figures.aside
        side = f" (side questions {_money(aside)} of it)" if aside is not None and aside > 0 else ""
        options = list(ask.options)
        out = [(f"  $ Budget reached: spent {total} of the {cap} cost cap{side} — paused", "ask")]
        for i, opt in enumerate(options, 1):
            after = ""
            if opt.startswith("+"):
                try:
                    after = f"   (cap {_money(float(figures.cap or 0) + float(opt.lstrip('+$')))})"
                except ValueError:
                    after = ""
            out.append((f"     {i}) {_one_line(opt)}{after}", "ask"))
        out.append((f"     (type 1-{len(options)}, an amount like $2, or words with an amount — "
                    "\"wrap up within $2\"; Enter alone stops the run)", "dim"))
        return out

    def _ask(self, ev: Event, ask: AskPayload) -> list[tuple[str, str]]:
        ask_id = ask.id
        state = ask.state or "asked"
        question = _one_line(ev.text, 500)
        if state == "asked" and ask.kind == "budget":
            self._shown_asks.add(ask_id)
            return self._budget_ask(ask)
        if ask.kind == "approval":
            self._shown_asks.add(ask_id)
            return self._approval(ask)
        if ask.kind == PLAN:
            self._shown_asks.add(ask_id)
            return self._plan(ev, ask)
        if state == "asked":
            self._shown_asks.add(ask_id)
            options = list(ask.options)
            out = [(f"  ? {question}", "ask")]
            out += [(f"     {i}) {_one_line(o)}", "ask") for i, o in enumerate(options, 1)]
            how = f"type 1-{len(options)} or your own answer" if options else "type your answer"
            left = ask.remaining
            quota = f"; {left} more questions allowed" if left >= 0 else ""
            out.append((f"     ({how}, then Enter; Enter alone skips{quota})", "dim"))
            return out
        seen = ask_id in self._shown_asks
        about = "" if seen else f" ({question})"
        answer = _one_line(ask.answer)
        if state == "answered":
            return [(f"  + answered: {answer}{about}", "ok")]
        if ask.kind == "budget" and state in ("timeout", "declined"):
            why = "nobody answered in time" if state == "timeout" else "skipped"
            return [(f"  ! budget question {why} — the run stops at its cost cap", "warn")]
        if state == "timeout":
            return [(f"  ! nobody answered{about} — it decides on its own and writes the assumption down", "warn")]
        if state == "declined":
            return [(f"  . skipped{about} — it decides on its own", "dim")]
        if state == "over_budget":
            return [(f"  ! question quota used up, not asked{about}", "warn")]
        if state == "invalid":
            return [(f"  x invalid question{about}", "error")]
        if state == "cancelled":
            return [(f"  . question withdrawn{about}", "dim")]
        return [(f"  · ask {state}{about}", "dim")]

    @staticmethod
    def _approval(ask: AskPayload) -> list[tuple[str, str]]:
        """A tool call waiting for a yes (flower_core/human/approval.py): y once, a for the run, n or words deny."""
        tool, state = ask.call.tool or "a tool", ask.state or "asked"
        args = ask.call.input
        what = _one_line(str(args.get("command") or args.get("file_path") or args or ""), 300)
        if state == "asked":
            return [(f"  ? the agent wants to run {tool}: {what}", "ask"),
                    (f"     (y = once, a = allow {tool} for this run, n = deny, or words to deny with; Enter "
                     "alone denies)", "dim")]
        answer = " ".join(ask.answer.split())
        low = answer.casefold()
        if state == "answered" and low in ("y", "yes", "once", "allow once", "ok", "allow"):
            return [(f"  + {tool} allowed once", "ok")]
        if state == "answered" and (low in ("a", "run", "always") or low.endswith("for this run")):
            return [(f"  + {tool} allowed for the rest of this run", "ok")]
        if state in ("answered", "declined"):
            words = "" if low in ("", "n", "no", "deny") else f": {_one_line(answer)}"
            return [(f"  . {tool} denied{words} — it did not run", "warn")]
        if state == "timeout":
            return [(f"  ! {tool} not approved (nobody answered) — it did not run", "warn")]
        return [(f"  . {tool} approval closed ({state})", "dim")]

    @staticmethod
    def _plan(ev: Event, ask: AskPayload) -> list[tuple[str, str]]:
        """A plan-first run's plan (flower_core/human/plan_review.py): 1 or 2 approve it (the stdin reader turns
        a digit into that option), words are what the agent reads before it plans again."""
        state = ask.state or "asked"
        if state == "asked":
            text = ask.facts.get("plan")
            plan = (clean(text).strip() if isinstance(text, str) else "") or "(the agent presented an empty plan)"
            out = [(f"  ? {_one_line(ev.text, 500)}", "ask")]
            out += [(f"    {line}".rstrip(), "") for line in plan.split("\n")]
            chars, path = ask.facts.get("plan_chars"), ask.facts.get("plan_file")
            cut = isinstance(chars, int) and chars > len(text if isinstance(text, str) else "")
            if cut and isinstance(path, str) and path:
                out.append((f"    (cut here: the whole plan, {chars} characters, is in {clean(path)})", "dim"))
            out.append(("     1) Approve and go  2) Approve, ask before edits  or type words to keep planning", "ask"))
            out.append(("     (nothing changes before you approve; Enter alone: keep planning without words)", "dim"))
            return out
        if state in ("answered", "declined"):
            decision, words = decision_of(ask.answer) if state == "answered" else ("", ask.answer.strip())
            if decision == GO:
                return [("  + plan approved — the agent goes on", "ok")]
            if decision == GO_ASK:
                return [("  + plan approved — edits and commands will ask first", "ok")]
            said = f": {_one_line(words)}" if words else ""
            return [(f"  . keep planning{said} — the agent presents a new plan", "dim")]
        if state == "cancelled":
            return [("  . plan review closed (the run was interrupted) — it is still planning", "dim")]
        return [(f"  · plan review {state}", "dim")]

    @staticmethod
    def _mail(ev: Event) -> list[tuple[str, str]]:
        state = MailPayload.of(ev).state
        text = _one_line(ev.text)
        if state == "queued":
            return [(f"  + queued: {text} (it reads its inbox at the next checkpoint)", "ok")]
        if state == "delivered":
            return [(f"  + delivered: {text}", "ok")]
        return [(f"  · mail {state}: {text}", "dim")]

    @staticmethod
    def _handoff(ev: Event) -> list[tuple[str, str]]:
        handoff = HandoffPayload.of(ev)
        phase = handoff.phase
        out = [(f"  # handoff/{phase}: {_one_line(ev.text)}", "warn")]
        if phase == "done":
            if handoff.path:
                out.append((f"  <- handoff document: {clean(handoff.path)}", ""))
            if handoff.degraded:
                out.append(("  x the handoff document could not be written; a fallback was used", "error"))
        return out

    # -- front-end lines (not events) -------------------------------------------------------------
    @staticmethod
    def hint_lines(*, oracle: bool) -> list[tuple[str, str]]:
        ask = "; ?question = ask the oracle without disturbing the run" if oracle else ""
        return [("- type any time: a line is added to its inbox (and the brief)" + ask + ";", "dim"),
                ("  while a question waits, the line answers it; Ctrl-C interrupts", "dim")]

    @staticmethod
    def interrupt_lines(pending: int) -> list[tuple[str, str]]:
        out = [("! Interrupt: a subagent in flight loses its half-done work.", "warn"),
               ("  What should it hear? Type it and press Enter (Enter alone = don't interrupt; "
                "Ctrl-C again = quit)", "warn")]
        if pending:
            out.append((f"  ({pending} question(s) still waiting; the interrupt does not affect them)", "dim"))
        return out

    @staticmethod
    def oracle_lines(question: str, answer: str | None, error: str = "") -> list[tuple[str, str]]:
        if answer is None:
            return [(f"# oracle failed ({_one_line(question, 80)}): {_one_line(error)}", "error")]
        body = [(f"  {clean(line)}", "") for line in (answer.strip() or "(no answer)").split("\n")]
        return [("# oracle", "bold"), *body, ("  (the run was not disturbed)", "dim")]

    def summary_lines(self, *, failed_at: str | None, cost_usd: float, duration_s: float,
                      interrupted: bool = False, aside_usd: float = 0.0,
                      cap_usd: float | None = None) -> list[tuple[str, str]]:
        side = f" + ${aside_usd:.4f} side questions" if aside_usd > 0 else ""
        cap = f" (cap ${cap_usd:.2f})" if cap_usd is not None else ""
        tail = f"cost ${cost_usd:.4f}{side}{cap} · {_duration(duration_s)}"
        if interrupted:
            return [("", ""), (f"! stopped by you · {tail}", "warn")]
        if failed_at:
            return [("", ""), (f"x failed at step '{clean(failed_at)}' · {tail}", "error")]
        return [("", ""), (f"+ finished · {tail}", "ok")]
