"""Typed readers of event payloads: the one module that reads an ``Event.payload`` by key.

A payload is a plain JSON-safe dict; it crosses Redis and is kept in the stored event log, so it may
come from an older process. Everywhere else reads it through a frozen reader made by its one
constructor, ``Reader.of(event)``. Each field is the payload key of the same name, converted by its
annotation; a key that is missing or of the wrong type gives the field's default, never an exception.
A key renamed by a writer is caught by the tests that read what the writers write
(tests/core/test_payloads.py); the boundary test keeps every other module off the keys
(tests/test_payload_boundary.py).

    kind                  reader             fields                                         written by
    ───────────────────── ────────────────── ────────────────────────────────────────────── ──────────────────
    text thinking prompt  ThreadPayload      subagent, parent_tool_use_id, context          sdk_events
    partial (not one of   PartialPayload     thread's + index (the content block's),        sdk_events
      the seed's 15)                         requesting (a model request starts, no words)
      the seed's 15)
    tool_call             ToolCallPayload    thread's + id, input, server                   sdk_events
    tool_result           ToolResultPayload  thread's + tool_use_id, is_error, server       sdk_events
    error                 ErrorPayload       thread's + synthetic, status                   sdk_events
    result                ResultPayload      session_id, cost_usd, num_turns, is_error, …   sdk_events
    reset                 ResetPayload       trigger, pre_tokens, post_tokens, micro, …     sdk_events
    system                SystemPayload      subtype, session_id (the rest is the CLI's)    sdk_events, below
      "budget"            BudgetPayload      figures (spent aside total cap share step)     runtime/budget
                                             + phase, note, reason, raised_by, source
      "parked" "unparked" SystemPayload      subtype (step, ask_id, question… unread)       runtime/parking
      "cut_off"           CutOffPayload      step, session_id, calls (CutOffCall)           runtime/resume
      "answer_to_inbox"   InputNotePayload   card, mail, question, answer, user             transport/applier
      "oracle" "unheard"  InputNotePayload   question, answer, user, replayed / text, user  transport/applier
    task                  TaskPayload        kind, task_id, status, description, …          sdk_events
    ask (a question)      AskPayload         id, kind, state, options, answer, remaining,   human/ask
                                             asked_at, restored; its runtime's facts:
                                             figures ("budget"), call ("approval"), facts
    ask kind "mail"       MailPayload        id, state, amended                             human/mail
    ask kind "share"      SharePayload       id, path, file, name, size, note               human/share
    retry                 RetryPayload       step, attempt, max_attempts, error, offline    runtime/runtime
    step                  StepPayload        index, total, resumed, woke, reused, wake,     workflow
                                             round
    handoff               HandoffPayload     phase, step, context, window, at, degraded,    runtime/generation
                                             path
    unknown               —                  (no payload)

An ask event's ``kind`` says which of its three readers fits: ``AskPayload.of(ev).kind`` is "mail",
"share", or a question's ("" for the model's own, "budget" / "approval" for the runtime's).
Readers only read: writers still build their dicts (the wire shape is theirs).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Self

from flower_core.events import Event

__all__ = ["ASK_FACT_KEYS", "ApprovalCall", "AskPayload", "BudgetFigures", "BudgetPayload", "CutOffCall",
           "CutOffPayload", "ErrorPayload", "HandoffPayload", "InputNotePayload", "MailPayload", "PartialPayload",
           "ResetPayload",
           "ResultPayload", "RetryPayload", "SharePayload", "StepPayload", "SystemPayload", "TaskPayload",
           "ThreadPayload", "ToolCallPayload", "ToolResultPayload"]

Payload = Mapping[str, Any]

# What the runtime adds to a question of its own (Ask.facts): a budget's figures, an approval's call and diff,
# a plan's text and file (human/plan_review.py).
ASK_FACT_KEYS = ("spent", "aside", "total", "cap", "step", "tool", "input", "diff_file", "diff_lines", "diff_bytes",
                 "plan", "plan_file", "plan_chars", "plan_bytes")
MAIL, SHARE = "mail", "share"


# ---- tolerant conversions: a value, or None for "use the field's default" (never raise) ----------------
def _str(v: object) -> str | None:
    """A string as is (a str enum as its value), a number as its digits."""
    if isinstance(v, str):
        return str.__str__(v)
    return str(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def _num(v: object) -> float | None:
    """A finite number as a float (a bool is no number)."""
    if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v):
        return float(v)
    return None


def _int(v: object) -> int | None:
    n = _num(v)
    return int(n) if n is not None else None


def _strs(v: object) -> tuple[str, ...] | None:
    if not isinstance(v, list | tuple):
        return None
    return tuple(s for s in map(_str, v) if s is not None)


def _dict(v: object) -> dict[str, Any] | None:
    return dict(v) if isinstance(v, dict) else None


# A field's annotation -> how its key's value is read. Fields of other types are filled by their reader.
_AS: dict[str, Callable[[Any], Any]] = {
    "str": _str, "bool": bool, "int": _int, "int | None": _int, "float | None": _num,
    "tuple[str, ...]": _strs, "dict[str, Any]": _dict, "Any": lambda v: v,
}


_PLANS: dict[type, tuple[tuple[str, Callable[[Any], Any]], ...]] = {}


def _plan(cls: type) -> tuple[tuple[str, Callable[[Any], Any]], ...]:
    """(key, conversion) for each field of a reader whose annotation says how to read it (made once)."""
    plan = _PLANS.get(cls)
    if plan is None:
        plan = _PLANS[cls] = tuple((f.name, _AS[str(f.type)]) for f in dataclasses.fields(cls) if str(f.type) in _AS)
    return plan


class _Reader:
    """``of(event)``: the one constructor. ``_read`` fills each field from the key of its name."""

    @classmethod
    def of(cls, ev: Event) -> Self:
        """What ``ev``'s payload holds for this reader; defaults for what is missing or malformed. Never raises."""
        p = getattr(ev, "payload", None)
        try:
            return cls._read(p if isinstance(p, dict) else {})
        except Exception:
            return cls()

    @classmethod
    def _read(cls, p: Payload) -> Self:
        found = {name: v for name, read in _plan(cls) if (v := read(p.get(name))) is not None}
        return cls(**found)


