"""The original flower's hook layer: SDK hooks that hold a role to its tools, spill and isolate.

    PreToolUse  ── whitelist_guard  main thread, a hands-on tool not in allowed_tools → deny
                ── delegate_guard   main thread doing the work itself → deny, "dispatch a worker"
                                    (allow_glance: a Bash command that is_ephemeral() passes)
                ── isolate_guard    Agent call for a role marked isolated() → isolation="worktree"
    PostToolUse ── index_guard      a write inside the workbench → workbench.refresh()
                ── spill_guard      an oversized string in a tool result → a file + a pointer line

A prompt is a suggestion; a hook is a wall. Each guard is a factory returning the SDK's
``HookMatcher``; ``workbench_hooks`` assembles the workbench's set and ``merge_hooks`` concatenates
tables by event. "Main thread" is a hook input without ``agent_id`` (a subagent's carries one).
``is_ephemeral`` decides both what a coordinator may glance at and which results go stale, so the
two sets can never drift apart.
"""

from __future__ import annotations

import hashlib
import re
import shlex
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from claude_agent_sdk import AgentDefinition, HookContext, HookMatcher

    from flower_core.workbench import Workbench

HANDS_ON = "Bash|Write|Edit|NotebookEdit"
WRITE_ONLY = "Write|Edit|NotebookEdit"
BULKY = "Bash|Read|Grep|Glob|WebFetch|WebSearch"
SPILL_HEAD = 400
_MARK = "_flower_isolate"
_SPILL_MARK = "_flower_spill"

# Read-only verbs a coordinator may run itself; each segment of a compound command must be one.
_GIT_READ = {"status", "diff", "log", "show", "branch", "rev-parse", "remote", "describe", "tag", "ls-files",
             "blame", "shortlog", "config", "stash"}
_VERBS = {"ls", "pwd", "df", "du", "date", "whoami", "env", "printenv", "uname", "hostname", "id", "uptime", "free",
          "ps", "top", "lsof", "cat", "head", "tail", "wc", "stat", "file", "find", "tree", "which", "whereis", "type",
          "grep", "rg", "egrep", "fgrep", "sort", "uniq", "awk", "sed", "jq", "diff", "cut", "tr", "column", "echo",
          "basename", "dirname", "realpath", "readlink", "nproc"}
_TWO_WORD = {("docker", "ps"), ("docker", "images"), ("kubectl", "get"), ("kubectl", "describe"), ("command", "-v")}
_BLOCKED_WORDS = {"xargs", "exec", "eval", "source", ".", "tee"}
_SAFE_REDIRECT = re.compile(r"\s*(?:[12]?>&[12]|&>\s*/dev/null|[12]?>\s*/dev/null)")
_SEPARATORS = re.compile(r"&&|\|\||;|\|")


# A hook's input as the guards read it: the SDK's HookInput (a TypedDict per hook event), read by key.
HookData = Mapping[str, Any]


def _is_main_thread(data: HookData | None) -> bool:
    return not (data or {}).get("agent_id")


def _deny(reason: str) -> dict[str, Any]:
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                   "permissionDecisionReason": reason}}


def is_ephemeral(cmd: str) -> bool:
    """True for a read-only "glance" command whose result soon goes stale (``git status``, ``ls``…)."""
    if not cmd or not cmd.strip():
        return False
    if any(token in cmd for token in ("$(", "`", "<(", ">(")):
        return False
    bare = _SAFE_REDIRECT.sub(" ", cmd)
    if ">" in bare or "<" in bare:
        return False
    if "&" in _SEPARATORS.sub(" ", bare):
        return False  # a lone & runs something in the background
    return all(_segment_ok(part) for part in _SEPARATORS.split(bare))


