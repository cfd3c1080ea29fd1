"""The seam between the hub's chat side and the run side of its runs.

The chat side (LiveRun: view, cards, outboxes, the state store) never touches a Workflow, a Runtime
or a HumanChannel; it holds a `RunSide` and is a `RunSink`:

    chat side ──RunSide──▶ run side      submit(intent) / cancel
    chat side ◀──RunSink── run side      event / step_done / ended / handed_over

Every input is an `Intent` (intents.py) that `submit` logs durably before it returns: in this
process in the state store, over Redis in the run's intent stream.

A `Transport` starts runs (or attaches to runs already going elsewhere) and returns their RunSide.
In-process the calls are direct (local.py); over Redis they are stream entries (redis_*.py). Either
way the chat side awaits the same coroutines and receives the same calls, so it cannot tell which.
"""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Protocol

from adapters.transport.intents import Intent, IntentReply
from adapters.transport.plan import RunPlan
from flower_core import Event


@dataclass(frozen=True)
class RunEnd:
    """How a run ended, as the run side saw it. ``state``: done / failed / stopped / died."""

    state: str
    text: str = ""
    failed_at: str = ""
    error: str = ""
    cost_usd: float = 0.0
    steps: int = 0


class Undelivered(Exception):
    """The run side could not be reached in time (no worker holds the run right now). What was asked
    is kept where the transport can keep it; the caller decides what to tell the person."""


class RunSink(Protocol):
    """The chat side of one run: what the run side calls (always on the chat side's loop)."""

    def on_event(self, ev: Event) -> None: ...

    def step_done(self, name: str) -> None: ...

    def ended(self, end: RunEnd) -> Awaitable[None]: ...

    def handed_over(self, holder: str, previous: str) -> None:
        """Another worker took the run over (the one before it went silent): what ran before is gone."""
        ...


class RunSide(Protocol):
    """The run side of one run as the chat side sees it."""

    @property
    def holder(self) -> str:
        """Where it runs: the worker's name ("" = in this process)."""
        ...

    async def submit(self, intent: Intent) -> IntentReply:
        """Log the intent durably, then have the run apply it; the run's reply. Raises Undelivered when
        no holder answers in time (the intent stays logged: the next holder applies it)."""
        ...

    def cancel(self, reason: str) -> bool:
        """Stop the run side without a word: reason "shutdown" (this process is going away), or
        "stopped" for a run that is not going anywhere (its stop was submitted). False: nothing to cancel."""
        ...


class Transport(Protocol):
    name: str
    #: True when runs live in other processes: they outlive this one, and a restart re-attaches to them.
    remote: bool

    def launch(self, run_id: str, plan: RunPlan, sink: RunSink, *, attach: bool = False) -> RunSide:
        """Start (or wake) a run, or with ``attach`` follow one already going elsewhere. Raises when the
        run cannot be started here (the factory refused it)."""
        ...

    async def keep(self, run_id: str, intent: Intent) -> None:
        """Log an intent for a run nobody holds now (it is asleep); its next holder applies it."""
        ...

    async def start(self) -> None: ...

    async def close(self) -> None: ...

    def holders(self) -> dict[str, str]:
        """run id -> the worker holding it, for the runs this transport follows."""
        ...

    async def waits(self, run_id: str) -> bool:
        """True when a run just launched waits for room (every worker is full, or none runs)."""
        ...