# ---- the model's side (normalize) ------------------------------------------------------------------
@dataclass(frozen=True)
class ThreadPayload(_Reader):
    """Which thread an event came from (a subagent's, tagged with its parent call, or the main one), and
    the context level of the model turn it came with (0 when it carries none: prompts, results)."""

    subagent: bool = False
    parent_tool_use_id: str = ""
    context: int = 0


@dataclass(frozen=True)
class PartialPayload(ThreadPayload):
    """partial: one text delta of a model turn being written (the delta is ``Event.text``). ``index`` is the
    content block it belongs to; the complete ``text`` event of that block follows once it is written.
    ``requesting``: no words, a model request has just started (the CLI says so only when streaming)."""

    index: int = 0
    requesting: bool = False


@dataclass(frozen=True)
class ToolCallPayload(ThreadPayload):
    """tool_call: the call's id (tool_result's ``tool_use_id``) and its input (a dict, as the model sent it)."""

    id: str = ""
    input: Any = None
    server: bool = False


@dataclass(frozen=True)
class ToolResultPayload(ThreadPayload):
    tool_use_id: str = ""
    is_error: bool = False
    server: bool = False


@dataclass(frozen=True)
class ErrorPayload(ThreadPayload):
    """error: a synthetic "API Error: …" message; ``status`` the HTTP status it names, when it names one."""

    synthetic: bool = False
    status: int | None = None


@dataclass(frozen=True)
class ResultPayload(_Reader):
    """result: one CLI run's end. ``cost_usd`` / ``num_turns`` None when the payload has no number."""

    session_id: str = ""
    cost_usd: float | None = None
    num_turns: int | None = None
    is_error: bool = False
    stop_reason: str = ""
    terminal_reason: str = ""


@dataclass(frozen=True)
class ResetPayload(_Reader):
    """reset: a compaction (token counts before/after, None when unknown) or a conversation reset."""

    trigger: str = ""
    pre_tokens: int | None = None
    post_tokens: int | None = None
    micro: bool = False
    subtype: str = ""
    session_id: str = ""


@dataclass(frozen=True)
class SystemPayload(_Reader):
    """system: what it is about (``subtype``: the CLI's "init"…, or ours: "budget", "parked", "cut_off"…)."""

    subtype: str = ""
    session_id: str = ""


@dataclass(frozen=True)
class TaskPayload(_Reader):
    """task: a background task the CLI reports (``kind`` the message class, ``status`` its state)."""

    kind: str = ""
    task_id: str = ""
    status: str = ""
    description: str = ""
    tool_use_id: str = ""


# ---- the runtime's own ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class BudgetFigures(_Reader):
    """The cost cap's books in USD (None when absent): spent (the runs) + aside (side questions) = total,
    ``share`` = total / cap. A budget event carries them, and so does the budget's question."""

    spent: float | None = None
    aside: float | None = None
    total: float | None = None
    cap: float | None = None
    share: float | None = None
    step: str = ""


@dataclass(frozen=True)
class BudgetPayload(BudgetFigures):
    """system "budget": ``phase`` set / spent / paused / raised / stopped / refused; ``note`` what the agent
    hears (raised) or why it stopped; ``reason`` the question's outcome that stopped it."""

    phase: str = ""
    note: str = ""
    reason: str = ""
    raised_by: float | None = None
    source: str = ""


