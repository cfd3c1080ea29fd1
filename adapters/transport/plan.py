"""RunPlan: everything the run side needs to build a run's Workflow (or its wake), and nothing of chat.

It crosses process boundaries in Redis mode, so it is plain data with a JSON form.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from flower_core import Workflow, next_round, starter_flow
from flower_core.starter import StepNames

# The bot's (and the terminal's) names for starter_flow's steps: what its cards, logs and lineage have
# always said. flower_core's default is the original flower's (确认需求 / 设定目标 / 干活).
BOT_STEPS = StepNames("clarify", "goal", "work")


@dataclass(frozen=True)
class RunPlan:
    """What a run factory is given to build the Workflow of a run (or of its wake)."""

    task: str
    workspace: Path
    run_dir: Path
    waking: bool = False
    remark: str = ""
    timeout_s: float | None = 1800.0
    max_asks: int | None = None
    budget_usd: float | None = None
    round: int = 1  # 2, 3…: the run's next round, built by flower_core.next_round from the factory's workflow
    said: str = ""  # what a person said to start that round ("" when the round is woken after a restart)
    spent_usd: float = 0.0  # what the run cost before this process took it up: its cap counts it
    # The run's tool approvals (flower_core.human.approval.SETTING_KEYS): bot + channel + the run's own asks.
    approvals: dict[str, Any] = field(default_factory=dict)
    # The language the model is spoken to in (flower_core.lang): the bridge's default is English; a plan
    # written before the setting existed reads back as English too.
    language: str = "en"
    # The run's model and effort over every agent's own (None: the agents' or the CLI's default).
    model: str | None = None
    effort: str | None = None
    # Plan first: the work step starts in plan mode and works once a person approved its plan (kept in run_dir).
    plan_first: bool = False

    def to_json(self) -> str:
        data = asdict(self)
        data["workspace"], data["run_dir"] = str(self.workspace), str(self.run_dir)
        return json.dumps(data, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> RunPlan:
        data: dict[str, Any] = json.loads(text)
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        known["workspace"], known["run_dir"] = Path(known["workspace"]), Path(known["run_dir"])
        return cls(**known)


RunFactory = Callable[[RunPlan], Workflow]


def build_workflow(factory: RunFactory, plan: RunPlan) -> Workflow:
    """The factory's workflow, or from round 2 on the next round of it (its last agent step resumed); its
    cost cap starts with what the run spent before (earlier rounds, the process before a restart)."""
    workflow = factory(plan)
    if plan.round > 1:
        workflow = next_round(workflow, plan.said or plan.remark, run_dir=plan.run_dir, workspace=plan.workspace,
                              round_=plan.round)
    if plan.spent_usd > 0 and workflow.budget is not None:
        workflow.budget.book(plan.spent_usd)  # before the run binds it: the first gate already counts it
    return workflow


def default_factory(plan: RunPlan) -> Workflow:
    """starter_flow; on a wake, continue from the frozen brief, or from the task if none was frozen.

    ``plan.budget_usd`` becomes the workflow's cost cap (a budget of 0 raises: the run is refused)."""
    kw: dict[str, Any] = {"workspace": plan.workspace, "run_dir": plan.run_dir, "timeout_s": plan.timeout_s,
                          "max_asks": plan.max_asks, "budget_usd": plan.budget_usd, "approvals": plan.approvals,
                          "step_names": BOT_STEPS, "language": plan.language, "plan": plan.plan_first}
    if plan.waking:
        try:
            return starter_flow(plan.remark, **kw)
        except ValueError:
            pass  # nothing frozen yet: the same task again; lineage resumes the step that was cut off
    return starter_flow(plan.task, **kw)