def _segment_ok(segment: str) -> bool:
    try:
        words = shlex.split(segment)
    except ValueError:
        return False
    if not words or words[0] in _BLOCKED_WORDS:  # each pipe/list segment brings its own verb
        return False
    verb, args = words[0], words[1:]
    if verb == "git":
        if not args or args[0] not in _GIT_READ:
            return False
        if any(a in ("--force", "--hard", "--prune", "-f") or a.startswith("--force") for a in args):
            return False
        return not (args[0] == "branch" and any(a in ("-D", "-d", "-m", "-M", "--delete", "--move") for a in args))
    if len(words) > 1 and (verb, args[0]) in _TWO_WORD:
        return True
    if verb not in _VERBS:
        return False
    if verb == "find" and any(a in ("-delete", "-ok", "-okdir", "-exec", "-execdir", "-fprint", "-fprintf", "-fls")
                              for a in args):
        return False
    if verb == "sed" and any(a == "-i" or a.startswith("-i") or a == "--in-place" for a in args):
        return False
    if verb == "sort" and any(a == "-o" or a.startswith("--output") for a in args):
        return False
    return not (verb == "awk" and any("system(" in a or re.search(r"print[^|]*>", a) for a in args))


def whitelist_guard(allowed: list[str] | None, *, role: str = "这个角色") -> HookMatcher | None:
    """Make ``allowed`` exclusive for the four hands-on tools, on the main thread; None if nothing to ban."""
    from claude_agent_sdk import HookMatcher

    banned = [t for t in HANDS_ON.split("|") if t not in (allowed or [])]
    if not banned:
        return None

    async def hook(data: HookData, tool_use_id: str | None, context: HookContext) -> Any:
        if not _is_main_thread(data):
            return {}
        tool = data.get("tool_name", "")
        return _deny(f"{role} has no {tool}. This is intentional, not a missing setting: write your conclusion in "
                     "the body of your reply, the framework picks it up there. Do not try another way around it.")

    return HookMatcher(matcher="|".join(banned), hooks=[hook])


def delegate_guard(*, tools: str = HANDS_ON, allow_glance: bool = False) -> HookMatcher:
    """The main thread doing hands-on work is refused and told to dispatch a worker instead."""
    from claude_agent_sdk import HookMatcher

    async def hook(data: HookData, tool_use_id: str | None, context: HookContext) -> Any:
        if not _is_main_thread(data):
            return {}
        tool = data.get("tool_name", "")
        if allow_glance and tool == "Bash" and is_ephemeral(str((data.get("tool_input") or {}).get("command", ""))):
            return {}
        return _deny(f"You coordinate; you do not use {tool} yourself. Dispatch a worker with the Agent tool: state "
                     "the goal and the acceptance criteria in its task, have it write long output to the workbench's "
                     "artifacts/ and reply with only the path and its conclusion.")

    return HookMatcher(matcher=tools, hooks=[hook])


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
    except ValueError:
        return False
    return True


def index_guard(workbench: Workbench) -> HookMatcher:
    """A Write/Edit that lands in the workbench refreshes its INDEX.md; changes nothing else."""
    from claude_agent_sdk import HookMatcher

    async def hook(data: HookData, tool_use_id: str | None, context: HookContext) -> Any:
        target = str((data.get("tool_input") or {}).get("file_path", ""))
        if target and _inside(Path(target), workbench.root):
            workbench.refresh()
        return {}

    return HookMatcher(matcher="Write|Edit", hooks=[hook])


