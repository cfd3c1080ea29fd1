"""The permission path: a step whose channel has an active ApprovalGate decides tool calls itself.

    build_options(spec) ─▶ wire(kwargs, channel) ─▶ a PreToolUse hook + can_use_tool, both the gate's
                           (and a plan-first step's: plan mode, ExitPlanMode reviewed, see human/plan_review.py)
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
from flower_core.human.plan_review import READ_ONLY, TOOL, Verdict, plan_of, plans_dir
from flower_core.lang import catalogue

UNGRANTED = "Claude requested permissions to use {tool}, but you haven't granted it yet."
FAILED = "The approval of this {tool} call failed ({error}); it did not run."


def gate_of(channel: Any) -> ApprovalGate | None:
    gate = getattr(channel, "approvals", None)
    return gate if isinstance(gate, ApprovalGate) and gate.active else None


def take_decisions(channel: Any) -> list[dict[str, Any]]:
    """The decisions taken since the last call, for the step's books (the manifest's ``approvals``)."""
    gate = getattr(channel, "approvals", None)
    return gate.take_decisions() if isinstance(gate, ApprovalGate) else []


def wire(kwargs: dict[str, Any], channel: Any, *, plan_first: bool = False) -> dict[str, Any]:
    """ClaudeAgentOptions keyword arguments with the hook and callback that decide tool calls, when the channel
    has an active gate or the step plans first (then in plan mode while the plan is not approved)."""
    plan = plan_of(channel) if plan_first else None
    if gate_of(channel) is None and plan is None:
        return kwargs
    if plan is not None:  # the one edit plan mode allows: the agent's plan file in the CLI's config dir
        plan.plans_dir = plans_dir(kwargs.get("env"))
    from claude_agent_sdk import HookMatcher, PermissionResultAllow, PermissionResultDeny
    from claude_agent_sdk.types import CanUseToolShadowedWarning, PermissionUpdate

    # The SDK warns that allowed_tools shadow the callback; the hook below is what un-shadows them.
    warnings.filterwarnings("ignore", category=CanUseToolShadowedWarning)
    mode = str(kwargs.get("permission_mode") or "default")  # the step's own: the mode an approved plan goes on in
    lang = catalogue(getattr(channel, "lang", None))

    async def pre_tool_use(data: Any, tool_use_id: str | None, context: Any) -> Any:
        tool, args = str(data.get("tool_name", "")), data.get("tool_input")
        args = args if isinstance(args, dict) else {}
        if plan is not None and plan.planning and tool not in READ_ONLY and tool != TOOL:
            return _ask("plan first: the plan review decides while planning")  # (the callback: plan.holds)
        gate = gate_of(channel)  # looked up per call: approving a plan may turn one on (plan_review.py)
        if gate is None:
            return {}
        verdict, _ = gate.policy.decide(tool, args, cwd=gate.cwd)
        return _ask(f"approval policy: {verdict}") if verdict in ("ask", "deny") else {}

    async def can_use_tool(tool: str, args: dict[str, Any], context: Any) -> Any:
        args = args if isinstance(args, dict) else {}
        if plan is not None and (tool == TOOL or plan.planning):
            try:
                v = await plan.review(channel, str(getattr(context, "tool_use_id", "") or "")) if tool == TOOL \
                    else Verdict(not plan.holds(tool, args), lang.fill("plan.planning", tool=tool))
            except Exception as exc:  # a bug here must refuse the call, never leave plan mode unseen
                v = Verdict(False, FAILED.format(tool=tool, error=type(exc).__name__))
            if v.allow and tool == TOOL:  # out of plan mode, into the step's own (its rules as without a plan)
                back = PermissionUpdate(type="setMode", mode=mode)  # type: ignore[arg-type]  # the step's own mode
                return PermissionResultAllow(updated_permissions=[back])
            return PermissionResultAllow() if v.allow else PermissionResultDeny(message=v.message)
        gate = gate_of(channel)
        if gate is None:  # no rule asked for it: the CLI would have refused it without us
            return PermissionResultDeny(message=UNGRANTED.format(tool=tool))
        try:
            d = await gate.decide(channel, tool, args)
        except Exception as exc:  # a bug here must refuse the call, never run it unseen
            d = Decision(False, FAILED.format(tool=tool, error=type(exc).__name__))
        if d.allow and d.how == "policy":  # not asked by the hook: the CLI would have refused it without us
            d = Decision(False, UNGRANTED.format(tool=tool))
        return PermissionResultAllow() if d.allow else PermissionResultDeny(message=d.message)

    out = dict(kwargs)
    if plan is not None and plan.planning:
        out["permission_mode"] = "plan"
    hooks = {k: list(v) for k, v in (kwargs.get("hooks") or {}).items()}
    hooks.setdefault("PreToolUse", []).insert(0, HookMatcher(matcher=None, hooks=[pre_tool_use]))
    out["hooks"] = hooks
    out["can_use_tool"] = can_use_tool
    return out


def _ask(reason: str) -> dict[str, Any]:
    """A PreToolUse hook's answer that sends the call to ``can_use_tool`` whatever the CLI's own rules say."""
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask",
                                   "permissionDecisionReason": reason}}
