"""Runtime: runs one step to its end through retries, human interrupts and handoffs.

Each attempt is one CLI process (``attempt.Attempt``). The loop in ``_drive`` has four exits per
attempt, checked in this order: context full (hand off to a fresh session), human interrupt
(resume the same session with the human's words), success, failure (retry when transient).
Interrupts and handoffs never consume ``max_attempts``. Before every attempt the cost cap's gate
(``budget.Budget``) may ask the owner first; a pause at the cap resumes like an interrupt.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import fields, replace
from functools import partial
from pathlib import Path
from typing import Any

from claude_agent_sdk import ClaudeAgentOptions, project_key_for_directory

from flower_core.events import Event
from flower_core.human.plan_review import plan_of
from flower_core.manifest import Manifest
from flower_core.runtime.attempt import Attempt, Outcome, StopSignal
from flower_core.runtime.budget import Budget, halt
from flower_core.runtime.generation import HandoffKit, StepState, write_generation_handoff
from flower_core.runtime.handoff import (
    DEGRADED_IN_A_ROW,
    INTERRUPT_NOTE,
    HandoffPolicy,
    brake_message,
    degraded_brake_message,
    human_addendum,
    interrupt_prompt,
)
from flower_core.runtime.load_options import LoadOptions
from flower_core.runtime.parked import ParkRecords
from flower_core.runtime.parking import Parking, ParkPolicy
from flower_core.runtime.people import person_waits, waiting_questions
from flower_core.runtime.permission import take_decisions
from flower_core.runtime.resilience import FATAL, Resilience, classify, is_network_error
from flower_core.runtime.results import StepResult
from flower_core.runtime.steering import Choice, ModelRefused, Steering
from flower_core.runtime.step_records import StepRecords
from flower_core.runtime.transcript import SessionFacts, ask_calls, human_inputs
from flower_core.session_store import stored_entries
from flower_core.spec import AgentSpec, build_options, resolve_env
from flower_core.workbench import Workbench

EventSink = Callable[[Event], None]
_FORWARD = "forward_subagent_text"
_OPTION_FIELDS = frozenset(f.name for f in fields(ClaudeAgentOptions))


class Runtime(StepRecords):
    """Holds the workspace, the session store, the manifest and the policies; ``run`` runs a step.

    ``workbench`` is anything with a ``notes`` path (handoff documents land there) or None; as in
    the original flower, True builds ``Workbench(workspace, home=<run_dir>/workbench)`` and False is None.
    ``env`` overlays the host environment for the CLI (credentials otherwise come from
    ``os.environ``). ``window`` / ``max_generations`` override the handoff policy's.
    ``on_session`` is called the moment a step obtains a new session id (exceptions swallowed).
    ``budget`` is the run's cost cap (a ``Budget``, or dollars; None = no cap, 0 = refuse to start).
    ``park`` closes the CLI while a question waits longer than that many seconds (a ``ParkPolicy``,
    or seconds; None = never) and resumes the same session once it is settled (see parking.py).
    ``model`` / ``effort`` are the run's choice over every agent spec's own; ``steer`` changes them while
    the run goes on (see steering.py).
    ``partial_text`` turns on the SDK's partial messages: the model's words also arrive as they are written,
    as "partial" events (flower_core.events.PARTIAL) before each complete "text"; off, nothing changes.
    """

    INTERRUPTED = "interrupted-by-human"
    HANDOFF_DUE = "context-full-handoff"
    KILLED = "killed-by-signal"
    INTERRUPT_NOTE = INTERRUPT_NOTE

    def __init__(self, *, workspace: str | Path, run_dir: str | Path = "runs", workbench: Any = None,
                 resilience: Resilience | bool = True, handoff: HandoffPolicy | bool = True,
                 env: Mapping[str, str] | None = None, window: int | None = None,
                 max_generations: int | None = None, on_session: Callable[[str], None] | None = None,
                 budget: Budget | float | None = None, park: ParkPolicy | float | None = None,
                 session_store: Any = None, portable: bool = True, trim: Any = False, ephemeral: Any = True,
                 keep_denials: int = 1, spill_threshold: int | None = 4000, model: str | None = None,
                 effort: str | None = None, partial_text: bool = False) -> None:
        # The original flower's load-time options: checked and kept (see load_options.py for what each does).
        self.load = LoadOptions.checked(portable=portable, trim=trim, ephemeral=ephemeral, keep_denials=keep_denials,
                                        spill_threshold=spill_threshold)
        self.portable, self.trim, self.ephemeral = self.load.portable, trim, ephemeral
        self.keep_denials, self.spill_threshold = keep_denials, spill_threshold
        self.partial_text = bool(partial_text)
        self.workspace = Path(workspace).expanduser().resolve()
        self.workspace.mkdir(parents=True, exist_ok=True)
        self.run_dir = Path(run_dir).expanduser().resolve()
        self.run_dir.mkdir(parents=True, exist_ok=True)
        if workbench is True:
            workbench = Workbench(self.workspace, home=self.run_dir / "workbench").ensure()
            workbench.refresh()
        self.workbench = workbench if workbench is not False else None
        self.resilience = Resilience.coerce(resilience)
        self.handoff = HandoffPolicy.coerce(handoff, window=window, max_generations=max_generations)
        self.env: dict[str, str] | None = dict(env) if env is not None else None
        self.on_session = on_session
        # A caller's store (e.g. RedisSessionStore shared by workers) stays the caller's: close() leaves it open.
        self._owns_store = session_store is None
        self.store: Any = (self.load.store(self.run_dir / "sessions.db", self.workspace) if session_store is None
                           else session_store)
        self.run_id = time.strftime("%Y%m%d-%H%M%S") + "-" + uuid.uuid4().hex[:6]
        self.manifest = Manifest(self.manifest_path, self.run_id)
        self.results: list[StepResult] = []
        self.ui_errors: list[str] = []
        self._rescued = False
        # The CLI's stderr is kept here (last lines) instead of leaking escape codes into the user's terminal.
        self.cli_stderr: deque[str] = deque(maxlen=200)
        self._active: list[StepState] = []
        self.steering = Steering(model, effort)
        self._attempts: set[tuple[asyncio.AbstractEventLoop, Attempt]] = set()  # live ones, for a new model
        self._lock = threading.Lock()
        self._early: str | None = None  # interrupt words said while no step ran: for the next step's prompt
        self.budget = Budget.coerce(budget)
        self.budget.watch(self._budget_reached)
        self._handoff_kit = HandoffKit(partial(self._attempt, writing=True), self.emit, self.workbench,
                                       learn=self._learn_window)
        self.parking = Parking(ParkPolicy.coerce(park), store=self.store, project_key=lambda: self.project_key,
                               records=ParkRecords(self.run_dir / "parked"), attempt=self._attempt,
                               absorb=self._absorb, emit=self.emit)

    # -- small public surface -----------------------------------------------------------------------
    @property
    def manifest_path(self) -> Path:
        return self.run_dir / "manifest.json"

    @property
    def project_key(self) -> str:
        """The store key the SDK derives from the workspace (the agent's cwd)."""
        return str(project_key_for_directory(str(self.workspace)))

    def has_session(self, session_id: str) -> bool:
        """Is this session stored under this workspace (so ``resume`` can find it)?"""
        return bool(session_id) and self.store.has_session(session_id, project_key=self.project_key)

    def context_of(self, session_id: str) -> int:
        """The context level of a stored session's last turn (0 when unknown)."""
        return self.store.last_context(session_id, project_key=self.project_key)

    async def session_facts(self, session_ids: Iterable[str], *, ask_tool: str = "mcp__human__ask") -> SessionFacts:
        """What the stored sessions say reached the model (see transcript.py); unknown ids add nothing."""
        facts = SessionFacts()
        for sid in dict.fromkeys(s for s in session_ids if s):
            entries = await stored_entries(self.store, {"project_key": self.project_key, "session_id": sid})
            facts.inputs += human_inputs(entries)
            facts.asks += ask_calls(entries, ask_tool)
        return facts

    def total_cost(self) -> float:
        return round(sum(r.cost_usd for r in self.results), 4)

    @property
    def running(self) -> bool:
        return bool(self._active)

    def close(self) -> None:
        if self._owns_store:
            self.store.close()

    def interrupt(self, message: str = "") -> bool:
        """Interrupt the running step(s) from any thread; False when nothing is running.

        Cooperative: the attempt stops at the next message boundary and the same session resumes
        with ``message`` (empty = a neutral "continue"). Words said while no step is running are kept
        and delivered with the next step's prompt (then False is returned).
        """
        with self._lock:
            states = list(self._active)
            if not states and message.strip():
                self._early = message if self._early is None else f"{self._early}\n{message}"
        for state in states:
            state.add_pending(message)
            with contextlib.suppress(RuntimeError):  # the loop is gone: nothing left to interrupt
                state.loop.call_soon_threadsafe(state.poke)
        return bool(states)

    async def steer(self, *, model: str | None = None, effort: str | None = None) -> Choice:
        """Change the run's model and/or effort (None keeps that part; ValueError for an unknown effort).

        A live CLI gets the model from its next model request, after it has checked the name with the
        endpoint: a refused name raises ModelRefused and the run keeps the model it had. With no CLI live,
        the next attempt starts with it (a refusal then is taken back by ``_drive``). Effort applies from
        the next attempt: the SDK has no live switch for it."""
        before = self.steering.now
        now = self.steering.change(model=model, effort=effort)
        if now.model == before.model:
            return now
        with self._lock:
            live = list(self._attempts)
        for loop, attempt in live:
            try:
                done = asyncio.run_coroutine_threadsafe(attempt.switch_model(now.model), loop)
            except RuntimeError:  # the loop is gone: nothing live there
                continue
            try:
                await asyncio.wrap_future(done)
            except ModelRefused:
                self.steering.refused_now()
                raise
        return now

    def take_unread(self) -> str | None:
        """Interrupt words said while no step ran that no step has taken since (the workflow ended first)."""
        with self._lock:
            words, self._early = self._early, None
        return words

    def use_budget(self, budget: Budget) -> None:
        """Adopt a run's budget (a Workflow brings its own): the cap and the books are shared."""
        if budget is not self.budget:
            self.budget.unwatch(self._budget_reached)
            self.budget = budget
            budget.watch(self._budget_reached)

    def _budget_reached(self) -> None:
        """Spend a running attempt cannot see reached the cap: stop it at its next message boundary."""
        with self._lock:
            states = list(self._active)
        for state in states:
            with contextlib.suppress(RuntimeError):  # the loop is gone: nothing left to stop
                state.loop.call_soon_threadsafe(halt, state)

    def rescue(self) -> None:
        """For signal handlers (sync, small writes): record in-flight steps as killed in the manifest."""
        self._rescued = True
        with self._lock:
            states = list(self._active)
        for state in states:
            snap = replace(state.result, ended_at=time.time(), ok=False, error=self.KILLED,
                           errors=list(state.result.errors), retired=list(state.result.retired))
            state.manifest_index = self._record(snap, state.manifest_index, wait_s=1.0)

    # -- the step loop ------------------------------------------------------------------------------
    async def run(self, spec: AgentSpec, prompt: str, *, step_name: str | None = None, resume: str | None = None,
                  fork: bool = False, resume_at: str | None = None, on_event: EventSink | None = None) -> StepResult:
        """Run one step to its end; never raises for a failed run (see ``StepResult.ok``/``error``).

        ``resume_at`` (a message uuid of the ``resume`` session) resumes from that message instead of the
        session's end; only the first attempt uses it, a retry goes on from where that attempt got to.
        """
        result = StepResult(step=step_name or spec.name, started_at=time.time())
        env = resolve_env(self.env)
        window = self.handoff.window_for(spec.model, env)
        state = StepState(asyncio.get_running_loop(), result, prompt, on_event, window=window,
                         at=self.handoff.at_for(window), warn_at=self.handoff.warn_at_for(window))
        state.resume_at = resume_at if resume else None
        with self._lock:
            self._active.append(state)
            early, self._early = self._early, None
        if early is not None:
            state.add_pending(early)
        try:
            await self._drive(spec, prompt, resume, fork, state)
        except asyncio.CancelledError:
            # A rescue() already booked this step as killed; the cancellation that follows must not undo it.
            result.ok, result.error = False, (self.KILLED if self._rescued else result.error or "cancelled")
            raise
        finally:
            with self._lock:
                self._active.remove(state)
            result.ended_at = time.time()
            self.results.append(result)
            self._record(result, state.manifest_index)
        return result

    async def _drive(self, spec: AgentSpec, prompt: str, resume: str | None, fork: bool, state: StepState) -> None:
        result = state.result
        # What a generation starts from: the caller's prompt/session, or after a handoff the document.
        gen_prompt, gen_resume, gen_fork = prompt, resume, fork
        cur_prompt: str | None = prompt  # None = "resume after an interrupt": built from the human's words
        cur_resume, cur_fork = resume, fork
        degraded_row = 0  # handoffs in a row whose document had to be assembled (not written)
        while True:
            state.poked.clear()
            gate = await self.budget.gate(result.step)  # at the cost cap: asks the owner before going on
            if gate.stop:
                result.error = gate.error
                return
            words = state.take_pending()
            if gate.words:
                words = f"{gate.words}\n\n{words}" if words else gate.words
            state.carried = None
            if cur_prompt is None:
                cur_prompt = interrupt_prompt(words or "")
                state.carried = words if words and words.strip() else None
            elif words is not None:
                cur_prompt = human_addendum(cur_prompt, words)
                state.carried = words
            if cur_resume and not cur_fork:
                state.set_session(cur_resume)
            try:
                out = await self.parking.attempt(spec, cur_prompt, cur_resume, cur_fork, state)  # may park inside
            except (ValueError, TypeError) as exc:  # options that cannot be built: no attempt will help
                result.error = f"invalid agent options: {exc}"
                return
            self._absorb(out, state)
            sid = out.session_id or state.session
            cur_fork = False
            if out.ok or out.texts or out.tool_calls:
                self.steering.worked()
            elif (refused := self.steering.refused(out.error, out.status)) is not None:
                self._model_refused(state, *refused, error=out.error or "")
                if sid:
                    cur_prompt, cur_resume = None, sid
                else:
                    cur_prompt, cur_resume, cur_fork = gen_prompt, gen_resume, gen_fork
                continue
            if self.handoff.enabled and sid and not out.ok and (out.stopped == "handoff" or out.overflow):
                if len(result.retired) >= self.handoff.max_generations:
                    result.error = brake_message(len(result.retired), state.at, state.window)
                    return
                overflow = out.stopped != "handoff"
                doc = await write_generation_handoff(self._handoff_kit, spec, state, sid, overflow=overflow)
                result.retired.append(sid)
                degraded_row = degraded_row + 1 if doc.degraded else 0
                if degraded_row >= DEGRADED_IN_A_ROW:  # empty handoffs only burn money: stop, say why
                    result.error = degraded_brake_message(degraded_row, state.at, state.window)
                    return
                state.new_generation()
                gen_prompt, gen_resume, gen_fork = doc.prompt_block(), None, False
                cur_prompt, cur_resume = gen_prompt, None
                continue
            if out.stopped == Budget.KIND:  # paused at the cap: the gate above asks, then the same session goes on
                if sid:
                    cur_prompt, cur_resume = None, sid
                else:
                    cur_prompt, cur_resume, cur_fork = gen_prompt, gen_resume, gen_fork
                continue
            if out.stopped == "interrupt" or state.has_pending():
                if not sid:  # cut before anything was stored: the generation starts over with the words added
                    if state.carried:  # this attempt's prompt had words of theirs, never stored either
                        state.add_pending(state.carried)
                    cur_prompt, cur_resume, cur_fork = gen_prompt, gen_resume, gen_fork
                    continue
                if not out.ok or (state.peek_pending() or "").strip():
                    cur_prompt, cur_resume = None, sid
                    continue
                state.take_pending()  # an empty interrupt that landed after the turn ended: nothing to say
            if out.ok:
                result.ok, result.error = True, None
                return
            delay = self._retry(out, state)
            if delay is None:
                return
            await state.wait_poke(delay)  # an interrupt cuts the backoff short
            if not await self._wait_online(out, state):
                return
            if sid:
                await self._carry_again(state, sid)
                cur_prompt, cur_resume = self.resilience.resume_prompt, sid
                result.resumed = True
            else:
                cur_prompt, cur_resume, cur_fork = gen_prompt, gen_resume, gen_fork

    async def _carry_again(self, state: StepState, sid: str) -> None:
        """The failed attempt's prompt carried a person's words. The CLI stores a prompt before it calls the
        model, so the resumed session usually has them; when it failed before that (it never started, say),
        they ride on the retry's prompt instead of being lost."""
        words, state.carried = state.carried, None
        if not words or not words.strip():
            return
        try:
            stored = (await self.session_facts([sid])).delivered(words.strip(), prompts_only=True)
        except Exception:  # the store is unreadable: saying it twice beats not saying it
            stored = 0
        if not stored:
            state.add_pending(words)

    def _model_refused(self, state: StepState, name: str, model: str | None, *, error: str) -> None:
        """The endpoint refused the model a person chose: say so; the run goes on with the one it had."""
        had = model or "its default model"
        self.emit(state, Event("retry", text=f"{state.result.step}: the endpoint refused model {name!r}; "
                               f"going on with {had}", payload={
                                   "step": state.result.step, "attempt": state.result.attempts,
                                   "model_refused": name, "model": model or "", "error": error[:500]}))

    def _retry(self, out: Outcome, state: StepState) -> float | None:
        """Book a failed attempt; the backoff (after a "retry" event) when another attempt is due."""
        result, policy = state.result, self.resilience
        error = out.error or "unknown failure"
        result.errors.append(error)
        result.error = error
        kind = classify(error, status=out.status)
        if out.overflow:
            kind = FATAL  # handoff is off (or no session): the same prompt cannot fit again
        if not policy.enabled or result.attempts >= policy.max_attempts or not policy.should_retry(kind):
            return None
        delay = policy.delay_for(result.attempts)
        result.attempts += 1
        first = (error.splitlines() or [""])[0][:160]
        line = (f"{result.step}: attempt {result.attempts - 1} failed ({first}); "
                f"retrying {result.attempts}/{policy.max_attempts} in {delay:.1f}s")
        self.emit(state, Event("retry", text=line, payload={
            "step": result.step, "attempt": result.attempts, "max_attempts": policy.max_attempts,
            "error": error[:500], "kind": kind, "delay_s": round(delay, 2),
            "session_id": out.session_id or state.session}))
        return delay

    async def _wait_online(self, out: Outcome, state: StepState) -> bool:
        """A connection error: wait for the endpoint before the next attempt (False = it stayed down)."""
        policy = self.resilience
        if not policy.probe or not is_network_error(out.error):
            return True
        step = state.result.step

        def notify(line: str) -> None:
            self.emit(state, Event("retry", text=f"{step}: {line}", payload={"step": step, "offline": True}))

        if await policy.wait_online(notify, env=resolve_env(self.env)):
            return True
        state.result.attempts -= 1  # the retry booked for it never happened
        state.result.error = (f"{out.error} (the endpoint stayed unreachable for "
                              f"{policy.max_offline_wait:.0f}s)")
        return False

    async def _attempt(self, spec: AgentSpec, prompt: str | None, resume: str | None, fork: bool, state: StepState,
                       *, writing: bool = False) -> Outcome:
        """One attempt. ``writing`` = the handoff-writing round: no budget cap, no UI, no threshold."""
        effective = spec
        if _FORWARD in _OPTION_FIELDS and _FORWARD not in spec.extra:  # tagged subagent speech; never in .text
            effective = replace(effective, extra={**spec.extra, _FORWARD: True})
        if self.handoff.enabled and spec.compact is None:
            effective = replace(effective, compact="off")  # two context mechanisms at once hide who did what
        limit = None if writing else self.budget.limit(effective.max_budget_usd)
        if writing:
            effective = replace(effective, max_budget_usd=None)
        elif limit is not None:  # the CLI stops at the message that reaches what is left of the cap
            effective = replace(effective, max_budget_usd=limit.usd)
        effective = self.load.shaped(self.steering.shaped(effective), self.workbench)
        resume_at, state.resume_at = (state.resume_at, None) if resume and not writing else (None, state.resume_at)
        options = build_options(effective, cwd=self.workspace, env=self.env, resume=resume, fork=fork,
                                resume_at=resume_at, session_store=self.store, stderr=self.cli_stderr.append,
                                include_partial=self.partial_text and not writing)
        signal = StopSignal()
        if not writing:
            state.signal = signal
        try:
            channel = getattr(spec, "channel", None)
            sink: Callable[[list[Event]], None] = partial(self._on_events, state)
            plan = plan_of(channel) if spec.plan_first else None
            if plan is not None:  # the plan the agent presents is only in the stream (human/plan_review.py)
                sink = plan.watching(sink)
            attempt = Attempt(options, prompt, signal=signal,
                              on_events=None if writing else sink,
                              on_session=None if writing else partial(self._on_session, state),
                              idle_timeout=self.resilience.idle_timeout,
                              ask_tool=str(getattr(channel, "tool_name", "") or ""),
                              waiting_questions=None if channel is None else partial(waiting_questions, channel),
                              person_waits=None if channel is None else partial(person_waits, channel),
                              model_now=lambda: self.steering.now.model)
            live = (asyncio.get_running_loop(), attempt)
            with self._lock:
                self._attempts.add(live)
            try:
                out = await attempt.run()
            finally:
                with self._lock:
                    self._attempts.discard(live)
            self.budget.settle(out, limit, step=state.result.step)
            state.result.approvals += take_decisions(channel)
            return out
        finally:
            if state.signal is signal:
                state.signal = None
