"""RunEngine: the run side of one run in this process — its workflow task, runtime, channel and oracle.

It drives a RunSink: every event of the workflow and of its question channel (the oracle sees them
first), each finished step, and at the end a RunEnd. Inputs arrive as intents (intents.py): `submit`
logs one durably and applies it, `apply` applies one already logged elsewhere (a worker reading the
run's Redis stream); the Applier settles them, and at start replays what a dead holder left.
`EngineKit` is how a process builds engines from RunPlans: the same code runs runs in `flower-bot`
(local.py) and in `flower-worker`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from adapters.chores import Chores
from adapters.hop import hop
from adapters.ops.runlog import run_context
from adapters.transport.applier import Applier
from adapters.transport.base import RunEnd, RunSink
from adapters.transport.intents import Intent, IntentReply, RunLog
from adapters.transport.plan import RunFactory, RunPlan, build_workflow, default_factory
from flower_core import Event, WarmPool
from flower_core.payloads import AskPayload, StepPayload

if TYPE_CHECKING:
    from flower_core import Oracle, Resilience, Runtime, Step, Workflow

log = logging.getLogger(__name__)

LATE_TURNS_MAX = 3  # words that keep coming after the end: this many extra turns, then the run ends



def bridge_resilience() -> Resilience:
    """The bridge's own retry numbers (3 attempts, 2 s doubling to 60 s, no network probe): a chat run
    fails fast and says so in its thread; flower_core's defaults are the original flower's."""
    from flower_core import Resilience

    return Resilience(max_attempts=3, base_delay=2.0, max_delay=60.0, probe=False)


@dataclass
class EngineKit:
    """What building a run's engine takes besides its plan."""

    factory: RunFactory = default_factory
    env: Mapping[str, str] | None = None
    runtime_options: Mapping[str, Any] = field(default_factory=dict)
    park_after_s: float | None = None
    may_park: Callable[[], bool] | None = None
    oracle: bool = True
    adopt: bool = False  # restore a question whose process died before it parked (workers: see ParkPolicy)
    # The newest waiting questions whose runs keep their CLI (one pool for every run this kit builds); None:
    # every waiting run parks after park_after_s (flower_core/runtime/warm.py).
    warm: WarmPool | None = None

    def build(self, run_id: str, plan: RunPlan, sink: RunSink, *, log: RunLog | None = None) -> RunEngine:
        # The runtime (and with it claude_agent_sdk, ~60 MB) loads with the first run, not with the process.
        from flower_core import HandoffPolicy, Oracle, ParkPolicy, Runtime

        workflow = build_workflow(self.factory, plan)
        park = ParkPolicy(self.park_after_s, allow=self.may_park, adopt=self.adopt, warm=self.warm)
        # The bot shows a run's tool output in its thread as it was; a resumed history keeps it whole too (the
        # framework's defaults, the original flower's, expire glances and spill long results).
        options = {"park": park, "resilience": bridge_resilience(), "ephemeral": False, "spill_threshold": None,
                   "handoff": HandoffPolicy(near=0.70, trigger=0.80, max_generations=5, plain_window=200_000,
                                            calibrate=False), **self.runtime_options}
        env = dict(self.env) if self.env is not None else None
        runtime = Runtime(workspace=plan.workspace, run_dir=plan.run_dir, workbench=workflow.workbench, env=env,
                          model=plan.model, effort=plan.effort, **options)
        oracle = Oracle(workspace=plan.workspace, run_dir=plan.run_dir, workbench=workflow.workbench, env=env,
                        budget=workflow.budget) if self.oracle else None
        return RunEngine(run_id, workflow, runtime, sink, oracle=oracle, log=log)


