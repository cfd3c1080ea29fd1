"""The original flower's role factories, with its signatures: coordinator, worker, clarify, judge, oracle.

    coordinator(name, instructions, workers)  main thread: splits, delegates, decides; never works
    worker(description, prompt)               the subagent definition that does the work
    clarify(name, channel)                    asks until clear, replies with the four-section brief
    judge(name, channel, can_run=False)       sets the goal, or rules on a round (three outcomes)
    oracle(name="旁路问答")                    a read-only side question, braked (12 turns, $0.5)

Each role is rule text + a tool list + its wall. ``allowed_tools`` only spares approval, so the
wall is a hook attached here: ``whitelist_guard`` for the read-only roles, ``delegate_guard`` for
the coordinator (subagents pass both). ``flower_core.roles`` keeps the starter's own roles (a
clarifier that writes the brief file itself); these are the documented, reply-based ones.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flower_core.guards import delegate_guard, isolated, merge_hooks, whitelist_guard
from flower_core.roles import COORDINATOR_RULES, ORACLE_RULES, WORKER_RULES
from flower_core.spec import AgentSpec

if TYPE_CHECKING:
    from claude_agent_sdk import AgentDefinition

__all__ = ["CLARIFIER_RULES", "COORDINATOR_RULES", "JUDGE_RULES", "ORACLE_RULES", "WORKER_RULES", "clarify",
           "coordinator", "judge", "oracle", "worker"]

COORDINATOR_TOOLS = ["Agent", "TodoWrite", "Read"]
WEB_TOOLS = ["WebFetch", "WebSearch"]
WORKER_TOOLS = ["Read", "Write", "Edit", "Bash", "Glob", "Grep", *WEB_TOOLS]
READ_TOOLS = ["Read", "Glob", "Grep"]

CLARIFIER_RULES = """You pin the request down before anyone works on it; you do nothing else: no code, no edits.
- Ask the human with mcp__human__ask, one decision at a time, with a few short options when the choices are \
obvious. There is no limit on questions: keep asking until the goal, the acceptance criteria and the boundaries \
are clear. You may read the workspace first: one look can spare a question.
- The human may be away. When a question goes unanswered, decide yourself and write the question and your \
assumption under 未知与假设.
- End your reply with exactly these four sections and nothing after them (do not paste file contents):
## 目标
## 验收标准
## 边界
## 未知与假设"""

JUDGE_RULES = """You are the judge: independent of the work, owing it nothing. You have one of two jobs.
Setting the goal: look at the environment first, then reply with two sections, "## 目标" (one paragraph) and \
"## 判定清单" (one check per line, each verifiable on the spot). The number of checks follows the ways the task can \
fail; a boundary is not a check. A check that cannot be verified here ends with "[此环境无法验证:<why>]".
Judging a round: check the artifacts yourself, not the source's intent and never the worker's word. Reply with \
exactly three sections: "## 结论" (one of 达成 / 未达成 / 无法达成), "## 理由", "## 未通过" (one unmet check per \
line). "Not done" and "cannot be verified here" are different conclusions: the second is 无法达成, never a pass."""


def _join(rules: str, instructions: str) -> str:
    return f"{rules}\n{instructions}".strip()


def coordinator(name: str, instructions: str, workers: dict[str, AgentDefinition], *, channel: Any = None,
                can_read: bool = True, glance: bool = True, model: str | None = None, effort: str | None = None,
                max_turns: int | None = None, max_budget_usd: float | None = None,
                permission_mode: str = "acceptEdits", compact: Any = None, hooks: dict[str, Any] | None = None,
                env: dict[str, str] | None = None) -> AgentSpec:
    """The main-thread coordinator: delegates through ``Agent``; ``glance`` lets it run read-only Bash itself.

    Read-only web tools of its workers are approval-free here too: approvals are session-wide, and a
    subagent's unapproved call would otherwise be refused with nobody there to approve it.
    """
    tools = [t for t in COORDINATOR_TOOLS if can_read or t != "Read"]
    if glance:
        tools.append("Bash")
    for definition in workers.values():
        tools += [t for t in (getattr(definition, "tools", None) or []) if t in WEB_TOOLS and t not in tools]
    wall = {"PreToolUse": [delegate_guard(allow_glance=glance)]}
    return AgentSpec(name=name, instructions=_join(COORDINATOR_RULES, instructions), allowed_tools=tools,
                     channel=channel, agents=dict(workers), model=model, effort=effort, max_turns=max_turns,
                     max_budget_usd=max_budget_usd, permission_mode=permission_mode, compact=compact,
                     hooks=merge_hooks(wall, hooks), env=dict(env or {}), glance=glance, workbench=True,
                     delegate_only=True)


