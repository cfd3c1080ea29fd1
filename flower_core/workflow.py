"""Workflow: steps run in order on one Runtime; what each step yields reaches the next via ``ctx``.

A ``Step`` is a declaration: running it is one ``Runtime.run`` (one session). ``ctx`` is the
workflow's plain dict: after a step passes, ``ctx[step.name]`` holds ``step.reduce(result, ctx)``
or the main-thread text; the full ``StepResult`` is in ``wf.results[step.name]``. The keys the
workflow itself writes start with ``_``, as the original flower's: ``_failed_at`` (the step that
failed with ``on_fail="stop"``), ``_sessions`` / ``_results`` (the very dicts ``wf.sessions`` /
``wf.results``),
``_runtime``, ``_on_event``, ``_lineage`` (None when not continuous), ``_woke`` (which wake this
is, ``wf.wake``) and ``_aborted`` (a gate's StepAbort message). Across processes the bookkeeping is in
``<run_dir>/lineage.json`` (see lineage.py).

| outcome                         | ctx[name]                     | run goes on |
|---------------------------------|-------------------------------|-------------|
| ``when(ctx)`` is False          | untouched, no step event      | yes         |
| passed                          | reduce(result, ctx) or text   | yes         |
| failed, on_fail="stop"          | untouched; ctx["_failed_at"]  | no          |
| failed, on_fail="skip"          | untouched                     | yes         |
| failed, on_fail="continue"      | result.text (partial)         | yes         |

Continuity (``continuous=True``): a step that finished in an earlier process of an unfinished pass
is not run again - its recorded result is reused; a step that was cut off resumes the session
recorded for it (``woke=True`` in its step event) with ``resume_prompt`` if given.
"""

from __future__ import annotations

import contextvars
import dataclasses
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from flower_core.events import Event
from flower_core.lineage import Lineage
from flower_core.payloads import ResultPayload, SystemPayload, ThreadPayload

Ctx = dict[str, Any]
EventSink = Callable[[Event], None]
Prompt = str | Callable[[Ctx], str]
T = TypeVar("T")

ON_FAIL = ("stop", "skip", "continue")
FAILED_AT = "_failed_at"
SESSIONS, RESULTS, RUNTIME, ON_EVENT, LINEAGE, ABORTED, WOKE = (
    "_sessions", "_results", "_runtime", "_on_event", "_lineage", "_aborted", "_woke")


class StepAbort(Exception):
    """Raised by a gate: this step cannot succeed, do not spend the remaining retries."""


@dataclass
class Step:
    """One step: run ``spec`` (an AgentSpec, or a factory ``ctx -> AgentSpec``) with ``prompt``.

    ``gate(result, ctx) -> bool`` judges a successful run (may be async, may raise StepAbort);
    ``retries`` more attempts follow a failed one - resuming the rejected session with
    ``on_reject(result, ctx)``'s text when given, else from scratch. ``when(ctx)`` False skips the
    step. ``resume_from`` continues another step's session (``fork`` branches it).
    """

    name: str
    spec: Any
    prompt: Prompt
    # The original flower's field order: resume_from is the fourth positional field.
    resume_from: str | None = None
    fork: bool = False
    retries: int = 0
    gate: Callable[[Any, Ctx], bool | Awaitable[bool]] | None = None
    on_fail: str = "stop"
    when: Callable[[Ctx], bool | Awaitable[bool]] | None = None
    on_reject: Callable[[Any, Ctx], str | Awaitable[str]] | None = None
    resume_prompt: Prompt | None = None
    reduce: Callable[[Any, Ctx], Any] | None = None

    def __post_init__(self) -> None:
        if not self.name or self.name.startswith("_"):
            raise ValueError(f"step name {self.name!r}: must be non-empty and not start with '_'")
        if self.on_fail not in ON_FAIL:
            raise ValueError(f"step {self.name!r}: on_fail must be one of {ON_FAIL}, not {self.on_fail!r}")
        if self.retries < 0:
            raise ValueError(f"step {self.name!r}: retries must be >= 0")

    def render(self, ctx: Ctx, *, resuming: bool = False) -> str:
        """The prompt for this attempt: ``resume_prompt`` when resuming and given, else ``prompt``."""
        src = self.resume_prompt if resuming and self.resume_prompt is not None else self.prompt
        return src(ctx) if callable(src) else src

    def agent(self, ctx: Ctx) -> Any:
        """The AgentSpec to run: ``spec`` itself, or what the factory builds from ``ctx``."""
        return self.spec(ctx) if callable(self.spec) else self.spec


@dataclass
class WorkflowRun:
    """What a gate or ``when`` may need while a workflow runs (see ``current_run()``)."""

    workflow: Workflow
    runtime: Any
    on_event: EventSink | None
    wake: int


_CURRENT: contextvars.ContextVar[WorkflowRun] = contextvars.ContextVar("flower_workflow_run")


def current_run() -> WorkflowRun:
    """The running workflow's state; for gates that dispatch an agent of their own (a judge).

    Raises LookupError outside ``Workflow.run``.
    """
    return _CURRENT.get()


