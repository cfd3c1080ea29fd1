"""The permission path: a step whose channel has an active ApprovalGate decides tool calls itself.

    build_options(spec) ─▶ wire(kwargs, channel) ─▶ a PreToolUse hook + can_use_tool, both the gate's
    the CLI, per call: hook ─ policy says ask/deny? ─ yes ─▶ "ask" ─▶ can_use_tool ─▶ gate.decide (a person)
                              └ no ─▶ no decision: the CLI's own rules, exactly as without a policy

Why so (tests/core/test_approval_cli_facts.py): the CLI consults ``can_use_tool`` only for calls its
own rules leave open. ``acceptEdits`` settles edits and file-touching shell commands, an
``allowed_tools`` entry settles its whole tool, and even the ``default`` mode lets read-only
commands (``ls``, ``git status``) through, so the callback alone would hide calls a person should
see. A hook's ``"ask"`` sends the call to the callback whatever those rules say; calls the policy
does not speak about are left to them, so a step's tools, mode and read-only roles mean what they
meant. A call that still reaches the callback unasked is one the CLI would have refused without
it, and it is refused with the CLI's own words. A denial's message is the tool result the model
reads. A subagent's calls take the same path (tests/core/test_approvals_cli.py). The SDK needs
streaming mode for the callback, which ``Attempt`` always uses.
"""

from __future__ import annotations

import warnings
from typing import Any

from flower_core.human.approval import ApprovalGate, Decision

UNGRANTED = "Claude requested permissions to use {tool}, but you haven't granted it yet."
FAILED = "The approval of this {tool} call failed ({error}); it did not run."


def gate_of(channel: Any) -> ApprovalGate | None:
    gate = getattr(channel, "approvals", None)
    return gate if isinstance(gate, ApprovalGate) and gate.active else None


def take_decisions(channel: Any) -> list[dict[str, Any]]:
    """The decisions taken since the last call, for the step's books (the manifest's ``approvals``)."""
    gate = getattr(channel, "approvals", None)
    return gate.take_decisions() if isinstance(gate, ApprovalGate) else []


def wire(kwargs: dict[str, Any], channel: Any) -> dict[str, Any]:
    """ClaudeAgentOptions keyword arguments with the gate's hook and callback, when the channel has one."""
    gate = gate_of(channel)
    if gate is None:
        return kwargs
    from claude_agent_sdk import HookMatcher, PermissionResultAllow, PermissionResultDeny
    from claude_agent_sdk.types import CanUseToolShadowedWarning

    # The SDK warns that allowed_tools shadow the callback; the hook below is what un-shadows them.
    warnings.filterwarnings("ignore", category=CanUseToolShadowedWarning)

    async def pre_tool_use(data: Any, tool_use_id: str | None, context: Any) -> Any:
        tool, args = str(data.get("tool_name", "")), data.get("tool_input")
        verdict, _ = gate.policy.decide(tool, args if isinstance(args, dict) else {}, cwd=gate.cwd)
        if verdict not in ("ask", "deny"):
            return {}
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask",
                                       "permissionDecisionReason": f"approval policy: {verdict}"}}

    async def can_use_tool(tool: str, args: dict[str, Any], context: Any) -> Any:
        try:
            d = await gate.decide(channel, tool, args if isinstance(args, dict) else {})
        except Exception as exc:  # a bug here must refuse the call, never run it unseen
            d = Decision(False, FAILED.format(tool=tool, error=type(exc).__name__))
        if d.allow and d.how == "policy":  # not asked by the hook: the CLI would have refused it without us
            d = Decision(False, UNGRANTED.format(tool=tool))
        return PermissionResultAllow() if d.allow else PermissionResultDeny(message=d.message)

    out = dict(kwargs)
    hooks = {k: list(v) for k, v in (kwargs.get("hooks") or {}).items()}
    hooks.setdefault("PreToolUse", []).insert(0, HookMatcher(matcher=None, hooks=[pre_tool_use]))
    out["hooks"] = hooks
    out["can_use_tool"] = can_use_tool
    return out
