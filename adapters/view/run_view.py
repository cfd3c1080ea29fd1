"""RunView: one run's Events -> platform-neutral OutMessages (pure: no I/O, no asyncio).

What reaches the thread: the status card (edited in place), main-thread prose, ask cards, inbox
receipts, handoff/retry/error/reset notices, step lines, the oracle's answers and a final summary.
Thinking, subagent chatter, tool results and bookkeeping kinds stay off the thread (tool calls show
as the card's "last tools" line). Unknown kinds are ignored.

Call volume is the view's job as much as the outbox's: minor status changes (a tool call, the
context level, the cost) are folded into one card edit per `status_every_s`, and main-thread prose
is gathered for `prose_linger_s` (or until a card, notice or step needs to follow it) and posted
as one message. Milestones (state or step changes, questions, the end) go out at once. The hub
calls `tick()` when `due_in()` says so, to flush what is waiting without a new event.

A run that streams (its events include "partial" ones) also gets live messages (live.py): each model
turn's words as they are written and its tool calls as tasks, and the agent's plan as a checklist.
Threads that stream show those instead of the same words' prose; the rest ignore them.
"""

from __future__ import annotations

import dataclasses
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import adapters.view.asks as asks
import adapters.view.fmt as fmt
import adapters.view.notices as notices
import adapters.view.shares as shares
import adapters.view.status as status
import adapters.view.summary as summary
from adapters.platform import OutMessage
from adapters.view.approval_card import whole_diff
from adapters.view.asks import AskCard
from adapters.view.live import PLAN_TOOL, LiveTurn
from adapters.view.plan_card import whole_plan
from adapters.view.prose import ProseBuffer
from adapters.view.receipts import Receipts
from adapters.view.status import StatusCard
from adapters.view.summary import RunOutcome
from flower_core import Event, is_partial
from flower_core.payloads import (
    AskPayload,
    BudgetPayload,
    HandoffPayload,
    MailPayload,
    PartialPayload,
    ResetPayload,
    ResultPayload,
    RetryPayload,
    SharePayload,
    StepPayload,
    SystemPayload,
    ThreadPayload,
    ToolCallPayload,
    ToolResultPayload,
)

ASK_TOOL = "mcp__human__ask"
PARKED_AS = {"approving": "parked_approving", "reviewing": "parked_reviewing"}  # what waits, parked
# What ends the model's turn: its live message closes (a new request starting does too). An ask or a mail
# comes from a person, any time; tool calls and their results belong to the turn.
_ENDS_TURN = frozenset({"thinking", "prompt", "result", "error", "reset", "step", "retry", "handoff"})


@dataclass(frozen=True)
class ViewConfig:
    window: int = 1_000_000  # the context window shown until a handoff event reports the real one
    tools_shown: int = 3
    status_every_s: float = 30.0
    prose_linger_s: float = 10.0
    prose_max: int = 3000
    who: fmt.Who = field(default=fmt.plain_who)


