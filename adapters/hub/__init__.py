"""The chat hub: one platform-neutral bridge from runs to threads (see hub.py)."""

from adapters.hub.cards import CardProblem, OpenCard
from adapters.hub.hub import PLATFORM_FACADE, Hub
from adapters.hub.pipe import RunPipe
from adapters.hub.results import IntentResult
from adapters.hub.runs import LiveRun, RunFactory, RunOptions, RunPlan, default_factory
from adapters.hub.settings import HubSettings

__all__ = ["PLATFORM_FACADE", "CardProblem", "Hub", "HubSettings", "IntentResult", "LiveRun", "OpenCard",
           "RunFactory", "RunOptions", "RunPipe", "RunPlan", "default_factory"]
