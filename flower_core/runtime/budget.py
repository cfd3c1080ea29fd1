"""Budget: a run's cost cap, put to its owner as a question instead of enforced blindly.

The books: every attempt's cost is booked the moment its result arrives (steps, retries, judge runs,
the handoff writing rounds, and the subagents inside any of them, which the CLI counts in its
total), as ``spent``; the oracle's side questions are booked apart, as ``aside``. The cap applies
to their sum.

Where a run pauses when that sum reaches the cap (always at a message boundary, nothing torn):

1. inside an attempt: the CLI is given what is left of the cap as its ``max_budget_usd``, so it
   ends the turn right after the model message that crosses it. Only the CLI knows the running
   cost mid-turn (the stream's per-message usage is the message's start, without its output
   tokens), so this is the one exact place. The session is stored and resumes like an interrupt;
2. spend that attempt cannot see (a side question landing while it runs) stops it cooperatively,
   through the same StopSignal as ``Runtime.interrupt``;
3. before any attempt starts (the next step, a retry, a judge) while the cap is reached.

Then ``gate`` asks through the HumanChannel (an ask with ``kind="budget"``; not counted against
``max_asks``): ``+$N`` raises the cap and the same session goes on, ``Stop`` ends the step and
every later one, words with an amount raise by that amount and reach the agent. No answer within
the channel's question window, a declined question, or no channel at all: the run stops.

| cap    | meaning                                                              |
|--------|----------------------------------------------------------------------|
| None   | no cap (the default)                                                 |
| 0      | refuse to start: every step fails at once, no CLI is started         |
| > 0    | pause and ask when spent + aside reaches it                          |
"""

from __future__ import annotations

import asyncio
import math
import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from flower_core.events import Event

KIND = "budget"
STOP = "Stop"
DEFAULT_STEPS = (5.0, 20.0)
BRAKE_SUBTYPE = "error_max_budget_usd"  # the CLI's result when its max_budget_usd is reached
_MIN_LIMIT = 0.0001  # the CLI ignores a max_budget_usd of 0

REFUSED = ("a cost cap of $0 lets nothing run: refusing to start. Give a positive cap, or none at all "
           "(None) for no cap.")
STOPPED = "stopped at the cost cap: {spent} spent of a {cap} cap — {why}"
WHY = {
    "stop": "the owner chose Stop",
    "timeout": "nobody answered within the question window",
    "declined": "the question was declined",
    "empty": "the answer was empty",
    "no channel": "there is nobody to ask (no human channel)",
    "invalid": "the question could not be asked",
    "cancelled": "the question was withdrawn",
}
QUESTION = ("Budget reached: this run has spent {total} of its {cap} cost cap{aside}. Raise the cap to go on "
            "({raises}), or Stop. Words work too: an amount in them (\"continue but wrap up within $2\") "
            "raises the cap by that much, and the agent hears them.")
RESUMED = "The run paused at its cost cap; the human raised the cap to {cap} ({total} spent so far)."
SAID = "Their words: {words}"

_STOP_WORDS = frozenset({"stop", "no", "cancel", "abort", "halt", "end", "quit", "enough"})
_BARE = re.compile(r"^\+?\s*[$＄]?\s*(\d+(?:[.,]\d+)?)\s*(?:\$|usd|dollars?)?$", re.I)
_AMOUNT = re.compile(r"[$＄]\s*(\d+(?:[.,]\d+)?)|(\d+(?:[.,]\d+)?)\s*(?:\$|usd\b|dollars?\b)", re.I)


class BudgetError(ValueError):
    """A cap that cannot be used (negative, not a number), or 0 where a run is about to start."""


def usd(value: float) -> str:
    """$0.0123 under a dollar, $12.34 above: small runs still show what they cost."""
    return f"${value:.4f}" if abs(value) < 1 else f"${value:.2f}"


def check_cap(value: Any) -> float | None:
    """A usable cap: None or a finite number >= 0 (0 is legal here; starting with it is refused)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise BudgetError(f"a cost cap must be None or a number of dollars >= 0, not {value!r}")
    return float(value)


def check_steps(steps: Iterable[Any]) -> tuple[float, ...]:
    out = tuple(float(s) for s in steps)
    if not out or any(not math.isfinite(s) or s <= 0 for s in out):
        raise BudgetError(f"budget steps must be positive amounts, not {list(steps)!r}")
    return out


def option_label(step: float) -> str:
    return f"+${step:g}"


@dataclass(frozen=True)
class BudgetDecision:
    """What the owner's answer means: stop, or raise the cap by ``raise_by`` (and tell the agent ``words``)."""

    stop: bool
    raise_by: float = 0.0
    words: str = ""
    why: str = ""


def _amount(text: str) -> float:
    return float(text.replace(",", "."))


