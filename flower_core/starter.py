"""starter_flow: a ready-made three-step workflow - clarify -> goal -> work (judged).

(The steps' names are the original flower's, 确认需求 / 设定目标 / 干活, unless the caller passes its own:
the bot and the terminal name them clarify / goal / work, see ``adapters.transport.plan.BOT_STEPS``.)

1. ``clarify``: the clarifier asks the human through the channel and writes the brief (goal,
   acceptance criteria, boundaries, unknowns and assumptions) to ``notes/<brief_name>``.
2. ``goal``: the goal setter turns the brief into a goal and a checklist in ``notes/<goal_name>``.
3. ``work``: a coordinator delegates to worker subagents; after each round an independent,
   read-only judge gives a verdict against the goal; a failed verdict is pushed back into the
   same session, up to ``rounds`` rounds in all.

A frozen brief (or goal) on disk means the step is skipped and the file feeds the next step, so a
second run in the same place is a *wake*: the new words are appended to the brief, the goal is
derived again, and the work step hears them.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import flower_core.roles as roles
from flower_core.documents import Verdict, brief_missing, goal_complete
from flower_core.lang import Catalogue, catalogue
from flower_core.lineage import Lineage
from flower_core.runtime.budget import DEFAULT_STEPS, REFUSED, Budget, BudgetError
from flower_core.workbench import Workbench
from flower_core.workflow import Ctx, Step, StepAbort, Workflow, current_run


@dataclass(frozen=True)
class StepNames:
    """The three steps' names: lineage keys, ctx keys, and what a front end shows."""

    clarify: str
    goal: str
    work: str


# The original flower's names (its starter_flow's); a front end may pass its own (the bot's are English).
ORIGINAL_STEPS = StepNames("确认需求", "设定目标", "干活")
CLARIFY, GOAL, WORK = ORIGINAL_STEPS.clarify, ORIGINAL_STEPS.goal, ORIGINAL_STEPS.work
WAKE_LABEL = catalogue()["amend.wake_label"]  # the seed's; a run in another language uses its own

# The first words of each prompt; the demo scenario routes on them, so change both together.
CLARIFY_OPENING = "Clarify this request before any work starts."
GOAL_OPENING = "Turn the brief into a goal with a checklist."
WORK_OPENING = "Carry out the work described in the brief."
JUDGE_OPENING = "Judge this round of work against the goal."
CLARIFY_RESUME = ("Continue the clarification you had not finished - do not start over, and do not ask again what "
                  "was already answered. Finish by writing the brief to {path}.")
WORK_RESUME = ("You were cut off in the middle of this work. Check what is already in the workspace and the "
               "workbench, then continue from where it stopped; do not start over.")


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return ""


def brief_ready(path: Path) -> bool:
    text = _read(path)
    return bool(text.strip()) and not brief_missing(text)


class JudgeGate:
    """The work step's gate: an independent judge run per round; ``verdicts`` keeps every verdict.

    The judge is a fresh session every round (``Runtime.run`` without resume, a ``#`` name that
    never enters lineage), so it cannot grow lenient with the worker.
    """

    def __init__(self, spec: Any, goal_path: Path, *, step: str = WORK, goal_key: str = GOAL) -> None:
        self.spec = spec
        self.goal_path = goal_path
        self.step, self.goal_key = step, goal_key
        self.verdicts: list[Verdict] = []

    async def __call__(self, result: Any, ctx: Ctx) -> bool:
        try:
            run = current_run()
        except LookupError as exc:
            raise StepAbort("no runtime to run the judge on; refusing to pass unjudged work") from exc
        goal = _read(self.goal_path) or str(ctx.get(self.goal_key, "")) or "(no goal file)"
        prompt = (f"{JUDGE_OPENING}\n\nThe goal ({self.goal_path}):\n{goal.strip()}\n\n"
                  f"The coordinator's report of this round:\n{(result.text or '(empty)')[:4000]}")
        n = len(self.verdicts) + 1
        vr = await run.runtime.run(self.spec, prompt, step_name=f"{self.step}·judge#{n}", on_event=run.on_event)
        if getattr(vr, "ok", False):
            verdict = Verdict.parse(vr.text)
        else:
            verdict = Verdict(False, [f"the judge could not finish ({getattr(vr, 'error', '') or 'no result'})"])
        self.verdicts.append(verdict)
        return verdict.passed

    def feedback(self, result: Any, ctx: Ctx) -> str:
        return self.verdicts[-1].feedback() if self.verdicts else ""


def _reach(spec: Any, wb: Workbench) -> Any:
    """A desk outside the workspace must be an added directory, or the CLI refuses to write there."""
    if wb.external and str(wb.root) not in spec.add_dirs:
        spec.add_dirs.append(str(wb.root))
    return spec


def _keep_amendments(channel: Any, brief: Path) -> None:
    """Mail sent while the brief was being written was appended to a file the agent then overwrote."""
    text = _read(brief)
    for mail in list(getattr(channel, "mail", [])):
        if mail.amended and mail.text.strip() and mail.text.strip() not in text:
            channel.amend(mail.text)


