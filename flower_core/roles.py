"""Role factories: each role is a block of rules, a tool set and a permission mode on an AgentSpec.

- clarifier: asks the human, writes the four-section brief, does no work;
- goal setter: turns the brief into a goal and a checklist that can be verified on the spot;
- coordinator: splits the work and delegates to worker subagents (``Agent`` tool), reads reports;
- worker: the subagent definition that does the hands-on work;
- judge: reads the goal and the scene and gives a verdict; read-only tools;
- oracle: answers a side question about a run in progress; read-only, braked.

``tools`` (what exists) is session-wide, subagents included, so only roles without subagents
restrict it; ``allowed_tools`` only spares approval. Read-only roles run with
``permission_mode="default"``, which refuses (headless) anything not approved.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from flower_core.lang import Catalogue, catalogue
from flower_core.spec import AgentSpec

if TYPE_CHECKING:
    from claude_agent_sdk import AgentDefinition

READ_TOOLS = ["Read", "Glob", "Grep"]
COORDINATOR_TOOLS = ["Agent", "TodoWrite", "Read", "Glob", "Grep", "Bash"]
WORKER_TOOLS = ["Read", "Write", "Edit", "Bash", "Glob", "Grep", "WebFetch", "WebSearch"]
WORKER_PROMPT = "You do the hands-on work. Verify each change right after you make it; do not save checks for the end."

# The two rules that name the brief's and the goal's sections are in each language's catalogue
# (flower_core/lang/); these names are the seed's, what a role built without ``language`` reads.
CLARIFIER_RULES = catalogue()["role.clarifier"]
GOAL_RULES = catalogue()["role.goal_setter"]

COORDINATOR_RULES = """You coordinate; workers do the work. Split the task, delegate each piece with the Agent tool \
(run_in_background=false), read the reports, decide what comes next.
- Do not write files, change code or run tests yourself; a quick look (Read, `ls`, `git status`) is fine.
- A worker starts with a clean context: its task brief must say everything specific to the piece, which files \
to read (the brief and the goal in the workbench notes), where long output goes (workbench artifacts), and that \
it should reply with conclusions and paths only.
- Check mcp__human__inbox after each milestone: the human may have added something. mcp__human__ask blocks \
until a human answers; use it only at a real fork in the road.
- When the goal's checklist is met, end with a short report: what was done, where it is, what is unverified."""

WORKER_RULES = """Report in at most 30 lines, four parts: conclusion / evidence (commands run, what they showed) / \
outputs (paths) / not verified. Do not paste file contents, logs or raw diffs; put long output in a file and give \
its path. Do not recount your trial and error."""

JUDGE_RULES = """You judge one round of work against its goal. You did none of the work and owe it nothing.
- Go through the checklist item by item and look at the scene yourself (Read/Glob/Grep). Judge the artifacts, \
not the source's intent, and never the worker's word: an item with no evidence you can see is not met.
- Answer with a first line "VERDICT: PASS" or "VERDICT: FAIL", then the reasons, one "- " line per item that is \
not met (or one line saying what you checked, when everything passes)."""

ORACLE_RULES = """You answer a side question about a run that is still going. You neither interrupt nor join it, \
and nothing you say reaches it.
- All you have is the recent events quoted in the question and the workbench (brief, goal, notes, artifacts): \
look before answering (Read/Glob/Grep), say so when you cannot tell, and be brief."""


def _join(*parts: str) -> str:
    return "\n\n".join(p.strip() for p in parts if p and p.strip())


def clarifier(channel: Any, *, brief_path: str | Path, instructions: str = "", name: str = "clarify",
              model: str | None = None, max_turns: int | None = None,
              max_budget_usd: float | None = None, language: str | Catalogue | None = None) -> AgentSpec:
    """The clarifier: mcp__human__ask + read tools + Write (for the brief only); rules in ``language``."""
    tools = [*READ_TOOLS, "Write"]
    rules = catalogue(language)["role.clarifier"]
    return AgentSpec(name=name, system_prompt=_join(rules, f"The brief file: {brief_path}", instructions),
                     tools=tools, allowed_tools=tools, permission_mode="default", channel=channel, model=model,
                     max_turns=max_turns, max_budget_usd=max_budget_usd)


def goal_setter(channel: Any, *, goal_path: str | Path, instructions: str = "", name: str = "goal",
                model: str | None = None, max_turns: int | None = None,
                max_budget_usd: float | None = None, language: str | Catalogue | None = None) -> AgentSpec:
    """The goal setter: read tools + Write (for the goal only); may ask the human; rules in ``language``."""
    tools = [*READ_TOOLS, "Write"]
    rules = catalogue(language)["role.goal_setter"]
    return AgentSpec(name=name, system_prompt=_join(rules, f"The goal file: {goal_path}", instructions),
                     tools=tools, allowed_tools=tools, permission_mode="default", channel=channel, model=model,
                     max_turns=max_turns, max_budget_usd=max_budget_usd)


def worker(description: str, prompt: str = WORKER_PROMPT, *, tools: list[str] | None = None,
           channel: Any = None, model: str = "inherit", max_turns: int | None = None,
           discipline: bool = True) -> AgentDefinition:
    """A worker subagent definition; with a channel it may also read the human's inbox."""
    from claude_agent_sdk import AgentDefinition  # the SDK is only needed once roles are built

    names = list(tools if tools is not None else WORKER_TOOLS)
    if channel is not None and "mcp__human__inbox" not in names:
        names.append("mcp__human__inbox")
    body = _join(prompt, WORKER_RULES) if discipline else prompt
    return AgentDefinition(description=description, prompt=body, tools=names, model=model, maxTurns=max_turns)


def coordinator(workers: dict[str, AgentDefinition], *, channel: Any = None, instructions: str = "",
                name: str = "work", workbench: Any = None, model: str | None = None,
                max_turns: int | None = None, max_budget_usd: float | None = None) -> AgentSpec:
    """The coordinator: delegates through ``Agent``; ``acceptEdits`` lets its workers write in the workspace.

    Bash is approval-free because approvals are session-wide: without it workers could not run commands.
    """
    desk = workbench.prompt_block() if workbench is not None and hasattr(workbench, "prompt_block") else ""
    return AgentSpec(name=name, system_prompt=_join(COORDINATOR_RULES, desk, instructions),
                     allowed_tools=list(COORDINATOR_TOOLS), permission_mode="acceptEdits", channel=channel,
                     agents=dict(workers), model=model, max_turns=max_turns, max_budget_usd=max_budget_usd)


def judge(*, instructions: str = "", name: str = "judge", model: str | None = None,
          max_turns: int | None = None, max_budget_usd: float | None = None) -> AgentSpec:
    """The judge: Read/Glob/Grep only, nothing else exists for it."""
    return AgentSpec(name=name, system_prompt=_join(JUDGE_RULES, instructions), tools=list(READ_TOOLS),
                     allowed_tools=list(READ_TOOLS), permission_mode="default", model=model, max_turns=max_turns,
                     max_budget_usd=max_budget_usd)


def oracle(*, instructions: str = "", name: str = "oracle", model: str | None = None, max_turns: int | None = 12,
           max_budget_usd: float | None = 0.5) -> AgentSpec:
    """The oracle: Read/Glob/Grep only, braked by default (12 turns, $0.5)."""
    return AgentSpec(name=name, system_prompt=_join(ORACLE_RULES, instructions), tools=list(READ_TOOLS),
                     allowed_tools=list(READ_TOOLS), permission_mode="default", model=model, max_turns=max_turns,
                     max_budget_usd=max_budget_usd)