@dataclass(frozen=True)
class CutOffCall(_Reader):
    """One call a restart cut off mid-way; ``safe``: a read-only tool, harmless to run again."""

    id: str = ""
    tool: str = ""
    safe: bool = False
    summary: str = ""


@dataclass(frozen=True)
class CutOffPayload(_Reader):
    step: str = ""
    session_id: str = ""
    calls: tuple[CutOffCall, ...] = ()

    @classmethod
    def _read(cls, p: Payload) -> Self:
        raw = p.get("calls")
        calls = raw if isinstance(raw, list | tuple) else ()
        return dataclasses.replace(super()._read(p), calls=tuple(CutOffCall._read(c) for c in calls
                                                                 if isinstance(c, dict)))


@dataclass(frozen=True)
class InputNotePayload(_Reader):
    """system "answer_to_inbox" / "oracle" / "unheard": what became of a person's input the run side took
    up again after a restart (an answer sent to the inbox, an oracle question answered, an interrupt the
    run ended before hearing: its ``text``)."""

    card: str = ""
    mail: str = ""
    question: str = ""
    answer: str = ""
    user: str = ""
    text: str = ""
    replayed: bool = False


@dataclass(frozen=True)
class RetryPayload(_Reader):
    """retry: an attempt failed and another follows (``offline``: waiting for the endpoint first;
    ``model_refused``: the endpoint refused a model a person chose, and the run goes on with ``model``,
    "" for its default)."""

    step: str = ""
    attempt: int | None = None
    max_attempts: int | None = None
    error: str = ""
    offline: bool = False
    model_refused: str = ""
    model: str = ""


@dataclass(frozen=True)
class StepPayload(_Reader):
    """step: a workflow step begins. ``wake`` counts the workflow's wakes; ``round`` the rounds of a run
    that goes on in the same conversation (0 when not given)."""

    index: int | None = None
    total: int | None = None
    resumed: bool = False
    woke: bool = False
    reused: bool = False
    wake: int = 0
    round: int = 0

    @property
    def position(self) -> str:
        """"2/5"; "?" for what the event does not say."""
        return f"{'?' if self.index is None else self.index}/{'?' if self.total is None else self.total}"


@dataclass(frozen=True)
class HandoffPayload(_Reader):
    """handoff: ``phase`` near / writing / done; the context level and window (0 when not given); when
    done, whether the document is ``degraded`` and where it landed (``path``, "" when nowhere)."""

    phase: str = ""
    step: str = ""
    context: int = 0
    window: int = 0
    at: int | None = None
    degraded: bool = False
    path: str = ""


# ---- the human channel (ask events) -----------------------------------------------------------------
@dataclass(frozen=True)
class ApprovalCall(_Reader):
    """The tool call an approval question is about; ``input`` {} when the payload has no dict."""

    tool: str = ""
    input: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class AskPayload(_Reader):
    """ask: a question and its outcome (``state`` asked / answered / timeout / declined / over_budget /
    invalid / cancelled); ``remaining`` the model's question quota (-1: unlimited or not the model's).
    ``kind`` "" for the model's question, the runtime's kind ("budget", "approval") for its own, whose
    ``facts`` (ASK_FACT_KEYS, as written) carry its ``figures`` or its ``call``; "mail" / "share" for
    the other ask events (MailPayload, SharePayload)."""

    id: str = ""
    kind: str = ""
    state: str = ""
    options: tuple[str, ...] = ()
    answer: str = ""
    remaining: int = -1
    asked_at: float | None = None
    restored: bool = False
    figures: BudgetFigures = field(default_factory=BudgetFigures)
    call: ApprovalCall = field(default_factory=ApprovalCall)
    facts: Mapping[str, Any] = field(default_factory=dict)

    @property
    def is_question(self) -> bool:
        """A question (the model's or the runtime's), not inbox mail or a shared file."""
        return self.kind not in (MAIL, SHARE)

    @classmethod
    def _read(cls, p: Payload) -> Self:
        return dataclasses.replace(super()._read(p), figures=BudgetFigures._read(p), call=ApprovalCall._read(p),
                                   facts={k: p[k] for k in ASK_FACT_KEYS if k in p})


@dataclass(frozen=True)
class MailPayload(_Reader):
    """ask kind "mail": inbox mail, ``state`` queued → delivered; ``amended``: the text was also added
    to a file (the brief; the payload names it)."""

    id: str = ""
    state: str = ""
    amended: bool = False


@dataclass(frozen=True)
class SharePayload(_Reader):
    """ask kind "share": a file the agent shared; ``path`` relative to the workspace, ``file`` resolved."""

    id: str = ""
    path: str = ""
    file: str = ""
    name: str = ""
    size: int = 0
    note: str = ""
