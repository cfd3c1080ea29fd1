"""flower: long-horizon agent runs on the Claude Agent SDK.

The public API is imported lazily so that importing ``flower_core`` (for ``Event`` alone, say)
does not start the SDK machinery.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS: dict[str, str] = {
    "Event": "flower_core.events",
    "EventKind": "flower_core.events",
    "EVENT_KINDS": "flower_core.events",
    "normalize": "flower_core.events",
    "Ask": "flower_core.human",
    "Mail": "flower_core.human",
    "HumanChannel": "flower_core.human",
    "AgentSpec": "flower_core.spec",
    "Runtime": "flower_core.runtime",
    "StepResult": "flower_core.runtime",
    "SQLiteSessionStore": "flower_core.session_store",
    "Step": "flower_core.workflow",
    "Workflow": "flower_core.workflow",
    "StepAbort": "flower_core.workflow",
    "Workbench": "flower_core.workbench",
    "starter_flow": "flower_core.starter",
    "Oracle": "flower_core.oracle",
    "ModelDouble": "flower_core.devmodel",
    "load_scenario": "flower_core.devmodel",
}

__all__ = sorted(_EXPORTS)

def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'flower_core' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