def _clarify_step(channel: Any, wb: Workbench, task: str, *, instructions: str, always_ask: bool,
                  names: StepNames, lang: Catalogue) -> Step:
    brief = wb.brief

    def when(ctx: Ctx) -> bool:
        if not always_ask and brief_ready(brief):
            ctx[names.clarify] = _read(brief)  # skipped, but the next steps still need the brief
            return False
        return True

    def gate(result: Any, ctx: Ctx) -> bool:
        if not brief_ready(brief):
            if not result.text or brief_missing(result.text):
                return False
            brief.parent.mkdir(parents=True, exist_ok=True)  # written in the reply instead of the file
            brief.write_text(result.text.strip() + "\n", encoding="utf-8")
        _keep_amendments(channel, brief)
        return True

    prompt = f"{CLARIFY_OPENING}\n\nThe request: {task}\n\nWrite the brief to {wb.show(brief)}."
    spec = _reach(roles.clarifier(channel, brief_path=wb.show(brief), instructions=instructions, language=lang), wb)
    return Step(names.clarify, spec, prompt,
                when=when, gate=gate, reduce=lambda r, ctx: _read(brief),
                resume_prompt=CLARIFY_RESUME.format(path=wb.show(brief)))


def _goal_step(channel: Any, wb: Workbench, *, always_set: bool, names: StepNames, lang: Catalogue) -> Step:
    goal = wb.goal

    def when(ctx: Ctx) -> bool:
        if not always_set and goal_complete(_read(goal)):
            ctx[names.goal] = _read(goal)
            return False
        return True

    def gate(result: Any, ctx: Ctx) -> bool:
        if goal_complete(_read(goal)):
            return True
        if result.text and goal_complete(result.text):
            goal.parent.mkdir(parents=True, exist_ok=True)
            goal.write_text(result.text.strip() + "\n", encoding="utf-8")
            return True
        return False

    def prompt(ctx: Ctx) -> str:
        brief = str(ctx.get(names.clarify) or _read(wb.brief) or "(no brief)").strip()
        return (f"{GOAL_OPENING}\n\nThe brief ({wb.show(wb.brief)}):\n{brief}\n\n"
                f"Write the goal to {wb.show(goal)}.")

    spec = _reach(roles.goal_setter(channel, goal_path=wb.show(goal), language=lang), wb)
    return Step(names.goal, spec, prompt, when=when, gate=gate, reduce=lambda r, ctx: _read(goal))


