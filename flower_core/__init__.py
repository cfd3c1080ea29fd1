"""flower: long-horizon agent runs on the Claude Agent SDK.

The public API is imported lazily so that importing ``flower_core`` (for ``Event`` alone, say)
does not start the SDK machinery; type checkers see the real names through TYPE_CHECKING.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    "Event": "flower_core.events",
    "EventKind": "flower_core.events",
    "EVENT_KINDS": "flower_core.events",
    "PARTIAL": "flower_core.events",
    "is_partial": "flower_core.events",
    "normalize": "flower_core.events",
    "json_safe": "flower_core.events",
    "Ask": "flower_core.human",
    "AskState": "flower_core.human",
    "Mail": "flower_core.human",
    "HumanChannel": "flower_core.human",
    "AgentSpec": "flower_core.spec",
    "build_options": "flower_core.spec",
    "resolve_env": "flower_core.spec",
    "has_credentials": "flower_core.spec",
    "Runtime": "flower_core.runtime",
    "StepResult": "flower_core.runtime",
    "Resilience": "flower_core.runtime",
    "HandoffPolicy": "flower_core.runtime",
    "Budget": "flower_core.runtime.budget",
    "BudgetError": "flower_core.runtime.budget",
    "ParkPolicy": "flower_core.runtime.parking",
    "WarmPool": "flower_core.runtime.warm",
    "classify": "flower_core.runtime",
    "default_window": "flower_core.runtime",
    "SQLiteSessionStore": "flower_core.session_store",
    "RedisSessionStore": "flower_core.redis_store",
    "Manifest": "flower_core.manifest",
    "Step": "flower_core.workflow",
    "Workflow": "flower_core.workflow",
    "StepAbort": "flower_core.workflow",
    "Lineage": "flower_core.lineage",
    "next_round": "flower_core.rounds",
    "Workbench": "flower_core.workbench",
    "starter_flow": "flower_core.starter",
    "Oracle": "flower_core.oracle",
    "ModelDouble": "flower_core.devmodel",
    "load_scenario": "flower_core.devmodel",
    "cli_env": "flower_core.devmodel",
    # The original flower's names (docs/coming-from-flower.md lists each one's status).
    "CompactPolicy": "flower_core.spec",
    "Brief": "flower_core.goals",
    "Goal": "flower_core.goals",
    "Verdict": "flower_core.goals",
    "ACHIEVED": "flower_core.goals",  # the verdict's three outcomes (the original's flower.workflow.goal names)
    "NOT_YET": "flower_core.goals",
    "UNREACHABLE": "flower_core.goals",
    "coordinator": "flower_core.team",
    "worker": "flower_core.team",
    "clarify": "flower_core.team",
    "judge": "flower_core.team",
    "oracle": "flower_core.team",
    "COORDINATOR_RULES": "flower_core.team",
    "WORKER_RULES": "flower_core.team",
    "CLARIFIER_RULES": "flower_core.team",
    "JUDGE_RULES": "flower_core.team",
    "ORACLE_RULES": "flower_core.team",
    "clarify_step": "flower_core.goal_steps",
    "goal_step": "flower_core.goal_steps",
    "with_goal": "flower_core.goal_steps",
    "wake_state": "flower_core.goal_steps",
    "BRIEF_KEY": "flower_core.goal_steps",
    "MISSING_KEY": "flower_core.goal_steps",
    "CLARIFY_RESUME": "flower_core.goal_steps",
    "GOAL_KEY": "flower_core.goal_steps",
    "VERDICT_KEY": "flower_core.goal_steps",
    "ROUND_KEY": "flower_core.goal_steps",
    "whitelist_guard": "flower_core.guards",
    "delegate_guard": "flower_core.guards",
    "spill_guard": "flower_core.guards",
    "index_guard": "flower_core.guards",
    "isolate_guard": "flower_core.guards",
    "isolated": "flower_core.guards",
    "wants_isolation": "flower_core.guards",
    "workbench_hooks": "flower_core.guards",
    "merge_hooks": "flower_core.guards",
    "is_ephemeral": "flower_core.guards",
    "TrimmingSessionStore": "flower_core.trimming",
    "TrimPolicy": "flower_core.trimming",
    "EphemeralPolicy": "flower_core.trimming",
    "trim_report": "flower_core.trimming",
    "PruningSessionStore": "flower_core.pruning",
    "PrunePolicy": "flower_core.pruning",
    "endpoint": "flower_core.probe",
    "reachable": "flower_core.probe",
}

# The original's name for one of ours: public name -> (module, attribute there).
_ALIASES: dict[str, tuple[str, str]] = {
    "SqliteSessionStore": ("flower_core.session_store", "SQLiteSessionStore"),
    "Handoff": ("flower_core.runtime.document", "HandoffDoc"),
}

__all__ = [
    "ACHIEVED",
    "BRIEF_KEY",
    "CLARIFIER_RULES",
    "CLARIFY_RESUME",
    "COORDINATOR_RULES",
    "EVENT_KINDS",
    "GOAL_KEY",
    "JUDGE_RULES",
    "MISSING_KEY",
    "NOT_YET",
    "ORACLE_RULES",
    "PARTIAL",
    "ROUND_KEY",
    "UNREACHABLE",
    "VERDICT_KEY",
    "WORKER_RULES",
    "AgentSpec",
    "Ask",
    "AskState",
    "Brief",
    "Budget",
    "BudgetError",
    "CompactPolicy",
    "EphemeralPolicy",
    "Event",
    "EventKind",
    "Goal",
    "Handoff",
    "HandoffPolicy",
    "HumanChannel",
    "Lineage",
    "Mail",
    "Manifest",
    "ModelDouble",
    "Oracle",
    "ParkPolicy",
    "PrunePolicy",
    "PruningSessionStore",
    "RedisSessionStore",
    "Resilience",
    "Runtime",
    "SQLiteSessionStore",
    "SqliteSessionStore",
    "Step",
    "StepAbort",
    "StepResult",
    "TrimPolicy",
    "TrimmingSessionStore",
    "Verdict",
    "WarmPool",
    "Workbench",
    "Workflow",
    "build_options",
    "clarify",
    "clarify_step",
    "classify",
    "cli_env",
    "coordinator",
    "default_window",
    "delegate_guard",
    "endpoint",
    "goal_step",
    "has_credentials",
    "index_guard",
    "is_ephemeral",
    "is_partial",
    "isolate_guard",
    "isolated",
    "json_safe",
    "judge",
    "load_scenario",
    "merge_hooks",
    "next_round",
    "normalize",
    "oracle",
    "reachable",
    "resolve_env",
    "spill_guard",
    "starter_flow",
    "trim_report",
    "wake_state",
    "wants_isolation",
    "whitelist_guard",
    "with_goal",
    "workbench_hooks",
    "worker"
]

if TYPE_CHECKING:
    from flower_core.devmodel import ModelDouble, cli_env, load_scenario
    from flower_core.events import EVENT_KINDS, PARTIAL, Event, EventKind, is_partial, json_safe, normalize
    from flower_core.goal_steps import (
        BRIEF_KEY,
        CLARIFY_RESUME,
        GOAL_KEY,
        MISSING_KEY,
        ROUND_KEY,
        VERDICT_KEY,
        clarify_step,
        goal_step,
        wake_state,
        with_goal,
    )
    from flower_core.goals import ACHIEVED, NOT_YET, UNREACHABLE, Brief, Goal, Verdict
    from flower_core.guards import (
        delegate_guard,
        index_guard,
        is_ephemeral,
        isolate_guard,
        isolated,
        merge_hooks,
        spill_guard,
        wants_isolation,
        whitelist_guard,
        workbench_hooks,
    )
    from flower_core.human import Ask, AskState, HumanChannel, Mail
    from flower_core.lineage import Lineage
    from flower_core.manifest import Manifest
    from flower_core.oracle import Oracle
    from flower_core.probe import endpoint, reachable
    from flower_core.pruning import PrunePolicy, PruningSessionStore
    from flower_core.redis_store import RedisSessionStore
    from flower_core.rounds import next_round
    from flower_core.runtime import HandoffPolicy, Resilience, Runtime, StepResult, classify, default_window
    from flower_core.runtime.budget import Budget, BudgetError
    from flower_core.runtime.document import HandoffDoc as Handoff
    from flower_core.runtime.parking import ParkPolicy
    from flower_core.runtime.warm import WarmPool
    from flower_core.session_store import SQLiteSessionStore
    from flower_core.session_store import SQLiteSessionStore as SqliteSessionStore
    from flower_core.spec import AgentSpec, CompactPolicy, build_options, has_credentials, resolve_env
    from flower_core.starter import starter_flow
    from flower_core.team import (
        CLARIFIER_RULES,
        COORDINATOR_RULES,
        JUDGE_RULES,
        ORACLE_RULES,
        WORKER_RULES,
        clarify,
        coordinator,
        judge,
        oracle,
        worker,
    )
    from flower_core.trimming import EphemeralPolicy, TrimmingSessionStore, TrimPolicy, trim_report
    from flower_core.workbench import Workbench
    from flower_core.workflow import Step, StepAbort, Workflow


def __getattr__(name: str) -> Any:
    module, attribute = _ALIASES.get(name) or (_EXPORTS.get(name), name)
    if module is None:
        raise AttributeError(f"module 'flower_core' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
