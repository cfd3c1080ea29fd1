"""The chat hub: one platform-neutral bridge from runs to threads (see hub.py)."""

from adapters.hub.cards import CardProblem, OpenCard
from adapters.hub.files import Attached, Incoming, SavedFile, human_size, inside, workspace_files
from adapters.hub.hub import PLATFORM_FACADE, Hub
from adapters.hub.pipe import RunPipe
from adapters.hub.results import IntentResult
from adapters.hub.runs import LiveRun, RunFactory, RunOptions, RunPlan, default_factory
from adapters.hub.settings import HubSettings, UploadLimits
from adapters.hub.workspace import Bookkeeping

__all__ = ["PLATFORM_FACADE", "Attached", "Bookkeeping", "CardProblem", "Hub", "HubSettings", "Incoming",
           "IntentResult", "LiveRun", "OpenCard", "RunFactory", "RunOptions", "RunPipe", "RunPlan", "SavedFile",
           "UploadLimits", "default_factory", "human_size", "inside", "workspace_files"]
