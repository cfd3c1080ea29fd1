"""The runtime: run one agent step to its end (retries, human interrupts, context handoffs)."""

from flower_core.runtime.document import HandoffDoc
from flower_core.runtime.handoff import HandoffPolicy, default_window, is_overflow
from flower_core.runtime.resilience import Resilience, classify
from flower_core.runtime.results import StepResult
from flower_core.runtime.runtime import Runtime
from flower_core.runtime.steering import EFFORTS, ModelRefused, effort_problem

__all__ = ["EFFORTS", "HandoffDoc", "HandoffPolicy", "ModelRefused", "Resilience", "Runtime", "StepResult", "classify",
           "default_window", "effort_problem", "is_overflow"]
