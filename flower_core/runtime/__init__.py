"""The runtime: run one agent step to its end (retries, human interrupts, context handoffs).

Its names load on first use (PEP 562): a process that only imports a policy or the budget (a bot at rest,
with no run yet) does not load claude_agent_sdk, which is ~60 MB of the process's memory (docs/parking.md).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_WHERE = {"HandoffDoc": "document", "HandoffPolicy": "handoff", "default_window": "handoff", "is_overflow": "handoff",
          "Resilience": "resilience", "classify": "resilience", "StepResult": "results", "Runtime": "runtime",
          "EFFORTS": "steering", "ModelRefused": "steering", "effort_problem": "steering"}

__all__ = ["EFFORTS", "HandoffDoc", "HandoffPolicy", "ModelRefused", "Resilience", "Runtime", "StepResult", "classify",
           "default_window", "effort_problem", "is_overflow"]

if TYPE_CHECKING:
    from flower_core.runtime.document import HandoffDoc
    from flower_core.runtime.handoff import HandoffPolicy, default_window, is_overflow
    from flower_core.runtime.resilience import Resilience, classify
    from flower_core.runtime.results import StepResult
    from flower_core.runtime.runtime import Runtime
    from flower_core.runtime.steering import EFFORTS, ModelRefused, effort_problem


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'flower_core.runtime' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"flower_core.runtime.{module}"), name)
    globals()[name] = value
    return value
