"""The original flower's composable workflow pieces: clarify_step, goal_step, with_goal, wake_state.

    clarify_step ──> ctx[BRIEF_KEY] = Brief, ctx[name] = its prompt block, frozen to brief_path
    goal_step    ──> ctx[GOAL_KEY]  = Goal,  ctx[name] = its markdown,      frozen to goal_path
    with_goal(step) wraps a working step: after each round an independent judge (a fresh session,
                    a ``#n`` step name that never enters lineage) rules with three outcomes:
        achieved     → pass
        not yet      → another round, pushed back into the same session with what is missing
        unreachable  → ask the human: accept / amend the goal / "you ruled wrong"; no answer → StepAbort

A frozen brief (or goal) on disk skips its step but still pours it into ctx, so a second run in
the same place picks up where the first stopped. Written from the original's documented
behaviour; the starter (``flower_core.starter``) keeps its own, file-writing steps.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from flower_core.goals import Brief, Goal, Verdict
from flower_core.lineage import Lineage
from flower_core.spec import AgentSpec
from flower_core.team import clarify, judge
from flower_core.workflow import Ctx, Prompt, Step, StepAbort, current_run

BRIEF_KEY = "_brief"
MISSING_KEY = "_brief_missing"
GOAL_KEY = "_goal"
VERDICT_KEY = "_verdict"
ROUND_KEY = "_goal_rounds"
CLARIFY_RESUME = ("继续刚才没做完的需求确认,不要从头再来,也不要再问已经答过的问题。"
                  "问清楚之后,按四段(目标 / 验收标准 / 边界 / 未知与假设)给出确认书。")
NO_BRIEF = "(没有确认书)"
GOAL_PROMPT = ("读下面的需求确认书,先看清楚所处的环境,再给出目标和判定清单(两段:## 目标、## 判定清单)。\n\n"
               "{brief}")
VERIFY_PROMPT = ("判定这一轮的工作是否达到目标。亲自查看产出,不要相信“已经做完了”。\n\n{goal}\n\n"
                 "这一轮的汇报:\n{report}")
ACCEPT, AMEND = "接受这个结果,继续往下", "修改目标"
UNREACHABLE_ASK = "判定者认为这个目标在这里达不到或无法验证:{reason}\n怎么办?"
AMEND_ASK = "新的目标是什么?(会追加到原目标后面,不会覆盖)"


def _runtime_of(ctx: Ctx) -> tuple[Any, Any]:
    """(runtime, on_event) of the running workflow: ctx's ``_runtime`` when set, else the workflow's own."""
    if ctx.get("_runtime") is not None:
        return ctx["_runtime"], ctx.get("_on_event")
    try:
        run = current_run()
    except LookupError:
        return None, None
    return run.runtime, run.on_event


def _pour_brief(ctx: Ctx, name: str, brief: Brief) -> None:
    ctx[BRIEF_KEY] = brief
    ctx[name] = brief.prompt_block()
    ctx.pop(MISSING_KEY, None)


def clarify_step(channel: Any, *, brief_path: str | Path, prompt: Prompt, name: str = "确认需求",
                 spec: AgentSpec | None = None, instructions: str = "", always_ask: bool = False,
                 on_fail: str = "stop", retries: int = 0, **spec_kw: Any) -> Step:
    """A step that asks until the request is clear and freezes the four-section Brief at ``brief_path``."""
    agent = spec if spec is not None else clarify(name, channel, instructions=instructions, **spec_kw)

    def when(ctx: Ctx) -> bool:
        if always_ask:
            return True
        frozen = Brief.load(brief_path)
        if frozen is not None and frozen.complete():
            _pour_brief(ctx, name, frozen)  # poured even when skipping, or the next step hears nothing
            return False
        return True

    def gate(result: Any, ctx: Ctx) -> bool:
        brief = Brief.parse(result.text)
        if not brief.complete():
            ctx[MISSING_KEY] = brief.missing()
            return False
        brief.write(brief_path)
        _pour_brief(ctx, name, brief)
        return True

    def reduce(result: Any, ctx: Ctx) -> str:
        brief = ctx.get(BRIEF_KEY)
        return brief.prompt_block() if isinstance(brief, Brief) else str(result.text)

    return Step(name, agent, prompt, on_fail=on_fail, retries=retries, gate=gate, when=when, reduce=reduce,
                resume_prompt=CLARIFY_RESUME)


def goal_step(channel: Any, *, goal_path: str | Path, brief_key: str = "确认需求", name: str = "设定目标",
              spec: AgentSpec | None = None, instructions: str = "", always_set: bool = False,
              on_fail: str = "stop", retries: int = 0, **spec_kw: Any) -> Step:
    """A step where the judge turns the brief into a Goal with a checklist, frozen at ``goal_path``."""
    agent = spec if spec is not None else judge(name, channel, instructions=instructions, **spec_kw)

    def prompt(ctx: Ctx) -> str:
        return GOAL_PROMPT.format(brief=str(ctx.get(brief_key) or NO_BRIEF))

    def when(ctx: Ctx) -> bool:
        if always_set:
            return True
        frozen = Goal.load(goal_path)
        if frozen is not None and frozen.complete():
            ctx[GOAL_KEY], ctx[name] = frozen, frozen.to_markdown()
            return False
        return True

    def gate(result: Any, ctx: Ctx) -> bool:
        goal = Goal.parse(result.text)
        if not goal.complete():
            return False
        target = goal.write(goal_path)
        ctx[GOAL_KEY], ctx[name] = goal, goal.to_markdown()
        if goal.unverifiable:  # doomed checks are cheapest to see now, before a round of work is paid for
            _, on_event = _runtime_of(ctx)
            if on_event is not None:
                from flower_core.events import Event
                on_event(Event("task", text=f"{len(goal.unverifiable)} check(s) cannot be verified here",
                               payload={"unverifiable": list(goal.unverifiable), "total": len(goal.checks),
                                        "path": str(target)}))
        return True

    return Step(name, agent, prompt, on_fail=on_fail, retries=retries, gate=gate, when=when)


async def _ask(channel: Any, question: str, options: list[str] | None = None) -> Any:
    """The settled Ask: ``ask_outcome`` where the channel has it (ours), ``ask`` otherwise."""
    method = getattr(channel, "ask_outcome", None) or channel.ask
    return await method(question, options)


def with_goal(step: Step, channel: Any, *, goal_path: str | Path, spec: AgentSpec | None = None, rounds: int = 3,
              instructions: str = "", can_run: bool = False, name: str | None = None, **spec_kw: Any) -> Step:
    """Guard ``step`` with an independent judge: at most ``rounds`` rounds of work in all."""
    label = name or f"{step.name}·判定"
    judger = spec if spec is not None else judge(label, channel, instructions=instructions, can_run=can_run,
                                                 **spec_kw)

    async def gate(result: Any, ctx: Ctx) -> bool:
        runtime, on_event = _runtime_of(ctx)
        if runtime is None:
            raise StepAbort("拿不到 Runtime,无法判定目标")  # never pass unjudged work
        ctx[ROUND_KEY] = int(ctx.get(ROUND_KEY, 0)) + 1
        goal = ctx.get(GOAL_KEY)
        if not (isinstance(goal, Goal) and goal.complete()):
            goal = Goal.load(goal_path) or Goal()
        prompt = VERIFY_PROMPT.format(goal=goal.prompt_block() or "(没有目标)", report=(result.text or "(空)")[:4000])
        vr = await runtime.run(judger, prompt, step_name=f"{label}#{ctx[ROUND_KEY]}", on_event=on_event)
        verdict = Verdict.parse(vr.text)
        ctx[VERDICT_KEY] = verdict
        if verdict.achieved:
            return True
        if not verdict.unreachable:
            if not verdict.ok:  # ambiguity never closes the work
                verdict.reason = verdict.reason or "判定者没有给出明确结论,按未达成处理"
            return False
        ask = await _ask(channel, UNREACHABLE_ASK.format(reason=verdict.reason or "(没有说明)"), [ACCEPT, AMEND])
        if getattr(ask, "state", "") != "answered":
            raise StepAbort(f"目标无法达成,且无人应答:{verdict.reason}")
        choice = _choice(ask.answer)
        if choice == ACCEPT:
            return True
        if choice == AMEND:
            extra = await _ask(channel, AMEND_ASK)
            if getattr(extra, "state", "") == "answered" and extra.answer.strip():
                goal.amend(extra.answer).write(goal_path)
                ctx[GOAL_KEY] = goal
            return False
        verdict.reason = f"人认为判定有误:{ask.answer}"
        return False

    def on_reject(result: Any, ctx: Ctx) -> str:
        verdict = ctx.get(VERDICT_KEY)
        return verdict.feedback() if isinstance(verdict, Verdict) else ""

    return dataclasses.replace(step, retries=max(0, rounds - 1), gate=gate, on_reject=on_reject)


def _choice(answer: str) -> str:
    """ACCEPT or AMEND when the person's words pick one (a click, or typed words that start like it), else ""."""
    said = (answer or "").strip().lower()
    for option, starts in ((ACCEPT, ("接受", "accept")), (AMEND, ("修改目标", "改目标", "amend"))):
        if said == option or said.startswith(starts):
            return option
    return ""


def _desk(workspace: str | Path, isolate: bool) -> Path:
    """Where the workbench lives: beside the repository when isolated, ``<ws>/.flower`` otherwise."""
    ws = Path(workspace).expanduser().resolve()
    return ws.parent / f".flower-{ws.name}" if isolate else ws / ".flower"


def wake_state(workspace: str | Path = ".", *, run_dir: str | Path = "runs", isolate: bool = False,
               brief_name: str = "需求.md", goal_name: str = "目标.md") -> dict[str, Any]:
    """A read-only look, before anything runs, at whether this run continues the last one; writes nothing."""
    notes = _desk(workspace, isolate) / "notes"
    brief, goal = Brief.load(notes / brief_name), Goal.load(notes / goal_name)
    lineage = Lineage.open(run_dir, workspace)
    return {"waking": bool(brief and brief.complete()), "brief": notes / brief_name, "goal": notes / goal_name,
            "checks": len(goal.checks) if goal else 0, "woke": lineage.woke, "steps": dict(lineage.steps)}
