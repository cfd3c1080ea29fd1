"""AgentSpec: the declaration of one agent, and build_options() that compiles it for the SDK.

Permission facts (measured on this machine with the bundled CLI, headless, no can_use_tool):
- ``"default"`` refuses Write and any Bash that touches files unless the tool is in ``allowed_tools``.
- ``"acceptEdits"`` approves Write/Edit (and plain file-system shell commands) inside ``cwd`` and
  ``add_dirs``; other Bash commands still need ``"Bash"`` in ``allowed_tools``.
- ``"bypassPermissions"`` makes the CLI exit with an error when run as root unless ``IS_SANDBOX=1``
  is in its environment (``IS_SANDBOX=yes`` is not enough).
The defaults are the original flower's: ``"default"`` with Read/Glob/Grep approved, a read-only
agent. A role that works in the workspace says so itself: ``"acceptEdits"`` plus ``Bash`` in
``allowed_tools`` runs Read/Write/Edit/Bash unattended, as root or not, with no sandbox flag
(the coordinator and the bot's own specs in ``bots/flows.py`` do this).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from claude_agent_sdk import AgentDefinition, ClaudeAgentOptions, SessionStore

COMPACT_MODES = (None, "auto", "off")
POLICY_MODES = ("auto", "no_summary", "off")
DEFAULT_ALLOWED_TOOLS = ("Read", "Glob", "Grep")

# Environment the CLI needs from the host: credentials, endpoint, model names, retries, proxies.
_ENV_PREFIXES = ("ANTHROPIC_", "CLAUDE_CODE_", "AWS_", "GOOGLE_", "CLOUD_ML_", "VERTEX_")
_ENV_NAMES = frozenset({
    "CLAUDE_CONFIG_DIR", "API_TIMEOUT_MS", "MAX_THINKING_TOKENS", "IS_SANDBOX", "DISABLE_AUTO_COMPACT",
    "DISABLE_COMPACT", "DISABLE_TELEMETRY", "DISABLE_ERROR_REPORTING", "DISABLE_AUTOUPDATER",
    "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
})
_CREDENTIAL_KEYS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN")
_PROVIDER_SWITCHES = ("CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "CLAUDE_CODE_USE_FOUNDRY")


class ChannelLike(Protocol):
    """What build_options needs from a HumanChannel: its tool names and its MCP server table."""

    @property
    def TOOLS(self) -> tuple[str, ...]: ...  # read-only here so a class-level tuple constant satisfies it

    def mcp_servers(self) -> dict[str, Any]: ...


@dataclass
class CompactPolicy:
    """The original flower's auto-compaction switch, as environment variables for the CLI.

    ``mode``: "auto" sets nothing (the CLI compacts near the window), "no_summary" sets
    ``DISABLE_AUTO_COMPACT=1``, "off" sets ``DISABLE_COMPACT=1`` (manual ``/compact`` too). Any other
    mode raises ValueError from ``env()``. ``window`` becomes ``CLAUDE_CODE_AUTO_COMPACT_WINDOW``.
    """

    mode: str = "auto"
    window: int | None = None

    def env(self) -> dict[str, str]:
        if self.mode not in POLICY_MODES:
            raise ValueError(f"CompactPolicy.mode must be one of {POLICY_MODES}, got {self.mode!r}")
        out = {"no_summary": {"DISABLE_AUTO_COMPACT": "1"}, "off": {"DISABLE_COMPACT": "1"}}.get(self.mode, {})
        if self.window is not None:
            out["CLAUDE_CODE_AUTO_COMPACT_WINDOW"] = str(int(self.window))
        return dict(out)


@dataclass
class AgentSpec:
    """Everything that defines one agent; the Runtime and build_options() turn it into SDK options.

    ``system_prompt`` is appended to Claude Code's own system prompt (the ``claude_code`` preset), so
    the agent keeps the CLI's tool-use instructions; set ``replace_system_prompt=True`` to send it
    alone instead. ``allowed_tools`` is an approval-free list, not a whitelist: restrict what exists
    with ``tools`` (None = the CLI's default set). ``disallowed_tools`` applies to the whole session,
    subagents included. ``compact``: None leaves the CLI default, "auto" keeps auto-compaction,
    "off" sets ``DISABLE_AUTO_COMPACT=1`` (manual ``/compact`` still works); a ``CompactPolicy`` is
    the original flower's form and brings its own variables.

    The original flower's spelling is accepted too: ``instructions`` is ``system_prompt`` (one text
    under two names; ``system_prompt`` wins when both are given), and ``glance`` / ``workbench`` /
    ``delegate_only`` are carried for its role factories (the walls themselves are the hooks those
    factories attach, see ``flower_core.guards``).
    """

    name: str = "agent"
    system_prompt: str = ""
    replace_system_prompt: bool = False
    tools: list[str] | None = None
    allowed_tools: list[str] = field(default_factory=lambda: list(DEFAULT_ALLOWED_TOOLS))
    disallowed_tools: list[str] = field(default_factory=list)
    model: str | None = None
    effort: str | None = None
    permission_mode: str = "default"
    max_turns: int | None = None
    max_budget_usd: float | None = None
    mcp_servers: dict[str, Any] = field(default_factory=dict)
    channel: ChannelLike | None = None
    agents: dict[str, AgentDefinition] | None = None
    hooks: dict[str, Any] | None = None
    env: dict[str, str] = field(default_factory=dict)
    compact: str | CompactPolicy | None = None
    compact_window: int | None = None
    setting_sources: list[str] = field(default_factory=list)
    add_dirs: list[str] = field(default_factory=list)
    # Any other ClaudeAgentOptions field, applied last (an escape hatch, e.g. {"thinking": ...}).
    extra: dict[str, Any] = field(default_factory=dict)
    instructions: str = ""
    glance: bool = False
    workbench: bool = True
    delegate_only: bool = False
    # Plan first: while the channel's plan review (human/plan_review.py) is planning, this step runs in the
    # CLI's plan mode and changes nothing until a person approves its plan.
    plan_first: bool = False

    def __post_init__(self) -> None:
        # The two names hold one text. When both are set and differ (dataclasses.replace changing one
        # copies the other's old value), system_prompt wins: it is the field the runtime rewrites.
        self.system_prompt = self.system_prompt or self.instructions
        self.instructions = self.system_prompt
        if not isinstance(self.compact, CompactPolicy) and self.compact not in COMPACT_MODES:
            raise ValueError(f"AgentSpec.compact must be one of {COMPACT_MODES}, got {self.compact!r}")

    def compact_env(self) -> dict[str, str]:
        """The environment variables that carry the compaction policy to the CLI."""
        out: dict[str, str] = {}
        if isinstance(self.compact, CompactPolicy):
            out.update(self.compact.env())
        elif self.compact == "off":
            out["DISABLE_AUTO_COMPACT"] = "1"
        if self.compact_window is not None:
            out["CLAUDE_CODE_AUTO_COMPACT_WINDOW"] = str(int(self.compact_window))
        return out

    def all_allowed_tools(self) -> list[str]:
        """allowed_tools plus the channel's tools, without duplicates, order kept."""
        names = list(self.allowed_tools) + (list(self.channel.TOOLS) if self.channel is not None else [])
        return list(dict.fromkeys(names))

    def all_mcp_servers(self) -> dict[str, Any]:
        servers = dict(self.mcp_servers)
        if self.channel is not None:
            servers.update(self.channel.mcp_servers())
        return servers


