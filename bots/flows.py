"""What a bot run is: the workflow a hub builds for each started (or woken) run.

- ``starter``: the starter workflow (clarify → goal → judged work), the default;
- ``single``: one agent step with the human channel — like ``flower once``, but it can ask,
  read its inbox and be interrupted.
"""

from __future__ import annotations

from adapters.hub import RunFactory, RunPlan, default_factory
from flower_core import AgentSpec, HumanChannel, Step, Workflow
from flower_core.human.approval import gate_from
from flower_core.human.plan_review import plan_first

__all__ = ["RESUME_PROMPT", "SINGLE_TOOLS", "flow_factory", "single_flow"]

SINGLE_TOOLS = ["Read", "Write", "Edit", "Bash", "Glob", "Grep"]
RESUME_PROMPT = "You were cut off by a restart. Continue where you were; ask again what was not answered."
SINGLE_RULES = ("You work on the task directly. When a decision needs the human, ask with the mcp__human__ask tool "
                "(a question and a few short options); check mcp__human__inbox after each milestone.")


def single_flow(plan: RunPlan) -> Workflow:
    channel = HumanChannel(timeout_s=plan.timeout_s, max_asks=plan.max_asks, language=plan.language)
    channel.approvals = gate_from(plan.approvals, cwd=plan.workspace, grants_path=plan.run_dir / "approvals.json")
    if plan.plan_first:
        plan_first(channel, plan.run_dir, approvals=plan.approvals, cwd=plan.workspace)
    spec = AgentSpec(name="single", system_prompt=SINGLE_RULES, allowed_tools=SINGLE_TOOLS,
                     permission_mode="acceptEdits", channel=channel, plan_first=plan.plan_first)
    prompt = plan.task if not plan.waking else (plan.remark or plan.task)
    return Workflow([Step("work", spec, prompt, resume_prompt=RESUME_PROMPT)], name="single", channel=channel,
                    budget=plan.budget_usd)


def flow_factory(name: str) -> RunFactory:
    return {"starter": default_factory, "single": single_flow}[name]
