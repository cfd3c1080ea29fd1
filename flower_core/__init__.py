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
}

__all__ = [
    "EVENT_KINDS", "AgentSpec", "Ask", "AskState", "Budget", "BudgetError", "Event", "EventKind", "HandoffPolicy",
    "HumanChannel", "Lineage", "Mail", "Manifest", "ModelDouble", "Oracle", "ParkPolicy", "RedisSessionStore",
    "Resilience", "Runtime", "SQLiteSessionStore", "Step", "StepAbort", "StepResult", "Workbench", "Workflow",
    "build_options", "classify", "cli_env", "default_window", "has_credentials", "json_safe", "load_scenario",
    "next_round", "normalize", "resolve_env", "starter_flow",
]

if TYPE_CHECKING:
    from flower_core.devmodel import ModelDouble, cli_env, load_scenario
    from flower_core.events import EVENT_KINDS, Event, EventKind, json_safe, normalize
    from flower_core.human import Ask, AskState, HumanChannel, Mail
    from flower_core.lineage import Lineage
    from flower_core.manifest import Manifest
    from flower_core.oracle import Oracle
    from flower_core.redis_store import RedisSessionStore
    from flower_core.rounds import next_round
    from flower_core.runtime import HandoffPolicy, Resilience, Runtime, StepResult, classify, default_window
    from flower_core.runtime.budget import Budget, BudgetError
    from flower_core.runtime.parking import ParkPolicy
    from flower_core.session_store import SQLiteSessionStore
    from flower_core.spec import AgentSpec, build_options, has_credentials, resolve_env
    from flower_core.starter import starter_flow
    from flower_core.workbench import Workbench
    from flower_core.workflow import Step, StepAbort, Workflow


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'flower_core' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