def _wanted(name: str) -> bool:
    return name in _ENV_NAMES or name.startswith(_ENV_PREFIXES)


def resolve_env(explicit: Mapping[str, str] | None = None, *,
                environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The CLI-relevant host environment (credentials, endpoint, config dir, …) overlaid by ``explicit``.

    ``explicit`` wins; a value of ``""`` there blanks the host's value for the subprocess.
    """
    source = os.environ if environ is None else environ
    env = {k: v for k, v in source.items() if _wanted(k)}
    if explicit:
        env.update({k: str(v) for k, v in explicit.items()})
    return env


def ask_tool_timeout_ms(timeout_s: float | None) -> int:
    """The CLI's per-call MCP timeout must outlast the human's answer window, or it cuts a pending ask.

    None (wait forever) gets a week; a finite window gets five spare minutes for the tool's own work.
    """
    if timeout_s is None:
        return 7 * 24 * 3600 * 1000
    return int((max(timeout_s, 0.0) + 300.0) * 1000)


def has_credentials(env: Mapping[str, str]) -> bool:
    """True when ``env`` gives the CLI a way to authenticate (key, token, cloud provider, or a login file)."""
    if any(env.get(k) for k in _CREDENTIAL_KEYS):
        return True
    if any(env.get(k, "").lower() in ("1", "true") for k in _PROVIDER_SWITCHES):
        return True
    # A `claude login` leaves its token in the config dir, which defaults to ~/.claude.
    config_dir = env.get("CLAUDE_CONFIG_DIR") or str(Path(env.get("HOME") or Path.home()) / ".claude")
    return (Path(config_dir) / ".credentials.json").is_file()


def _sandbox_ok(env: Mapping[str, str]) -> bool:
    # The SDK merges env over os.environ, so the subprocess sees os.environ's value unless overridden.
    value = env.get("IS_SANDBOX", os.environ.get("IS_SANDBOX", ""))
    return value == "1"


def build_options(
    spec: AgentSpec,
    *,
    cwd: str | Path | None,
    env: Mapping[str, str] | None = None,
    resume: str | None = None,
    fork: bool = False,
    resume_at: str | None = None,
    session_store: SessionStore | None = None,
    flush: str = "eager",
    include_partial: bool = False,
    prelude: str = "",
    hooks: dict[str, Any] | None = None,
    stderr: Callable[[str], None] | None = None,
) -> ClaudeAgentOptions:
    """Compile ``spec`` into ``ClaudeAgentOptions``.

    Environment, lowest to highest: ``resolve_env(env)`` (host CLI variables overlaid by ``env``),
    then ``spec.env``, then the compaction policy. ``fork`` and ``resume_at`` only mean something
    with ``resume``: without it they are deliberately ignored (a fresh session is already a fork of
    nothing), never an error. ``prelude`` is appended after the system prompt (e.g. a workbench
    index). ``hooks`` are merged with ``spec.hooks`` (lists per event are concatenated).
    ``flush`` is the store's ``session_store_flush``; "eager" so a crash loses as little as possible.
    """
    from claude_agent_sdk import ClaudeAgentOptions

    merged_env = resolve_env(env)
    merged_env.update(spec.env)
    merged_env.update(spec.compact_env())
    if spec.channel is not None and "MCP_TOOL_TIMEOUT" not in merged_env:
        merged_env["MCP_TOOL_TIMEOUT"] = str(ask_tool_timeout_ms(getattr(spec.channel, "timeout_s", None)))
    if spec.permission_mode == "bypassPermissions" and os.geteuid() == 0 and not _sandbox_ok(merged_env):
        raise ValueError("permission_mode='bypassPermissions' as root needs IS_SANDBOX=1 in the environment "
                         "(the CLI refuses otherwise); use 'acceptEdits' with allowed_tools instead")

    text = "\n\n".join(part for part in (spec.system_prompt.strip(), prelude.strip()) if part)
    system_prompt: Any
    if spec.replace_system_prompt:
        system_prompt = text
    else:
        system_prompt = {"type": "preset", "preset": "claude_code"}
        if text:
            system_prompt["append"] = text

    kwargs: dict[str, Any] = {
        "system_prompt": system_prompt,
        "allowed_tools": spec.all_allowed_tools(),
        "disallowed_tools": list(spec.disallowed_tools),
        "permission_mode": spec.permission_mode,
        "setting_sources": list(spec.setting_sources),
        "env": merged_env,
        "include_partial_messages": include_partial,
    }
    if spec.tools is not None:
        kwargs["tools"] = list(spec.tools)
    if cwd is not None:
        kwargs["cwd"] = str(cwd)
    if spec.add_dirs:
        kwargs["add_dirs"] = list(spec.add_dirs)
    for name in ("model", "effort", "max_turns", "max_budget_usd", "agents"):
        value = getattr(spec, name)
        if value is not None:
            kwargs[name] = value
    servers = spec.all_mcp_servers()
    if servers:
        kwargs["mcp_servers"] = servers
    merged_hooks = _merge_hooks(spec.hooks, hooks)
    if merged_hooks:
        kwargs["hooks"] = merged_hooks
    if session_store is not None:
        kwargs["session_store"] = session_store
        kwargs["session_store_flush"] = flush
    if resume:
        kwargs["resume"] = resume
        kwargs["fork_session"] = bool(fork)
        if resume_at:
            kwargs["resume_session_at"] = resume_at
    # else: fork/resume_at without resume are ignored on purpose (see docstring).
    if stderr is not None:
        kwargs["stderr"] = stderr
    if spec.channel is not None:  # a channel with an approval policy decides tool calls (runtime/permission.py)
        from flower_core.runtime.permission import wire

        kwargs = wire(kwargs, spec.channel, plan_first=spec.plan_first)
    kwargs.update(spec.extra)
    return ClaudeAgentOptions(**kwargs)


def _merge_hooks(*tables: dict[str, Any] | None) -> dict[str, Any]:
    out: dict[str, list[Any]] = {}
    for table in tables:
        for event, matchers in (table or {}).items():
            out.setdefault(event, []).extend(matchers)
    return dict(out)