class RunEngine:
    """One run going in this process. Its intents are coroutines to match the RunSide protocol."""

    holder = ""

    def __init__(self, run_id: str, workflow: Workflow, runtime: Runtime, sink: RunSink, *,
                 oracle: Oracle | None = None, log: RunLog | None = None) -> None:
        self.run_id = run_id
        self.workflow, self.runtime, self.oracle, self.sink = workflow, runtime, oracle, sink
        self.channel = workflow.channel
        self.log = log
        self.applier = Applier(run_id, channel=self.channel, runtime=runtime, log_=log, ask_oracle=self._ask_oracle,
                               cancel=self.cancel, emit=self.on_event)
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop_reason = ""
        self._oracles = Chores()
        self._reused: set[str] = set()  # steps an earlier process finished (their step_done reports at once)

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        if self.channel is not None and getattr(self.channel, "on_event", None) is None:
            self.channel.on_event = self.on_event
        self._task = self._loop.create_task(self._main(), name=f"run {self.run_id}", context=run_context(self.run_id))

    @property
    def task(self) -> asyncio.Task[None] | None:
        return self._task

    @property
    def stop_reason(self) -> str:
        return self._stop_reason

    def on_event(self, ev: Event) -> None:
        """The workflow's and the channel's sink (any thread). Never blocks, never raises."""
        try:
            if hop(self._loop, self.on_event, ev):
                return
            if (self._stop_reason == "shutdown" and ev.kind == "ask"
                    and (ask := AskPayload.of(ev)).kind != "mail" and ask.state == "cancelled"):
                return  # this process is going away: the card stays open, answerable after the restart
            if self.oracle is not None:
                with contextlib.suppress(Exception):
                    self.oracle.observe(ev)
            if ev.kind == "step" and StepPayload.of(ev).reused:
                self._reused.add(ev.text)
            self.applier.observe(ev)
            self.sink.on_event(ev)
        except Exception as exc:
            log.warning("run %s: event %s not passed on: %r", self.run_id, ev.kind, exc)

    def _on_step(self, step: Step, result: object) -> None:
        if str(getattr(step, "name", "")) not in self._reused:  # a reused step ran nothing in this process
            self.applier.step_done()
        self.sink.step_done(str(getattr(step, "name", "")))

    async def _main(self) -> None:
        state, failed_at, error, text = "done", "", "", ""
        try:
            if await self.applier.replay():  # a stop the last holder never carried out
                raise asyncio.CancelledError
            ctx = await self.workflow.run(self.runtime, on_event=self.on_event, on_step=self._on_step)
            failed_at = str(ctx.get("_failed_at") or "")
            results = self.workflow.results
            if failed_at:
                state = "failed"
                failed = results.get(failed_at)
                error = str(getattr(failed, "error", "") or "the step did not pass")
                text = str(getattr(failed, "text", "") or "")
            elif results:
                text = str(getattr(list(results.values())[-1], "text", "") or "")
                text = await self._hear_late_words(ctx) or text
        except asyncio.CancelledError:
            state = "died" if self._stop_reason == "shutdown" else "stopped"
        except Exception as exc:  # the workflow itself broke: report it, keep the process alive
            log.exception("run %s crashed", self.run_id)
            state, error = "failed", f"{type(exc).__name__}: {exc}"
        try:
            await self._oracles.wait()
            await self.applier.ended(state)
            cost = float(self.runtime.total_cost() or 0.0)
            end = RunEnd(state, text=text, failed_at=failed_at, error=error, cost_usd=cost,
                         steps=len(self.workflow.results))
        finally:
            for closer in (getattr(self.oracle, "close", None), getattr(self.runtime, "close", None)):
                if closer is not None:
                    with contextlib.suppress(Exception):
                        closer()
        try:
            await self.sink.ended(end)
        except Exception as exc:
            # Met when the process is going away and has closed what the sink books into (a run that ended on
            # its own just then): the run stays as the store last had it (live), so the next process wakes it
            # and replays what was not settled. One line, not a traceback at exit.
            log.warning("run %s: its end (%s) was not booked: %r", self.run_id, state, exc)

    async def _hear_late_words(self, ctx: Mapping[str, Any]) -> str:
        """A person interrupted after the last step had ended (they were told "ok"): the run does not end
        unheard — the last step's session goes on with their words, as an interrupt resumes it. The text
        of that turn ("" when there were no such words, or no session to hear them)."""
        take = getattr(self.runtime, "take_unread", None)
        text = ""
        for _ in range(LATE_TURNS_MAX):
            words = take() if take is not None else None
            if not words or not words.strip():
                break
            last = next((r for r in reversed(list(self.workflow.results.values())) if getattr(r, "session_id", None)),
                        None)
            step = next((s for s in self.workflow.steps if last is not None and s.name == last.step), None)
            if last is None or step is None:
                log.warning("run %s: words after the last step, and no session to hear them", self.run_id)
                break
            from flower_core import AgentSpec

            spec = step.spec if isinstance(step.spec, AgentSpec) else step.spec(ctx)
            from flower_core.runtime.handoff import interrupt_prompt

            result = await self.runtime.run(spec, interrupt_prompt(words), step_name=step.name,
                                            resume=last.session_id, on_event=self.on_event)
            self.applier.step_done()
            text = str(result.text or "") or text
        return text

    # ---- intents -------------------------------------------------------------------------------
    def cancel(self, reason: str) -> bool:
        if self._task is None or self._task.done():
            return False
        self._stop_reason = reason
        self._task.cancel()
        return True

    async def submit(self, intent: Intent) -> IntentReply:
        """Log the intent durably (before anyone is told "ok"), then apply it."""
        if self.log is not None:
            self.log.append(intent)
        return await self.applier.apply(intent)

    async def apply(self, intent: Intent) -> IntentReply:
        """Apply an intent logged already (a worker read it from the run's stream)."""
        return await self.applier.apply(intent)

    async def _ask_oracle(self, question: str) -> str:
        if self.oracle is None:
            raise LookupError("this run has no oracle")
        return str(await self._oracles.spawn(self.oracle.ask(question)))