class RunView:
    """Events in, OutMessages out. Every public method returns the messages to put, in order, and
    never raises (a bug here must not reach the run: it is counted in `errors`)."""

    def __init__(self, run_id: str, task: str, *, clock: Callable[[], float] = time.monotonic,
                 config: ViewConfig | None = None, epoch: str = "0", started_at: float | None = None,
                 owner: str = "") -> None:
        self.run_id, self.epoch = run_id, epoch
        self.owner = owner  # "platform:user": whom the agent's words answer (live messages carry it)
        self.cfg = config or ViewConfig()
        self._clock = clock
        now = clock()
        start = started_at if started_at is not None else now
        self.status_card = StatusCard(run_id, task, start, window=self.cfg.window,
                                      tools=deque(maxlen=self.cfg.tools_shown))
        self.gen = 1  # the workflow's wake count, from step events; part of every card id
        self.errors = 0
        self.last_error = ""
        self._status_at = float("-inf")
        self._dirty = True
        self._prose = ProseBuffer(self.cfg.prose_linger_s, self.cfg.prose_max)
        self._seq = 0
        self._cards: dict[str, AskCard] = {}  # open cards only: settled ones are dropped
        self._bound: dict[str, str] = {}  # ask id -> card id, for the current channel
        self._answered_by: dict[str, str] = {}  # card id -> who is answering it right now
        self._answered_where: dict[str, str] = {}  # card id -> the place they answer from, when it matters
        self._receipts = Receipts(epoch, self.cfg.who)
        self._trouble: dict[str, Any] | None = None
        self._handoff_key: str | None = None
        self.streaming = False  # the run streams (a partial event came): live messages from then on (live.py)
        self._live = LiveTurn(epoch, owner)

    # ---- events -------------------------------------------------------------------------------
    def on_event(self, ev: Event) -> list[OutMessage]:
        try:
            return self._on_event(ev)
        except Exception as exc:  # never into the run
            self.errors += 1
            self.last_error = repr(exc)
            return []

    def _on_event(self, ev: Event) -> list[OutMessage]:
        out: list[OutMessage] = []
        now = self._clock()
        kind = ev.kind
        said = ThreadPayload.of(ev)
        sub = said.subagent
        milestone = self._context(said.context, sub)
        if is_partial(ev):  # words being written: a live message, shown by threads that stream
            if not sub:
                self.streaming = True
                if PartialPayload.of(ev).requesting:
                    self._end_turn(out)  # the model is asked again: the turn before is over
                elif ev.text:
                    out.append(self._live.words(ev.text))
                    if self._progress():  # the first words after a start or an interrupt: running again
                        self._due(now, out, force_status=True)
            return out
        if not sub and kind in _ENDS_TURN:
            self._end_turn(out)
        if kind == "text":
            if not sub and ev.text.strip():
                milestone |= self._progress()
                said_live = self._live.said(ev.text) if self.streaming else None
                if said_live is not None:
                    out.append(said_live[0])
                self._add_prose(ev.text, now, out, said_live[1] if said_live else "")
        elif kind == "tool_result":
            if not sub and self.streaming:
                result = ToolResultPayload.of(ev)
                out.extend(m for m in [self._live.result(result.tool_use_id, result.is_error, ev.text)] if m)
        elif kind == "tool_call":
            milestone |= self._progress(sub)
            if not sub and self.streaming and ev.tool != ASK_TOOL:
                call = ToolCallPayload.of(ev)
                live = self._live.plan(call.input) if ev.tool == PLAN_TOOL else None
                out.append(live or self._live.call(call.id, ev.tool, ev.text))
            if ev.tool != ASK_TOOL:
                line = fmt.tool_call(ev.tool, ev.text, 60)
                self.status_card.tools.append(("↳ " if sub else "") + line)
                self._dirty = True
        elif kind == "result":
            if not sub:
                self.status_card.cost_usd += ResultPayload.of(ev).cost_usd or 0.0
                self._dirty = True
        elif kind == "step":
            self._flush_prose(out)
            milestone |= self._step(ev, StepPayload.of(ev), out)
        elif kind == "ask":
            self._flush_prose(out)
            ask = AskPayload.of(ev)
            if ask.kind == "mail":
                out.append(self._receipts.event(ev.text, MailPayload.of(ev)))
            elif ask.kind == "share":  # a file the agent posted (shares.py)
                out.extend(m for m in [shares.shared(self.run_id, SharePayload.of(ev))] if m is not None)
            else:
                if ask.state in ("", "asked"):
                    self._end_turn(out)  # the turn waits on a person now: its message closes, the card follows
                milestone |= self._ask_event(ev, ask, out)
        elif kind == "handoff":
            self._flush_prose(out)
            self._handoff(ev, HandoffPayload.of(ev), out)
            milestone = True
        elif kind == "retry" and (refused := RetryPayload.of(ev)).model_refused:
            self._flush_prose(out)
            self.status_card.model = refused.model
            out.append(notices.line(self._key("model"), f"⚠️ The endpoint refused model {refused.model_refused}; "
                                    f"the run goes on with {refused.model or 'its default model'}."))
            milestone = True
        elif kind in ("retry", "error"):
            self._flush_prose(out)
            self._trouble_event(kind, ev, out)
        elif kind == "reset":
            self._flush_prose(out)
            out.append(notices.reset(self._key("reset"), ResetPayload.of(ev), ev.text))
        elif kind == "system" and (subtype := SystemPayload.of(ev).subtype) in ("budget", "parked", "unparked"):
            if subtype == "budget":
                milestone |= self._budget(BudgetPayload.of(ev), out)
            else:
                self._end_turn(out)  # no CLI while parked: nothing of the turn stays streaming
                milestone |= self._parking(subtype == "parked")
        # thinking, tool_result, prompt, system, task, unknown and kinds added later: not for the thread
        self._due(now, out, force_status=milestone)
        return out

    def tick(self) -> list[OutMessage]:
        """Flush gathered prose and a pending status edit once their time has come."""
        out: list[OutMessage] = []
        try:
            self._due(self._clock(), out, force_status=False)
        except Exception as exc:
            self.errors += 1
            self.last_error = repr(exc)
        return out

    def due_in(self) -> float | None:
        """Seconds until `tick()` has something to send; None when nothing waits."""
        at = [t for t in (self._prose.due_at(), self._status_due_at()) if t is not None]
        return max(0.0, min(at) - self._clock()) if at else None

    def _status_due_at(self) -> float | None:
        if self._dirty and self.status_card.state not in status.FINAL_STATES:
            return self._status_at + self.cfg.status_every_s
        return None

    # ---- what the hub tells the view ----------------------------------------------------------
    def bind(self, ask_id: str, card: AskCard) -> None:
        """Show the channel's ask `ask_id` on an existing card (a question re-asked after a wake)."""
        self._bound[ask_id] = card.card_id
        self._cards[card.card_id] = card

    def open_card(self, card_id: str) -> AskCard | None:
        """The open card with this id (None once settled or unknown)."""
        return self._cards.get(card_id)

    def card_for_ask(self, ask_id: str) -> str:
        return self._bound.get(ask_id) or f"{self.gen}-{ask_id}"

    def open_cards(self) -> list[AskCard]:
        return list(self._cards.values())

    def show_card(self, card: AskCard) -> list[OutMessage]:
        """Render a card this view does not track (one from before a wake, being closed or noted)."""
        return [asks.render(self.run_id, card, self.cfg.who)]

    def answering(self, card_id: str, user: str, where: str = "") -> None:
        """`user` is about to answer or decline this card: the outcome card will name them (and
        `where` they did it, when the run shows in several places)."""
        self._answered_by[card_id] = user
        if where:
            self._answered_where[card_id] = where

    def expect_mail(self, user: str, origin: str = "", only_in: str = "") -> None:
        """The next mail event comes from `user` (the channel emits it inside send()); `origin` is
        the platform id of their own message, when they wrote one; `only_in` the thread its receipts
        belong to."""
        self._receipts.expect(user, origin, only_in)

    def mail_sent(self, mail_id: str, user: str) -> list[OutMessage]:
        """After send() returned: name the sender if the queued receipt went out without them."""
        return self._receipts.sent(mail_id, user)

    def interrupted(self, user: str, text: str) -> list[OutMessage]:
        out: list[OutMessage] = []
        self._flush_prose(out)
        out.append(notices.interrupt(self._key("int"), user, text, self.cfg.who))
        if self.status_card.state not in status.FINAL_STATES:
            self.status_card.state = "interrupted"
        self._due(self._clock(), out, force_status=True)
        return out

    def oracle(self, n: int, question: str, answer: str | None, user: str) -> list[OutMessage]:
        """The oracle's card: pending (answer None), then the answer in the same message."""
        return [notices.oracle(f"oracle:{self.epoch}:{n}", question, answer, user, self.cfg.who)]

    def steered(self, model: str | None, effort: str | None) -> list[OutMessage]:
        """The run's model and/or effort changed (None: that part did not): the status card says so now."""
        if model is not None:
            self.status_card.model = model
        if effort is not None:
            self.status_card.effort = effort
        return [self.status_now()]

    def notice(self, text: str, *, key: str = "") -> list[OutMessage]:
        """A line in the thread; with `key`, one line that a later notice of the same key edits in place."""
        out: list[OutMessage] = []
        self._flush_prose(out)
        out.append(notices.line(key, text, replace=True) if key else notices.line(self._key("note"), text))
        return out

    def finish(self, outcome: RunOutcome) -> list[OutMessage]:
        """The run ended: flush prose, close open cards, final status, summary."""
        out: list[OutMessage] = []
        try:
            self._end_turn(out)
            out.extend(m for m in [self._live.end_plan()] if m)
            self._flush_prose(out)
            if outcome.state != "died":  # a run that died with the bot keeps its questions open for a wake
                for card in list(self._cards.values()):
                    card.state = "cancelled"
                    out.append(asks.render(self.run_id, card, self.cfg.who))
                self._cards.clear()
            self.status_card.state = outcome.state
            self.status_card.ended_at = self._clock()
            if outcome.cost_usd:
                self.status_card.cost_usd = outcome.cost_usd
            self._due(self._clock(), out, force_status=True)
            final = summary.render(f"summary:{self.epoch}", outcome, self.cfg.who,
                                   out_of_budget=self.status_card.out_of_budget)
            c = self.status_card
            extra = ([("Side questions", fmt.money(c.aside_usd))] if c.aside_usd > 0 else []) + (
                [("Budget", c.budget_text())] if c.cap_usd is not None else [])
            out.append(dataclasses.replace(final, fields=[*final.fields, *extra]) if extra else final)
        except Exception as exc:
            self.errors += 1
            self.last_error = repr(exc)
        return out

    def status_now(self) -> OutMessage:
        self._status_at, self._dirty = self._clock(), False
        return status.render(self.status_card, self._clock())

    # ---- internals ----------------------------------------------------------------------------
    def _key(self, prefix: str) -> str:
        self._seq += 1
        return f"{prefix}:{self.epoch}:{self._seq}"

    def _context(self, ctx: int, sub: bool) -> bool:
        if not sub and ctx > 0 and ctx != self.status_card.context:
            self.status_card.context = ctx
            self._dirty = True
        return False

    def _progress(self, sub: bool = False) -> bool:
        """The model is moving: an interruption has been taken up, a retry streak is over."""
        if not sub:
            self._trouble = None
        if self.status_card.state in ("starting", "interrupted"):
            self.status_card.state = self._waiting()
            return True
        return False

    def _add_prose(self, text: str, now: float, out: list[OutMessage], live: str = "") -> None:
        earlier = self._prose.add(text, now, lambda: self._key("prose"), live)
        if earlier is not None:
            out.append(earlier)

    def _end_turn(self, out: list[OutMessage]) -> None:
        closed = self._live.close()
        if closed is not None:
            out.append(closed)

    def _flush_prose(self, out: list[OutMessage]) -> None:
        if self._prose:
            msg = self._prose.take(self._key("prose"))
            if msg is not None:
                out.append(msg)

    def _due(self, now: float, out: list[OutMessage], *, force_status: bool) -> None:
        # The same comparisons as due_in(), so a tick at the due time always sends something.
        prose_at, status_at = self._prose.due_at(), self._status_due_at()
        if prose_at is not None and now >= prose_at:
            self._flush_prose(out)
        if force_status or (status_at is not None and now >= status_at):
            out.append(self.status_now())

    def _step(self, ev: Event, s: StepPayload, out: list[OutMessage]) -> bool:
        c = self.status_card
        c.step_name, c.step_index, c.step_total = ev.text, s.index or 0, s.total or 0
        if s.round > 1:
            c.round = s.round
        woken = "woken" if s.woke else ""
        c.step_note = "reused" if s.reused else f"round {c.round}" if c.round > 1 else woken
        if s.wake > 0:
            self.gen = s.wake
        if c.state not in status.FINAL_STATES:
            c.state = self._waiting()
        out.append(notices.step(self._key("step"), ev.text, s))
        return True

    def _ask_event(self, ev: Event, ask: AskPayload, out: list[OutMessage]) -> bool:
        ask_id, state = ask.id, ask.state or "asked"
        card_id = self.card_for_ask(ask_id)
        card = self._cards.get(card_id)
        if card is None:
            card = AskCard(card_id, ask_id, ev.text, list(ask.options))
        if ask.kind:  # a question of the runtime's own (the cost cap): drawn from its figures
            card.kind = ask.kind
            card.facts = dict(ask.facts)
        card.ask_id, card.state = ask_id, state
        if state == "asked" and ask.asked_at is not None:
            card.asked_at = ask.asked_at
        card.remaining = ask.remaining
        if state == "asked":
            self._cards[card_id] = card
        else:
            card.answer = ask.answer
            card.by = self._answered_by.pop(card_id, card.by)
            card.where = self._answered_where.pop(card_id, card.where)
            self._cards.pop(card_id, None)
            self._bound.pop(ask_id, None)
        out.append(asks.render(self.run_id, card, self.cfg.who))
        for beside in (whole_diff, whole_plan) if state == "asked" and not ask.restored else ():
            file = beside(self.run_id, card)
            if file is not None:  # an edit (or a plan) longer than the card shows: the whole of it as a file beside
                out.append(file)
        if self.status_card.state in status.FINAL_STATES:
            return False
        before = self.status_card.state
        self.status_card.state = self._waiting()
        return before != self.status_card.state or state == "asked"

    def _waiting(self) -> str:
        """"approving" when every open card is a tool call waiting for approval, "reviewing" when they are plan
        cards, else "waiting"/"running"."""
        if not self._cards:
            return "running"
        kinds = {c.kind for c in self._cards.values()}
        return "approving" if kinds == {"approval"} else "reviewing" if kinds == {"plan"} else "waiting"

    def _handoff(self, ev: Event, h: HandoffPayload, out: list[OutMessage]) -> None:
        if h.window > 0:
            self.status_card.window = h.window
        phase = h.phase
        if phase == "near":
            out.append(notices.handoff(self._key("near"), h, ev.text, self.status_card.window))
            return
        # "writing" opens a notice that "done" then edits; a "done" without "writing" stands alone.
        key = self._handoff_key or self._key("handoff")
        self._handoff_key = key if phase == "writing" else None
        out.append(notices.handoff(key, h, ev.text, self.status_card.window))

    def _parking(self, parked: bool) -> bool:
        """A parked run has no CLI while its question waits (flower_core/runtime/parking.py)."""
        c = self.status_card
        before = c.state
        if c.state not in status.FINAL_STATES:
            if parked:
                c.state = PARKED_AS.get(self._waiting(), "parked")
            elif c.state in status.PARKED_STATES:
                c.state = self._waiting()
        return c.state != before

    def _budget(self, b: BudgetPayload, out: list[OutMessage]) -> bool:
        """The cost cap's books: spent / cap on the card; a notice when the cap is raised or the run stopped."""
        c = self.status_card
        before = c.tone()
        if b.spent is not None:
            c.cost_usd = b.spent
        if b.aside is not None:
            c.aside_usd = b.aside
        c.cap_usd = b.cap
        self._dirty = True
        phase = b.phase
        if phase == "stopped":
            c.out_of_budget = True
        elif phase == "raised":
            c.out_of_budget = False
        if phase in ("raised", "stopped", "refused"):
            self._flush_prose(out)
            out.append(notices.budget(self._key("budget"), b))
        return c.tone() != before or phase in ("set", "raised", "stopped", "refused")

    def _trouble_event(self, kind: str, ev: Event, out: list[OutMessage]) -> None:
        t = self._trouble
        if t is None:
            t = self._trouble = {"key": self._key("trouble"), "retries": 0, "error": "", "retry": ""}
        if kind == "retry":
            t["retries"] += 1
            t["retry"] = ev.text
        else:
            t["error"] = ev.text
        out.append(notices.trouble(t["key"], retries=t["retries"], last_error=t["error"], last_retry=t["retry"]))
