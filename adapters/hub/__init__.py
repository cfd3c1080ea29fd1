"""The chat hub: one platform-neutral bridge from runs to threads (see hub.py)."""

from adapters.hub.hub import Hub
from adapters.hub.pipe import RunPipe
from adapters.hub.results import IntentResult
from adapters.hub.runs import LiveRun, RunFactory, RunOptions, RunPlan, default_factory

__all__ = ["Hub", "IntentResult", "LiveRun", "RunFactory", "RunOptions", "RunPipe", "RunPlan", "default_factory"]
