"""Tool policy in Claude Code's permission-rule syntax: which tool calls to ask about, allow or deny.

    rule      := Tool | Tool(specifier)
    "Bash"                  every Bash call            "Bash(git status:*)"  a command starting so
    "Bash(npm run build)"   exactly that command       "Bash(git * main)"    ``*`` is a wildcard
    "Edit" / "Edit(src/**)" every file edit / edits under src (Write, MultiEdit, NotebookEdit too)
    "Read(//etc/**)"        ``//`` an absolute path, ``~/`` the home, else relative to the workspace
    "WebFetch(domain:x.org)" fetches from that host    "mcp__srv" / "mcp__srv__*"  all tools of a server

``Policy.decide`` answers "deny" (never run), "allow" (never ask), "ask" or "" (no rule: the
runtime's own default). Deny wins over allow, allow over ask, so ``allow_tools`` carves exceptions
out of ``ask_tools``. A compound shell command (``a && b``, pipes, ``$(…)``) is asked or denied when
any part matches, but allowed by a specifier only when it has no parts: ``Bash(git status:*)`` must
not let ``git status; rm -rf x`` through. Pure: no I/O, no SDK.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

DECISIONS = ("deny", "allow", "ask")
EDIT_TOOLS = ("Edit", "Write", "MultiEdit", "NotebookEdit")
READ_TOOLS = ("Read", "Glob", "Grep")
# What each rule name covers: an Edit rule stands for every built-in tool that edits files.
_FAMILY = {"Edit": EDIT_TOOLS, "Read": READ_TOOLS}
_RULE = re.compile(r"^([A-Za-z][\w-]*(?:__\*)?)(?:\((.*)\))?$", re.DOTALL)
_SHELL_JOIN = re.compile(r"&&|\|\||[;|\n&]|\$\(|`")


@dataclass(frozen=True)
class Rule:
    """One parsed rule; ``spec`` is "" for the whole tool."""

    tool: str
    spec: str = ""

    @property
    def text(self) -> str:
        return f"{self.tool}({self.spec})" if self.spec else self.tool

    def covers(self, tool: str) -> bool:
        """True when this rule's name applies to ``tool`` (whatever the specifier)."""
        if tool in _FAMILY.get(self.tool, (self.tool,)):
            return True
        parts = self.tool.split("__")
        if parts[0] == "mcp" and len(parts) == 2:  # "mcp__server": every tool of that server
            return tool.startswith(self.tool + "__")
        return parts[0] == "mcp" and len(parts) == 3 and parts[2] == "*" and tool.startswith(
            "__".join(parts[:2]) + "__")

    def matches(self, tool: str, args: dict[str, Any], *, cwd: str = "", whole_only: bool = False) -> bool:
        """Does this rule match the call? ``whole_only``: a compound command matches specifiers never."""
        if not self.covers(tool):
            return False
        if self.spec in ("", "*"):
            return True
        if tool == "Bash":
            return not whole_only and _command_matches(self.spec, str(args.get("command", "")))
        if tool in EDIT_TOOLS or tool in READ_TOOLS:
            path = args.get("file_path") or args.get("notebook_path") or args.get("path") or ""
            return bool(path) and _path_matches(self.spec, str(path), cwd)
        if tool == "WebFetch" and self.spec.startswith("domain:"):
            host = urlparse(str(args.get("url", ""))).hostname or ""
            want = self.spec.removeprefix("domain:").lower()
            return host.lower() == want or host.lower().endswith("." + want)
        return False


