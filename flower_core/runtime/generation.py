"""Per-step state of a running step, and the handoff from one generation (session) to the next."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flower_core.events import Event
from flower_core.payloads import ThreadPayload
from flower_core.runtime.attempt import RECENT_CALLS, Outcome, StopSignal
from flower_core.runtime.document import HandoffDoc, degraded
from flower_core.runtime.handoff import HANDOFF_ARCHIVE, HANDOFF_PREFIX, WRITE_PROMPT, write_handoff
from flower_core.runtime.results import StepResult

if TYPE_CHECKING:
    from flower_core.spec import AgentSpec


def _k(tokens: int) -> str:
    return f"{tokens / 1000:.1f}K"


class StepState:
    """What the loop, the event handler and other threads share about one running step.

    ``pending`` (the human's interrupt words; "" = interrupt without words) is the only field
    written from other threads, under ``lock``; everything else lives on the event loop.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, result: StepResult, task: str,
                 on_event: Callable[[Event], None] | None, *, window: int, at: int, warn_at: int) -> None:
        self.loop = loop
        self.result = result
        self.task = task
        self.on_event = on_event
        self.window, self.at, self.warn_at = window, at, warn_at
        self.lock = threading.Lock()
        self.pending: str | None = None
        # The human's words that went into the prompt of the attempt about to start (loop thread only):
        # when that attempt turns out to be a restored parked question, they interrupt it instead.
        self.carried: str | None = None
        self.poked = asyncio.Event()
        self.signal: StopSignal | None = None
        self.writing = False
        self.session: str | None = None
        self.resume_at: str | None = None  # Runtime.run(resume_at=): for the first attempt only
        self.ctx = 0
        self.peak = 0  # the generation's highest main-thread level: what an overflow teaches the window guess
        self.warned = False
        self.last_text = ""
        self.tool_calls: deque[str] = deque(maxlen=RECENT_CALLS)
        self.manifest_index: int | None = None  # set when rescue() already wrote this step's row

    # -- interrupts (add_pending may run on any thread) ------------------------------------------
    def add_pending(self, text: str) -> None:
        with self.lock:
            self.pending = text if self.pending is None else "\n".join(t for t in (self.pending, text) if t)

    def take_pending(self) -> str | None:
        with self.lock:
            words, self.pending = self.pending, None
            return words

    def peek_pending(self) -> str | None:
        with self.lock:
            return self.pending

    def has_pending(self) -> bool:
        return self.peek_pending() is not None

    def poke(self) -> None:
        """Loop thread: an interrupt arrived. Stop the attempt in flight (never the writing round)."""
        self.poked.set()
        if self.signal is not None and not self.writing and self.has_pending():
            self.signal.request("interrupt")

    async def wait_poke(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.poked.wait(), max(0.0, seconds))

    # -- the generation's books -----------------------------------------------------------------------
    def set_session(self, session_id: str) -> bool:
        """Record the current session; True when it is new."""
        if session_id == self.session:
            return False
        self.session = session_id
        self.result.session_id = session_id
        return True

    def observe(self, ev: Event) -> None:
        said = ThreadPayload.of(ev)
        if said.subagent:
            return
        ctx = said.context
        if ctx > 0:
            self.ctx = ctx
            self.peak = max(self.peak, ctx)
            self.result.context = ctx
        if ev.kind == "text" and ev.text.strip():
            self.last_text = ev.text
        elif ev.kind == "tool_call":
            self.tool_calls.append(str(ev))

    def near_due(self) -> Event | None:
        """The once-per-generation "near" event, when the level has just reached ``warn_at``."""
        if self.warned or self.ctx < self.warn_at:
            return None
        self.warned = True
        text = f"context {_k(self.ctx)}/{_k(self.window)} · about {_k(max(0, self.at - self.ctx))} to handoff"
        return Event("handoff", text=text, payload={
            "phase": "near", "step": self.result.step, "context": self.ctx, "window": self.window, "at": self.at})

    def new_generation(self) -> None:
        self.session = None
        self.ctx = self.peak = 0
        self.warned = False
        self.last_text = ""
        self.tool_calls.clear()


@dataclass(frozen=True)
class HandoffKit:
    """What writing a handoff takes from its runtime: the writing round's attempt (no cap, no UI, no
    threshold), the step's event sink, where documents land, and who learns from an overflow (the level
    it happened at, for the next window guess)."""

    attempt: Callable[..., Awaitable[Outcome]]
    emit: Callable[[StepState, Event], None]
    workbench: Any
    learn: Callable[[AgentSpec, int], None] | None = None


async def write_generation_handoff(kit: HandoffKit, spec: AgentSpec, state: StepState, session_id: str, *,
                                   overflow: bool) -> HandoffDoc:
    """Have the full session write its handoff document (or assemble a degraded one), land it on disk.

    The writing round resumes the same session with no budget cap and no UI, and is exempt from the
    threshold (it runs above it by definition). After an overflow the session cannot take another
    round, so the degraded document is used directly, and the level it got to is passed to ``kit.learn``.
    """
    result, step = state.result, state.result.step
    used, window = state.ctx, state.window
    if overflow and state.peak > 0 and kit.learn is not None:
        kit.learn(spec, state.peak)
    kit.emit(state, Event("handoff", text=f"context {_k(used)}/{_k(window)}: writing the handoff", payload={
        "phase": "writing", "step": step, "context": used, "window": window, "overflow": overflow}))
    doc: HandoffDoc | None = None
    why = "the session no longer fits its context window" if overflow else ""
    if not overflow:
        state.writing = True
        try:
            out = await kit.attempt(spec, WRITE_PROMPT.format(used=used, window=window), session_id, False,
                                    state)
        except (ValueError, TypeError) as exc:  # options that cannot be built: degrade rather than stop
            out = Outcome(error=f"invalid agent options: {exc}")
        finally:
            state.writing = False
        result.cost_usd += out.cost_usd
        result.num_turns += out.num_turns
        if out.ok:
            parsed = HandoffDoc.parse(out.text, step=step)
            if parsed.complete():
                doc = parsed
            else:
                why = "the written document lacks: " + ", ".join(parsed.missing())
        else:
            why = f"the writing round failed: {(out.error or 'no result').splitlines()[0][:200]}"
    if doc is None:
        doc = degraded(step, state.task, last_text=state.last_text, tool_calls=list(state.tool_calls), why=why)
        result.errors.append(f"handoff degraded: {why}")
    doc.task = state.task
    path = _land(kit.workbench, step, doc, used, window, session_id, result)
    line = f"handed off at {_k(used)}/{_k(window)}" + (" (degraded)" if doc.degraded else "")
    kit.emit(state, Event("handoff", text=line, payload={
        "phase": "done", "step": step, "context": used, "window": window, "degraded": doc.degraded,
        "path": str(path) if path else None, "sections": doc.sections(), "retired": session_id}))
    return doc


def _land(workbench: Any, step: str, doc: HandoffDoc, used: int, window: int, session_id: str,
          result: StepResult) -> Path | None:
    notes = getattr(workbench, "notes", None) if workbench is not None else None
    if notes is None:
        return None  # no workbench: the document reaches the successor through its prompt only
    meta = f"context {used:,}/{window:,} · retired session {session_id}"
    try:
        return write_handoff(Path(notes), step, doc.to_markdown(meta=meta),
                             prefix=getattr(workbench, "handoff_prefix", HANDOFF_PREFIX),
                             archive_name=getattr(workbench, "handoff_archive", HANDOFF_ARCHIVE))
    except OSError as exc:
        result.errors.append(f"handoff document not written to disk: {exc}")
        return None