def decide(answer: str, steps: Iterable[float]) -> BudgetDecision:
    """Read an answer to the budget question. Pure.

    An option label (``+$5``) raises by its step; ``Stop`` (or an answer starting with stop/no/
    cancel…) stops; a bare amount (``7``, ``$7``, ``+7``) raises by it; words with an amount raise
    by it and are passed on; words without one raise by the smallest step and are passed on; an
    empty answer or an amount of 0 stops.
    """
    steps = tuple(steps)
    text = " ".join(str(answer).split())
    if not text:
        return BudgetDecision(True, why="empty")
    folded = text.casefold()
    for step in steps:
        if folded == option_label(step).casefold():
            return BudgetDecision(False, step)
    first = re.split(r"[\s,.!;:]+", folded, maxsplit=1)[0]
    if folded == STOP.casefold() or first in _STOP_WORDS:
        return BudgetDecision(True, why="stop", words=text)
    bare = _BARE.match(text)
    if bare:
        amount = _amount(bare.group(1))
        return BudgetDecision(False, amount) if amount > 0 else BudgetDecision(True, why="stop")
    found = _AMOUNT.search(text)
    if found:
        amount = _amount(found.group(1) or found.group(2))
        return BudgetDecision(False, amount, words=text) if amount > 0 else BudgetDecision(True, why="stop", words=text)
    return BudgetDecision(False, min(steps) if steps else DEFAULT_STEPS[0], words=text)


@dataclass(frozen=True)
class Limit:
    """The max_budget_usd one attempt gets; ``ours`` when it is the run's cap that binds, not the spec's."""

    usd: float
    ours: bool


@dataclass(frozen=True)
class Gate:
    """What the step does next: ``stop`` (with ``error``), or go on, telling the agent ``words`` if any."""

    stop: bool = False
    error: str = ""
    words: str | None = None


GO = Gate()


def halt(state: Any) -> None:
    """Loop thread: stop a running step's attempt at its next message boundary (never a writing round)."""
    signal = getattr(state, "signal", None)
    if signal is not None and not getattr(state, "writing", False):
        signal.request(KIND)