def worker(description: str, prompt: str, *, tools: list[str] | None = None, model: str = "inherit",
           effort: str | int | None = None, max_turns: int | None = None, permission_mode: str | None = None,
           skills: list[str] | None = None, discipline: bool = True, isolate: bool = False) -> AgentDefinition:
    """A worker subagent definition; ``discipline`` appends the reporting rules, ``isolate`` marks a worktree."""
    from claude_agent_sdk import AgentDefinition  # the SDK is loaded once a role is built, not on import

    body = f"{prompt}\n\n{WORKER_RULES}" if discipline else prompt
    definition = AgentDefinition(description=description, prompt=body, tools=list(tools or WORKER_TOOLS),
                                 model=model, effort=effort,  # type: ignore[arg-type]
                                 maxTurns=max_turns, permissionMode=permission_mode,  # type: ignore[arg-type]
                                 skills=skills)
    return isolated(definition) if isolate else definition


def _read_only(name: str, rules: str, tools: list[str], *, channel: Any, instructions: str, model: str | None,
               effort: str | None, max_turns: int | None, max_budget_usd: float | None,
               workbench: bool = False) -> AgentSpec:
    allowed = ([channel.tool_name] if channel is not None else []) + tools
    guard = whitelist_guard(allowed, role=name)
    return AgentSpec(name=name, instructions=_join(rules, instructions), allowed_tools=allowed, channel=channel,
                     model=model, effort=effort, max_turns=max_turns, max_budget_usd=max_budget_usd,
                     permission_mode="default", hooks={"PreToolUse": [guard]} if guard else None,
                     workbench=workbench)


def clarify(name: str, channel: Any, *, instructions: str = "", can_read: bool = True, model: str | None = None,
            effort: str | None = None, max_turns: int | None = None,
            max_budget_usd: float | None = None) -> AgentSpec:
    """The clarifier: the channel's ask tool (+ read and web tools); no write tools, no turn limit by default."""
    return _read_only(name, CLARIFIER_RULES, READ_TOOLS + WEB_TOOLS if can_read else [], channel=channel,
                      instructions=instructions, model=model, effort=effort, max_turns=max_turns,
                      max_budget_usd=max_budget_usd)


def judge(name: str, channel: Any, *, instructions: str = "", can_run: bool = False, model: str | None = None,
          effort: str | None = None, max_turns: int | None = None,
          max_budget_usd: float | None = None) -> AgentSpec:
    """The judge: ask + Read/Glob/Grep, and Bash with ``can_run`` (Write/Edit stay walled off)."""
    return _read_only(name, JUDGE_RULES, READ_TOOLS + (["Bash"] if can_run else []), channel=channel,
                      instructions=instructions, model=model, effort=effort, max_turns=max_turns,
                      max_budget_usd=max_budget_usd)


def oracle(name: str = "旁路问答", *, instructions: str = "", model: str | None = None, effort: str | None = None,
           max_turns: int | None = 12, max_budget_usd: float | None = 0.5) -> AgentSpec:
    """The oracle: Read/Glob/Grep only, no channel (it answers, it does not ask), braked by default."""
    return _read_only(name, ORACLE_RULES, list(READ_TOOLS), channel=None, instructions=instructions, model=model,
                      effort=effort, max_turns=max_turns, max_budget_usd=max_budget_usd, workbench=True)