def _is_git_work_tree(path: Path) -> bool:
    try:
        done = subprocess.run(["git", "-C", str(path), "rev-parse", "--is-inside-work-tree"], capture_output=True,
                              text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and done.stdout.strip() == "true"


@dataclass(frozen=True)
class WorkChoices:
    """How the work step is built (starter_flow's flags): judged against the goal (``goal``, at most ``rounds``
    rounds), each worker in a git worktree of its own (``isolate``), the judge allowed to run commands
    (``judge_can_run``), in plan mode until a person approved its plan (``plan_first``)."""

    goal: bool = True
    rounds: int = 3
    isolate: bool = False
    judge_can_run: bool = False
    plan_first: bool = False


def _work_step(channel: Any, wb: Workbench, remark: str, *, worker_prompt: str, names: StepNames,
               choices: WorkChoices) -> Step:
    from flower_core.guards import isolate_guard, isolated, merge_hooks

    goal, rounds, isolate = choices.goal, choices.rounds, choices.isolate

    hand = roles.worker("Does the hands-on work: reads, writes, runs commands and checks results. "
                        "Give it one self-contained piece at a time.", worker_prompt, channel=channel)
    team = {"worker": isolated(hand) if isolate else hand}
    spec = _reach(roles.coordinator(team, channel=channel, workbench=wb), wb)
    if isolate:  # each Agent call for the worker gets a git worktree of its own
        spec = replace(spec, hooks=merge_hooks(spec.hooks, {"PreToolUse": [isolate_guard(team)]}))
    if choices.plan_first:  # plan mode until the channel's plan review is approved (human/plan_review.py)
        spec = replace(spec, plan_first=True)
    said = f"\n\nThe human added on waking: {remark}" if remark else ""

    def prompt(ctx: Ctx) -> str:
        brief = str(ctx.get(names.clarify) or _read(wb.brief)).strip()
        where = f"The brief: {wb.show(wb.brief)}"
        if goal:
            where += f"\nThe goal and its checklist: {wb.show(wb.goal)}"
        first = f"\n\n{catalogue(channel.lang)['plan.first']}" if choices.plan_first else ""  # (the demo routes on it)
        return f"{WORK_OPENING}\n\n{where}\n\n{brief}{said}{first}"

    step = Step(names.work, spec, prompt, resume_prompt=(f"{remark}\n\n{WORK_RESUME}" if remark else WORK_RESUME))
    if goal:
        judge = roles.judge()
        if choices.judge_can_run:  # it may run the checks (tests, builds); Write/Edit still do not exist for it
            judge = replace(judge, tools=[*(judge.tools or []), "Bash"], allowed_tools=[*judge.allowed_tools, "Bash"])
        gate = JudgeGate(_reach(judge, wb), wb.goal, step=names.work, goal_key=names.goal)
        step.gate, step.on_reject, step.retries = gate, gate.feedback, max(0, rounds - 1)
    return step


def starter_flow(task: str, *, workspace: str | Path = ".", run_dir: str | Path = "runs",
                 timeout_s: float | None = 1800.0, max_asks: int | None = None, rounds: int = 3,
                 goal: bool = True, clarify_only: bool = False, new: bool = False, instructions: str = "",
                 worker_prompt: str = roles.WORKER_PROMPT, home: str | Path | None = None,
                 brief_name: str | None = None, goal_name: str | None = None, qa_name: str | None = None,
                 budget_usd: float | None = None, budget_steps: tuple[float, ...] = DEFAULT_STEPS,
                 approvals: dict[str, Any] | None = None, isolate: bool = False,
                 judge_can_run: bool = False, step_names: StepNames = ORIGINAL_STEPS,
                 language: str | Catalogue | None = None, plan: bool = False) -> Workflow:
    """clarify -> goal -> work, with ``wf.workbench`` and ``wf.channel`` ready for the driver.

    The steps are named as the original flower's (确认需求 / 设定目标 / 干活) unless ``step_names`` says
    otherwise; their names are the lineage's and the context's keys, so a run keeps one set of names.
    ``new=True`` archives the lineage, brief and goal first (into ``notes/archive/<time>/``).
    ``budget_usd`` is the cost cap (``wf.budget``): at it the run asks through the channel whether to
    go on (+``budget_steps``) or stop; None = no cap. Raises BudgetError (a ValueError) for a cap of
    0 (nothing may run) or a bad one, before anything is touched; ValueError when there is nothing
    to do: no task and no frozen brief to wake from, or a bad ``approvals`` rule (human/approval.py).
    ``isolate=True`` (the original's): the worker works in a git worktree of its own, so ``workspace`` must be
    a git work tree (ValueError otherwise, before anything is touched) and the desk moves outside it
    (``<parent>/.flower-<name>`` unless ``home`` says where). ``judge_can_run=True`` lets the judge run commands.
    ``language`` (a code of ``flower_core.lang``, default the seed's Chinese) is what the model reads from the
    framework: the channel's replies, the clarifier's and goal setter's rules, the Q&A log, and the notes' names
    (需求.md / 目标.md / 问答记录.md, or e.g. brief.md / goal.md / qa-log.md in English) unless ``*_name`` says.
    LanguageError (a ValueError) for an unknown code. ``plan=True``: the work step plans first, in the CLI's plan
    mode, and works once a person approved its plan (``wf.channel.plan``, kept in ``<run_dir>/plan.json``).
    """
    from flower_core.human import HumanChannel  # the channel pulls in the SDK's MCP helpers lazily
    from flower_core.human.approval import gate_from
    from flower_core.human.plan_review import plan_first

    lang = catalogue(language)
    budget = Budget(budget_usd, steps=budget_steps) if budget_usd is not None else None
    if budget is not None and budget.cap == 0:
        raise BudgetError(REFUSED)

    if isolate:
        ws = Path(workspace).expanduser().resolve()
        if not _is_git_work_tree(ws):
            raise ValueError(f"isolate=True needs {ws} to be a git work tree (each worker gets a worktree of it); "
                             "run git init there, or drop isolate")
        home = home if home is not None else ws.parent / f".flower-{ws.name}"
    wb = Workbench(workspace, home, brief_name=brief_name, goal_name=goal_name, qa_name=qa_name, language=lang)
    wb.refresh()
    if new:
        Lineage.open(run_dir, wb.workspace).archive(wb.notes / "archive", extra=[wb.brief, wb.goal])
    task = task.strip()
    waking = brief_ready(wb.brief)
    if not waking and not task:
        raise ValueError("starter_flow needs a task, e.g. starter_flow('build me X', ...)")
    channel = HumanChannel(log_path=wb.qa_log, amend_path=wb.brief, max_asks=max_asks, timeout_s=timeout_s,
                           language=lang)
    channel.approvals = gate_from(approvals, cwd=wb.workspace, grants_path=Path(run_dir) / "approvals.json")
    if plan:
        plan_first(channel, run_dir, approvals=approvals, cwd=wb.workspace)
    if budget is not None:
        budget.channel = channel
    remark = task if waking else ""
    if remark and remark not in _read(wb.brief):
        # the judge and later steps read the brief, not this process
        channel.amend(remark, label=lang["amend.wake_label"])
    names = step_names
    steps = [_clarify_step(channel, wb, task, instructions=instructions, always_ask=False, names=names, lang=lang)]
    if not clarify_only:
        if goal:
            steps.append(_goal_step(channel, wb, always_set=bool(remark), names=names, lang=lang))
        work = WorkChoices(goal=goal, rounds=rounds, isolate=isolate, judge_can_run=judge_can_run, plan_first=plan)
        steps.append(_work_step(channel, wb, remark, worker_prompt=worker_prompt, names=names, choices=work))
    return Workflow(steps, name="starter", channel=channel, workbench=wb, budget=budget)