class Budget:
    """The cost cap of one run and its books. Safe to book from any thread; ``gate`` runs on the loop.

    ``channel`` is the HumanChannel the question goes through (a Workflow hands its own over when
    this has none); ``on_event`` receives ``Event("system", "budget", payload)`` with ``phase``
    set / spent / paused / raised / stopped / refused and the figures (only while a cap is set).
    """

    KIND = KIND

    def __init__(self, cap_usd: float | None = None, *, steps: Iterable[float] = DEFAULT_STEPS,
                 channel: Any = None, on_event: Callable[[Event], Any] | None = None) -> None:
        self.cap = check_cap(cap_usd)
        self.steps = check_steps(steps)
        self.channel = channel
        self.on_event = on_event
        self.spent = 0.0
        self.aside = 0.0
        self.stopped: str | None = None  # set once the run may spend no more: why, as the steps' error
        self.ui_errors: list[str] = []
        self._lock = threading.Lock()
        self._asking: asyncio.Lock | None = None
        self._watchers: list[Callable[[], None]] = []

    @classmethod
    def coerce(cls, value: Budget | float | None) -> Budget:
        """A Budget as is; a number (or None) becomes ``Budget(value)``."""
        return value if isinstance(value, Budget) else cls(value)

    # -- the figures ------------------------------------------------------------------------------
    @property
    def total(self) -> float:
        with self._lock:
            return self.spent + self.aside

    @property
    def reached(self) -> bool:
        return self.cap is not None and self.total >= self.cap - 1e-9  # the CLI's figure vs ours, in float

    def figures(self) -> dict[str, Any]:
        with self._lock:
            spent, aside, cap = self.spent, self.aside, self.cap
        total = spent + aside
        share = None if cap is None else (total / cap if cap > 0 else 1.0)
        return {"spent": round(spent, 6), "aside": round(aside, 6), "total": round(total, 6), "cap": cap,
                "share": None if share is None else round(share, 4), "steps": list(self.steps)}

    # -- booking ------------------------------------------------------------------------------------
    def book(self, cost_usd: float, *, aside: bool = False, step: str = "") -> None:
        """Add what an attempt (or a side question, ``aside``) cost; wake the watchers at the cap."""
        if not isinstance(cost_usd, int | float) or not math.isfinite(cost_usd) or cost_usd <= 0:
            return
        with self._lock:
            if aside:
                self.aside += cost_usd
            else:
                self.spent += cost_usd
        if self.cap is None:
            return
        self._emit("spent", step=step, aside_side=aside)
        if self.reached:
            for watcher in list(self._watchers):
                try:
                    watcher()
                except Exception as exc:  # a watcher must never break the booking
                    self.ui_errors.append(f"watcher: {exc!r}")

    def watch(self, callback: Callable[[], None]) -> None:
        """``callback()`` after any booking that leaves the cap reached (a Runtime stops its attempts)."""
        if callback not in self._watchers:
            self._watchers.append(callback)

    def unwatch(self, callback: Callable[[], None]) -> None:
        if callback in self._watchers:
            self._watchers.remove(callback)

    # -- around one attempt -------------------------------------------------------------------------
    def limit(self, spec_cap: float | None) -> Limit | None:
        """The max_budget_usd for the next attempt: what is left of the cap, or the spec's own if lower."""
        if self.cap is None or self.cap <= 0:
            return None
        left = max(self.cap - self.total, _MIN_LIMIT)
        if spec_cap is not None and spec_cap <= left:
            return Limit(spec_cap, ours=False)
        return Limit(left, ours=True)

    def settle(self, out: Any, limit: Limit | None, *, step: str = "") -> None:
        """Book an attempt's outcome; read the CLI's brake on our cap as a pause, not a failure."""
        self.book(getattr(out, "cost_usd", 0.0), step=step)
        if limit is None or not limit.ours or getattr(out, "subtype", "") != BRAKE_SUBTYPE:
            return
        if getattr(out, "stop_reason", None) == "end_turn":
            out.ok, out.error = True, None  # the turn had finished anyway: the next attempt asks first
        else:
            out.stopped = out.stopped or KIND  # tools were still due: resume the session after the question

    # -- the question ---------------------------------------------------------------------------------
    async def gate(self, step: str = "") -> Gate:
        """Before an attempt: go on, or (at the cap) ask the owner and act on the answer."""
        if self.cap is None:
            return GO
        if self.stopped is not None:
            return Gate(True, self.stopped)
        if self.cap <= 0:
            self.stopped = REFUSED
            self._emit("refused", step=step, note=REFUSED)
            return Gate(True, REFUSED)
        if not self.reached:
            return GO
        if self._asking is None:
            self._asking = asyncio.Lock()
        async with self._asking:  # one question at a time; whoever waited re-reads the books
            words: str | None = None
            while self.stopped is None and self.reached:
                decision = await self._ask(step)
                if decision.stop:
                    self._stop(decision.why, step)
                    break
                with self._lock:
                    self.cap = (self.cap or 0.0) + decision.raise_by
                    cap, total = self.cap, self.spent + self.aside
                said = RESUMED.format(cap=usd(cap), total=usd(total))
                if decision.words:
                    said += " " + SAID.format(words=decision.words)
                words = said
                self._emit("raised", step=step, raised_by=decision.raise_by, note=decision.words)
            if self.stopped is not None:
                return Gate(True, self.stopped)
            return Gate(words=words)

    def question(self) -> tuple[str, list[str]]:
        """The question's text and options, from the books as they are now."""
        f = self.figures()
        cap = f["cap"] or 0.0
        aside = f" (side questions: {usd(f['aside'])} of it)" if f["aside"] > 0 else ""
        raises = ", ".join(f"{option_label(s)} makes it {usd(cap + s)}" for s in self.steps)
        text = QUESTION.format(total=usd(f["total"]), cap=usd(cap), aside=aside, raises=raises)
        return text, [option_label(s) for s in self.steps] + [STOP]

    async def _ask(self, step: str) -> BudgetDecision:
        channel = self.channel
        self._emit("paused", step=step)
        if channel is None or not hasattr(channel, "ask_outcome"):
            return BudgetDecision(True, why="no channel")
        text, options = self.question()
        facts = {**self.figures(), "step": step}
        ask = await channel.ask_outcome(text, options, kind=KIND, facts=facts)
        if ask.state == "answered":
            return decide(ask.answer, self.steps)
        return BudgetDecision(True, why=ask.state if ask.state in WHY else "timeout")

    def _stop(self, why: str, step: str) -> None:
        f = self.figures()
        self.stopped = STOPPED.format(spent=usd(f["total"]), cap=usd(f["cap"] or 0.0), why=WHY.get(why, why))
        self._emit("stopped", step=step, reason=why, note=self.stopped)

    # -- events -----------------------------------------------------------------------------------------
    def _emit(self, phase: str, *, step: str = "", aside_side: bool = False, **extra: Any) -> None:
        sink = self.on_event
        if sink is None:
            return
        payload: dict[str, Any] = {"subtype": KIND, "phase": phase, **self.figures(), "step": step,
                                   **({"source": "aside"} if aside_side else {})}
        payload.update({k: v for k, v in extra.items() if v not in (None, "")})
        try:
            sink(Event("system", KIND, payload=payload))
        except Exception as exc:  # a UI bug must never reach the run
            self.ui_errors.append(f"on_event: {exc!r}")

    def bind(self, *, runtime: Any = None, channel: Any = None, on_event: Callable[[Event], Any] | None = None,
             ) -> None:
        """Wire this budget for a run (Workflow.run does it): the runtime adopts it; the channel and
        the event sink are taken only when none was set."""
        if self.channel is None and channel is not None:
            self.channel = channel
        if self.on_event is None and on_event is not None:
            self.on_event = on_event
        use = getattr(runtime, "use_budget", None)
        if callable(use):
            use(self)
        if self.cap is not None:
            self._emit("set")  # front ends show spent / cap from the start

