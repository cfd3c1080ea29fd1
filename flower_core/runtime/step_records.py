"""StepRecords: what an attempt's outcome and events add to one step (its result, its session, its
context window), and where its events and manifest rows go. Mixed into Runtime. Best effort by design: a
failing sink or manifest never breaks a run."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from flower_core.events import Event
from flower_core.manifest import Manifest
from flower_core.runtime.attempt import Outcome
from flower_core.runtime.generation import StepState
from flower_core.runtime.handoff import HandoffPolicy
from flower_core.runtime.results import StepResult
from flower_core.spec import resolve_env

if TYPE_CHECKING:
    from flower_core.spec import AgentSpec


class StepRecords:
    """Mixed into Runtime, which sets these."""

    on_session: Callable[[str], None] | None
    ui_errors: list[str]
    parking: Any
    handoff: HandoffPolicy
    manifest: Manifest
    env: Mapping[str, str] | None

    def _absorb(self, out: Outcome, state: StepState) -> None:
        result = state.result
        result.cost_usd += out.cost_usd
        result.num_turns += out.num_turns
        for piece in out.texts:
            result.add_text(piece)
        if out.session_id:
            state.set_session(out.session_id)

    def _on_session(self, state: StepState, session_id: str) -> None:
        if state.set_session(session_id) and self.on_session is not None:
            try:
                self.on_session(session_id)
            except Exception as exc:
                self.ui_errors.append(f"on_session: {exc!r}")

    def _on_events(self, state: StepState, events: list[Event]) -> None:
        for ev in events:
            if self.parking.observe(state, ev):
                continue  # the CLI's own closing of a call being parked: rewritten, never shown
            state.observe(ev)
            self.emit(state, ev)
            if self.handoff.enabled and not state.writing:
                near = state.near_due()
                if near is not None:
                    self.emit(state, near)
                if state.ctx >= state.at and state.session and state.signal is not None:
                    state.signal.request("handoff")

    def _learn_window(self, spec: AgentSpec, context: int) -> None:
        """A request overflowed at ``context`` tokens: the policy records it for this route's next window guess."""
        try:
            self.handoff.remember(context, spec.model, resolve_env(self.env))
        except Exception as exc:  # a record is a hint for later; this step's handoff goes on regardless
            self.ui_errors.append(f"window calibration: {exc!r}")

    def emit(self, state: StepState, ev: Event) -> None:
        """Deliver an event to the step's sink; a failing sink never breaks the run."""
        if state.on_event is None:
            return
        try:
            state.on_event(ev)
        except Exception as exc:
            self.ui_errors.append(f"on_event: {exc!r}")

    def _record(self, result: StepResult, index: int | None = None, wait_s: float | None = None) -> int | None:
        """Write (or rewrite row ``index`` of) this run's manifest; returns the row index."""
        try:
            return self.manifest.record(result.to_dict(), index=index, wait_s=wait_s)
        except Exception as exc:  # the books are best effort; the run goes on
            self.ui_errors.append(f"manifest: {exc!r}")
            return index