def spill_guard(workbench: Workbench, *, threshold: int = 4000, tools: str = BULKY,
                main_only: bool = False) -> HookMatcher:
    """String fields of a tool result at or over ``threshold`` chars go to ``<root>/spill/``; a pointer stays."""
    from claude_agent_sdk import HookMatcher

    spill_dir = workbench.root / "spill"

    def spill(text: str) -> str:
        spill_dir.mkdir(parents=True, exist_ok=True)
        path = spill_dir / (hashlib.sha256(text.encode("utf-8")).hexdigest()[:16] + ".txt")
        path.write_text(text, encoding="utf-8")
        return (f"[{len(text)} characters spilled to {workbench.show(path)}; read it with Read if you need more]\n"
                f"{text[:SPILL_HEAD]}")

    def trimmed(value: object) -> tuple[Any, bool]:
        if isinstance(value, str):
            return (spill(value), True) if len(value) >= threshold else (value, False)
        if isinstance(value, dict):
            out, changed = {}, False
            for key, item in value.items():
                out[key], hit = trimmed(item) if not isinstance(item, list) else (item, False)
                changed = changed or hit
            return out, changed
        return value, False  # lists may hold image blocks: never touched

    async def hook(data: HookData, tool_use_id: str | None, context: HookContext) -> Any:
        if main_only and not _is_main_thread(data):
            return {}
        path = str((data.get("tool_input") or {}).get("file_path", ""))
        if path and _inside(Path(path), spill_dir):
            return {}  # reading a spill file back must not spill it again
        new, changed = trimmed(data.get("tool_response"))
        if not changed:
            return {}
        return {"hookSpecificOutput": {"hookEventName": "PostToolUse", "updatedToolOutput": new}}

    setattr(hook, _SPILL_MARK, True)  # so the runtime does not add a second one (is_spill_guard)
    return HookMatcher(matcher=tools, hooks=[hook])


def is_spill_guard(matcher: object) -> bool:
    """Is this hook matcher one ``spill_guard`` made?"""
    return any(getattr(h, _SPILL_MARK, False) for h in getattr(matcher, "hooks", None) or [])


def isolated(agent: AgentDefinition, flag: bool = True) -> AgentDefinition:
    """Mark (or unmark) a worker as needing a worktree of its own; returns the same object.

    The mark is a plain attribute, not a dataclass field, so the SDK never serialises it to the CLI
    (and ``dataclasses.replace`` drops it).
    """
    object.__setattr__(agent, _MARK, bool(flag))
    return agent


def wants_isolation(agent: AgentDefinition | None) -> bool:
    return bool(getattr(agent, _MARK, False)) if agent is not None else False


def isolate_guard(agents: dict[str, AgentDefinition], *,
                  on_inject: Callable[..., object] | None = None) -> HookMatcher:
    """An Agent call for an isolated() role, with neither cwd nor isolation given, gets isolation=worktree;
    ``on_inject(subagent_type, description)`` is told when it does."""
    from claude_agent_sdk import HookMatcher

    async def hook(data: HookData, tool_use_id: str | None, context: HookContext) -> Any:
        if data.get("tool_name") != "Agent":
            return {}
        tool_input = dict(data.get("tool_input") or {})
        kind = tool_input.get("subagent_type")
        if tool_input.get("cwd") or tool_input.get("isolation") or not wants_isolation(agents.get(str(kind))):
            return {}
        tool_input["isolation"] = "worktree"
        if on_inject is not None:
            on_inject(kind, tool_input.get("description", ""))
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow",
                                       "updatedInput": tool_input}}

    return HookMatcher(matcher="Agent", hooks=[hook])


def workbench_hooks(workbench: Workbench, *, delegate_only: bool = True, spill_threshold: int | None = 4000,
                    agents: dict[str, AgentDefinition] | None = None,
                    allow_glance: bool = False) -> dict[str, list[HookMatcher]]:
    """The hooks a workbench needs, by event; events with nothing to install are left out."""
    pre: list[HookMatcher] = []
    if delegate_only:
        pre.append(delegate_guard(allow_glance=allow_glance))
    if agents and any(wants_isolation(a) for a in agents.values()):
        pre.append(isolate_guard(agents))
    post = [index_guard(workbench)]
    if spill_threshold:
        post.append(spill_guard(workbench, threshold=spill_threshold))
    return {event: matchers for event, matchers in (("PreToolUse", pre), ("PostToolUse", post)) if matchers}


def merge_hooks(*groups: dict[str, list[Any]] | None) -> dict[str, list[Any]]:
    """Concatenate hook tables by event name (no de-duplication); None groups are skipped."""
    out: dict[str, list[Any]] = {}
    for group in groups:
        for event, matchers in (group or {}).items():
            out.setdefault(event, []).extend(matchers)
    return out
