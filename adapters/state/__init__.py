"""Bridge state behind one small interface: memory for tests, SQLite (default) for bots."""

from adapters.state.base import (
    DEFAULT_DEDUPE_TTL_S,
    LIVE_STATUSES,
    AskMessage,
    ChannelPolicy,
    Mirror,
    Occurrence,
    Receipt,
    Routine,
    RunRecord,
    RunStatus,
    StateStore,
    StoredEvents,
)
from adapters.state.memory import MemoryStateStore
from adapters.state.sqlite import SQLiteStateStore

__all__ = [
    "DEFAULT_DEDUPE_TTL_S",
    "LIVE_STATUSES",
    "AskMessage",
    "ChannelPolicy",
    "MemoryStateStore",
    "Mirror",
    "Occurrence",
    "Receipt",
    "Routine",
    "RunRecord",
    "RunStatus",
    "SQLiteStateStore",
    "StateStore",
    "StoredEvents",
]