def parse_rule(text: Any) -> Rule:
    """One rule from its text; ValueError with the reason when it is not a rule."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"a tool rule must be a non-empty string like 'Bash' or 'Bash(git status:*)', "
                         f"not {text!r}")
    m = _RULE.match(text.strip())
    if m is None:
        raise ValueError(f"not a tool rule: {text!r} (write Tool or Tool(specifier), e.g. 'Bash(npm test:*)')")
    spec = (m.group(2) or "").strip()
    if m.group(2) is not None and not spec:
        raise ValueError(f"empty specifier in {text!r}: write {m.group(1)!r} for the whole tool")
    return Rule(m.group(1), spec)


def parse_rules(items: Any, *, key: str = "rules") -> tuple[Rule, ...]:
    """A list of rule texts (a config key's value); ValueError naming ``key`` on a bad one."""
    if items is None:
        return ()
    if isinstance(items, str) or not isinstance(items, list | tuple):
        raise ValueError(f"{key} must be a list of tool rules, e.g. [\"Bash\", \"Edit\"], not {items!r}")
    try:
        return tuple(dict.fromkeys(parse_rule(i) for i in items))
    except ValueError as exc:
        raise ValueError(f"{key}: {exc}") from None


@dataclass(frozen=True)
class Policy:
    """What to do with tool calls. Empty = no approvals at all (``active`` is False)."""

    ask: tuple[Rule, ...] = ()
    allow: tuple[Rule, ...] = ()
    deny: tuple[Rule, ...] = ()
    granted: frozenset[str] = field(default_factory=frozenset)  # tools allowed "for this run"

    @classmethod
    def of(cls, ask: Any = None, allow: Any = None, deny: Any = None) -> Policy:
        """From rule texts (config values); ValueError naming the key on a bad rule."""
        return cls(parse_rules(ask, key="ask_tools"), parse_rules(allow, key="allow_tools"),
                   parse_rules(deny, key="deny_tools"))

    @property
    def active(self) -> bool:
        return bool(self.ask or self.deny)

    def merged(self, other: Policy) -> Policy:
        """This policy plus ``other``'s rules (a channel's adds to the bot's, a run's to the channel's)."""
        def join(a: tuple[Rule, ...], b: tuple[Rule, ...]) -> tuple[Rule, ...]:
            return tuple(dict.fromkeys(a + b))
        return Policy(join(self.ask, other.ask), join(self.allow, other.allow), join(self.deny, other.deny),
                      self.granted | other.granted)

    def granting(self, tool: str) -> Policy:
        return Policy(self.ask, self.allow, self.deny, self.granted | {tool})

    def names(self) -> set[str]:
        """Tool names (and families) that an ask or deny rule speaks about: those must reach the callback."""
        return {t for r in self.ask + self.deny for t in _FAMILY.get(r.tool, (r.tool,))}

    def decide(self, tool: str, args: dict[str, Any] | None = None, *, cwd: str = "") -> tuple[str, Rule | None]:
        """("deny" | "allow" | "ask" | "", the rule that decided it)."""
        args = args if isinstance(args, dict) else {}
        compound = tool == "Bash" and bool(_SHELL_JOIN.search(str(args.get("command", ""))))
        for rule in self.deny:
            if rule.matches(tool, args, cwd=cwd) or (compound and _any_part(rule, args, cwd)):
                return "deny", rule
        for rule in self.allow:
            if rule.matches(tool, args, cwd=cwd, whole_only=compound):
                return "allow", rule
        if tool in self.granted:
            return "allow", None
        for rule in self.ask:
            if rule.matches(tool, args, cwd=cwd) or (compound and _any_part(rule, args, cwd)):
                return "ask", rule
        return "", None


def _any_part(rule: Rule, args: dict[str, Any], cwd: str) -> bool:
    parts = [p.strip() for p in _SHELL_JOIN.split(str(args.get("command", ""))) if p.strip()]
    return any(rule.matches("Bash", {**args, "command": p.rstrip(")")}, cwd=cwd) for p in parts)


def _command_matches(spec: str, command: str) -> bool:
    command = " ".join(command.split())
    if spec.endswith(":*"):  # the legacy prefix form: "git status:*" = "git status" and anything after it
        prefix = " ".join(spec[:-2].split())
        return command == prefix or command.startswith(prefix + " ")
    if "*" in spec:
        return re.fullmatch(".*".join(re.escape(" ".join(p.split())) for p in spec.split("*")), command,
                            re.DOTALL) is not None
    return command == " ".join(spec.split())


def _path_matches(spec: str, path: str, cwd: str) -> bool:
    if spec.startswith("//"):
        pattern = spec[1:]
    elif spec.startswith("~/"):
        pattern = os.path.expanduser(spec)
    else:
        pattern = os.path.join(cwd or os.getcwd(), spec.lstrip("/").removeprefix("./"))
    target = os.path.normpath(os.path.join(cwd or os.getcwd(), os.path.expanduser(path)))
    pattern = os.path.normpath(pattern)
    if pattern.endswith("/**") and target == pattern[:-3]:
        return True
    return re.fullmatch(_glob_regex(pattern), target, re.DOTALL) is not None


def _glob_regex(pattern: str) -> str:
    """``**`` any depth, ``*`` and ``?`` inside one path segment, the rest literal."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] in "*?":
            out.append("[^/]*" if pattern[i] == "*" else "[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "".join(out)