@dataclass
class Workflow:
    """Steps in order. ``channel`` (a HumanChannel) gets ``on_event`` wired by ``run`` if it has none.

    ``budget`` (a ``runtime.budget.Budget``, dollars, or None) is the run's cost cap: ``run`` hands it to the
    runtime, and it asks through ``channel`` and reports through ``on_event`` unless it has its own.
    """

    steps: list[Step]
    name: str = "workflow"
    context: Ctx = field(default_factory=dict)
    channel: Any = None
    workbench: Any = None
    continuous: bool = True
    budget: Any = None
    round: int = 0  # a run's next round (flower_core/rounds.py): its step events say which
    # Filled by run(); readable by drivers and UIs.
    results: dict[str, Any] = field(default_factory=dict, init=False)
    sessions: dict[str, str] = field(default_factory=dict, init=False)
    wake: int = field(default=0, init=False)
    aborted: str | None = field(default=None, init=False)
    ui_errors: list[str] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        names = [s.name for s in self.steps]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise ValueError(f"duplicate step names: {sorted(dup)}")
        if self.budget is not None and not hasattr(self.budget, "bind"):  # dollars: a Budget of that cap
            from flower_core.runtime.budget import Budget  # the runtime package imports the SDK: load lazily

            self.budget = Budget(self.budget)

    async def run(self, runtime: Any, *, on_event: EventSink | None = None,
                  on_step: Callable[[Step, Any], None] | None = None) -> Ctx:
        """Run the steps on ``runtime``; returns ``ctx`` (check ``ctx.get("_failed_at")``)."""
        ctx = self.context
        ctx.pop(FAILED_AT, None)
        self.aborted = None
        if on_event is not None and self.channel is not None and getattr(self.channel, "on_event", None) is None:
            self.channel.on_event = on_event
        workspace = getattr(runtime, "workspace", None)
        if self.channel is not None and workspace is not None and getattr(self.channel, "share_root", "") is None:
            self.channel.share_root = Path(workspace)  # what the agent may share (human/share.py)
        if self.budget is not None:
            self.budget.bind(runtime=runtime, channel=self.channel, on_event=on_event)
        lineage = self._open_lineage(runtime)
        # The original flower's private keys, its meaning: the dicts the loop writes (the same objects as
        # self.sessions / self.results), the runtime and event sink a gate may use, the lineage file.
        ctx.pop(ABORTED, None)
        ctx.update({SESSIONS: self.sessions, RESULTS: self.results, RUNTIME: runtime, ON_EVENT: on_event,
                    LINEAGE: lineage})
        woken: dict[str, str] = {}
        if lineage is not None:
            self.wake = lineage.bump()
            woken = {n: sid for n, sid in lineage.steps.items() if _alive(runtime, sid)}
        else:
            self.wake += 1
        ctx[WOKE] = self.wake
        token = _CURRENT.set(WorkflowRun(self, runtime, on_event, self.wake))
        try:
            total = len(self.steps)
            for index, step in enumerate(self.steps, start=1):
                done = lineage.done.get(step.name) if lineage is not None else None
                if done is not None:
                    result, passed = self._reuse(step, done, ctx)
                    self._emit(on_event, step, index, total, resumed=False, woke=True, reused=True)
                elif step.when is not None and not await _maybe(step.when(ctx)):
                    continue
                else:
                    result, passed = await self._run_step(step, index, total, runtime, ctx, lineage, woken,
                                                          on_event)
                if not passed and step.on_fail == "stop":
                    ctx[FAILED_AT] = step.name
                self._call(on_step, step, result)
                if FAILED_AT in ctx:
                    break
            if lineage is not None and FAILED_AT not in ctx:
                lineage.pass_complete()
        finally:
            _CURRENT.reset(token)
        return ctx

    # -- one step ---------------------------------------------------------------------------
    async def _run_step(self, step: Step, index: int, total: int, runtime: Any, ctx: Ctx,
                        lineage: Lineage | None, woken: dict[str, str],
                        on_event: EventSink | None) -> tuple[Any, bool]:
        resume: str | None = None
        fork = False
        woke = False
        if step.resume_from is not None:
            resume = self.sessions.get(step.resume_from) or woken.get(step.resume_from)
            if not resume:
                raise ValueError(f"step {step.name!r}: resume_from {step.resume_from!r} has no session")
            fork = step.fork
        elif step.name in woken:
            resume, woke = woken[step.name], True
        self._emit(on_event, step, index, total, resumed=resume is not None, woke=woke, reused=False)
        spec = step.agent(ctx)
        sink = self._recorder(step.name, lineage, on_event)
        prompt = step.render(ctx, resuming=woke)
        first = (prompt, resume, fork)
        passed = False
        result: Any = None
        label = step.name  # manifest rows: name, name#retryN (from scratch), name#roundN (pushed back)
        for attempt in range(step.retries + 1):
            result = await runtime.run(spec, prompt, step_name=label, resume=resume, fork=fork, on_event=sink)
            self._remember(step.name, getattr(result, "session_id", None), lineage)
            if getattr(getattr(runtime, "budget", None), "stopped", None):  # stopped at the cost cap: no retry
                break
            try:
                passed = await self._judge(step, result, ctx)
            except StepAbort as exc:  # another round will not help: keep the remaining retries
                self.aborted, passed = str(exc) or type(exc).__name__, False
                ctx[ABORTED] = self.aborted
                break
            if passed or attempt == step.retries:
                break
            prompt, resume, fork = first
            label = f"{step.name}#retry{attempt + 1}"
            if step.on_reject is not None and getattr(result, "session_id", None):
                feedback = await _maybe(step.on_reject(result, ctx))
                if feedback:  # push back into the rejected session instead of starting over
                    prompt, resume, fork = feedback, result.session_id, False
                    label = f"{step.name}#round{attempt + 2}"
        self.results[step.name] = result
        if passed:
            ctx[step.name] = step.reduce(result, ctx) if step.reduce is not None else result.text
        elif step.on_fail == "continue":
            ctx[step.name] = result.text
        if lineage is not None and (passed or step.on_fail != "stop"):
            lineage.finish(step.name, {"passed": passed, "value": ctx.get(step.name), "result": _as_dict(result)})
        return result, passed

    async def _judge(self, step: Step, result: Any, ctx: Ctx) -> bool:
        if not getattr(result, "ok", False):
            return False  # a failed run is never shown to the gate
        if step.gate is None:
            return True
        return bool(await _maybe(step.gate(result, ctx)))

    def _reuse(self, step: Step, record: dict[str, Any], ctx: Ctx) -> tuple[Any, bool]:
        result = _restore(record.get("result") or {}, step.name)
        passed = bool(record.get("passed"))
        if passed:
            ctx[step.name] = record.get("value")
        elif step.on_fail == "continue":
            ctx[step.name] = getattr(result, "text", "")
        self.results[step.name] = result
        if getattr(result, "session_id", None):
            self.sessions[step.name] = result.session_id
        return result, passed

    # -- bookkeeping --------------------------------------------------------------------------
    def _open_lineage(self, runtime: Any) -> Lineage | None:
        run_dir, workspace = getattr(runtime, "run_dir", None), getattr(runtime, "workspace", None)
        if not self.continuous or run_dir is None or workspace is None:
            return None
        return Lineage.open(run_dir, workspace)

    def _remember(self, step: str, session_id: str | None, lineage: Lineage | None) -> None:
        if not session_id:
            return
        self.sessions[step] = session_id
        if lineage is not None:
            lineage.remember(step, session_id)

    def _recorder(self, step: str, lineage: Lineage | None, on_event: EventSink | None) -> EventSink:
        """A sink for this step's own run: records the session id the moment it is known.

        Only the step's own ``Runtime.run`` gets it - a judge run from a gate must never land in
        the step's lineage.
        """
        def sink(ev: Event) -> None:
            try:
                if ev.kind == "result" or (ev.kind == "system" and ev.text == "init"):
                    sid = (ResultPayload.of(ev) if ev.kind == "result" else SystemPayload.of(ev)).session_id
                    if sid and not ThreadPayload.of(ev).subagent:
                        self._remember(step, sid, lineage)
            except Exception as exc:  # bookkeeping must never break the run
                self.ui_errors.append(f"lineage: {exc!r}")
            if on_event is not None:
                on_event(ev)
        return sink

    def _emit(self, on_event: EventSink | None, step: Step, index: int, total: int, *, resumed: bool,
              woke: bool, reused: bool) -> None:
        payload = {"index": index, "total": total, "resumed": resumed, "woke": woke, "reused": reused,
                   "wake": self.wake, **({"round": self.round} if self.round else {})}
        self._call(on_event, Event("step", text=step.name, payload=payload))

    def _call(self, fn: Callable[..., Any] | None, *args: Any) -> None:
        if fn is None:
            return
        try:
            fn(*args)
        except Exception as exc:  # a crashed UI callback must not take the run down with it
            self.ui_errors.append(f"{getattr(fn, '__name__', 'callback')}: {exc!r}")


async def _maybe(value: T | Awaitable[T]) -> T:
    return await value if inspect.isawaitable(value) else value


def _alive(runtime: Any, session_id: str) -> bool:
    """Is a recorded session still in the runtime's store? (Trusted when it cannot tell.)"""
    has = getattr(runtime, "has_session", None)
    if not callable(has):
        return True
    try:
        return bool(has(session_id))
    except Exception:
        return False


def _as_dict(result: Any) -> dict[str, Any]:
    if dataclasses.is_dataclass(result) and not isinstance(result, type):
        return dataclasses.asdict(result)
    return dict(vars(result)) if hasattr(result, "__dict__") else {}


def _restore(data: dict[str, Any], step: str) -> Any:
    """Rebuild a StepResult recorded by an earlier process (unknown fields are dropped)."""
    from flower_core.runtime import StepResult  # the runtime package imports the SDK: load lazily

    names = {f.name for f in dataclasses.fields(StepResult)}
    kwargs = {k: v for k, v in data.items() if k in names}
    kwargs.setdefault("step", step)
    return StepResult(**kwargs)
