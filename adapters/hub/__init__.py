"""The chat hub: one platform-neutral bridge from runs to threads (see hub.py).

Platforms import from here only: the Hub's door (`submit`), the intents it takes, what it answers.
"""

from adapters.hub.cards import CardProblem, OpenCard
from adapters.hub.checkpoints import Checkpoint
from adapters.hub.files import Attached, Incoming, SavedFile, human_size, inside, workspace_files
from adapters.hub.hub import PLATFORM_FACADE, Hub
from adapters.hub.intents import (
    AddRoutine,
    Answer,
    Approve,
    Attach,
    Click,
    Continue,
    Decline,
    Follow,
    Intent,
    Interrupt,
    Oracle,
    Resume,
    RoutineAction,
    RoutineVerb,
    Said,
    Send,
    ShowFiles,
    Start,
    Steer,
    Stop,
    Undo,
    Unfollow,
    Wake,
)
from adapters.hub.pipe import RunPipe
from adapters.hub.replies import THREAD_HELP
from adapters.hub.results import Form, IntentResult
from adapters.hub.routines import RoutineInfo
from adapters.hub.routing import NOT_MINE, opens_form
from adapters.hub.runs import LiveRun, RunFactory, RunOptions, RunPlan, default_factory
from adapters.hub.schedule import ACCEPTED as SCHEDULES
from adapters.hub.schedule import ScheduleError, split_schedule
from adapters.hub.settings import HubSettings, UploadLimits
from adapters.hub.steering import EFFORTS, Chosen
from adapters.hub.workspace import Bookkeeping

__all__ = [
    "EFFORTS", "NOT_MINE", "PLATFORM_FACADE", "SCHEDULES", "THREAD_HELP", "AddRoutine", "Answer", "Approve", "Attach",
    "Attached", "Bookkeeping", "CardProblem", "Checkpoint", "Chosen", "Click", "Continue", "Decline", "Follow",
    "Form", "Hub", "HubSettings", "Incoming", "Intent", "IntentResult", "Interrupt", "LiveRun", "OpenCard", "Oracle",
    "Resume", "RoutineAction", "RoutineInfo", "RoutineVerb", "RunFactory", "RunOptions", "RunPipe", "RunPlan", "Said",
    "SavedFile", "ScheduleError", "Send", "ShowFiles", "Start", "Steer", "Stop", "Undo", "Unfollow", "UploadLimits",
    "Wake", "default_factory", "human_size", "inside", "opens_form", "split_schedule", "workspace_files",
]
