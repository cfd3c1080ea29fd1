"""The state store interface: everything the bridge must remember across a restart.

Calls are synchronous and short (local SQLite or memory), so they are safe from the synchronous
`on_event` path as well as from coroutines. Implementations are thread-safe.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import NamedTuple, Protocol, runtime_checkable

from adapters.platform import ThreadRef

__all__ = ["DEFAULT_DEDUPE_TTL_S", "KEEP_OCCURRENCES", "LIVE_STATUSES", "AskMessage", "ChannelPolicy", "Mirror",
           "Occurrence", "Receipt", "Routine", "RunRecord", "RunStatus", "StateStore", "StoredEvents"]

# Slack redelivers events for ~5 minutes; keep dedupe keys for longer than that.
DEFAULT_DEDUPE_TTL_S = 900.0


class RunStatus(StrEnum):
    """Where a run is, as the store (and the HTTP API) says it. The first four are live."""

    STARTING = "starting"
    RUNNING = "running"
    WAITING = "waiting"  # on a person's answer, its CLI still up
    PARKED = "parked"  # on a person's answer, no CLI (it survives a restart as it is)
    DONE = "done"
    FAILED = "failed"
    STOPPED = "stopped"
    DIED = "died"  # the process went away under it and it could not come back by itself

    @classmethod
    def of(cls, value: str) -> RunStatus | str:
        """A stored value as a status; an unknown one (written by a newer version) stays as it is."""
        try:
            return cls(value)
        except ValueError:
            return value


LIVE_STATUSES = frozenset({RunStatus.STARTING, RunStatus.RUNNING, RunStatus.WAITING, RunStatus.PARKED})


@dataclass(frozen=True)
class RunRecord:
    """A run as the bridge knows it. Timestamps are epoch seconds; 0 means "fill in on save"."""

    run_id: str
    thread: ThreadRef
    owner: str
    task: str
    status: RunStatus | str = RunStatus.STARTING
    workspace: str = ""
    run_dir: str = ""
    created_at: float = 0.0
    updated_at: float = 0.0
    round: int = 1  # 2, 3…: a person continued the run after it ended (adapters/hub/rounds.py)
    spent_usd: float = 0.0  # what the run's ended rounds cost: the next round's cap counts it
    cap_usd: float | None = None  # the cost cap as its owner last raised it (None: the run's options say)
    origin: str = ""  # what started it when no person did: "⏰ Daily triage, 09:00" (a routine)


@dataclass(frozen=True)
class AskMessage:
    """Which platform message shows an ask card, and what it asked."""

    run_id: str
    ask_id: str
    message_id: str
    question: str
    options: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Receipt:
    """The message acknowledging a piece of inbox mail, and the mail's state (queued/delivered)."""

    run_id: str
    mail_id: str
    message_id: str
    state: str


@dataclass(frozen=True)
class Mirror:
    """One more thread showing a run: scope "all" (a followed thread) or one message key (a direct
    message carrying one ask card)."""

    run_id: str
    thread: ThreadRef
    scope: str = "all"
    by: str = ""


@dataclass(frozen=True)
class ChannelPolicy:
    """Who may do what in a channel. None means anyone; admins may always start, answer and stop."""

    starters: frozenset[str] | None = None
    responders: frozenset[str] | None = None
    admins: frozenset[str] = frozenset()

    def __init__(self, starters: set[str] | frozenset[str] | None = None,
                 responders: set[str] | frozenset[str] | None = None,
                 admins: set[str] | frozenset[str] = frozenset()) -> None:
        # Frozen sets so a policy read from the store cannot be mutated behind its back.
        object.__setattr__(self, "starters", None if starters is None else frozenset(starters))
        object.__setattr__(self, "responders", None if responders is None else frozenset(responders))
        object.__setattr__(self, "admins", frozenset(admins))


@dataclass(frozen=True)
class Routine:
    """A task that starts itself (adapters/hub/routines.py): `schedule` is a cron expression or "at <ISO
    time>" (adapters/hub/schedule.py), read in `timezone`; its runs appear in `place` (a channel: the thread
    part is empty) as `owner`'s. `next_at`: its next firing (epoch seconds), None when it has none left.
    `source` "config": declared in the TOML file (the file decides it at every start)."""

    routine_id: str
    name: str
    task: str
    schedule: str
    timezone: str
    place: ThreadRef
    owner: str
    options: str = "{}"  # RunOptions as JSON
    overlap: str = "skip"  # or "queue"
    catch_up: bool = True
    paused: bool = False
    next_at: float | None = None
    created_at: float = 0.0
    source: str = ""
    said: str = ""  # the schedule as the person wrote it


# How many occurrences of one routine a store keeps (newest first); older ones go when a new one is recorded.
# A pending one is never dropped, nor the routine's two newest started ones (the overlap rule reads them).
KEEP_OCCURRENCES = 200


@dataclass(frozen=True)
class Occurrence:
    """One firing of a routine, recorded (unique per routine and `due`) before its run starts, with the run
    id that run will have: the run's record in the same store is what says it started. `kind`: "due" (on
    time), "catch_up" (missed while the bot was down), "manual" (Run now). `state`: pending, started,
    skipped or failed. `thread`: the thread opened for it, once one was."""

    routine_id: str
    due: float
    run_id: str
    kind: str = "due"
    state: str = "pending"
    thread: ThreadRef | None = None
    note: str = ""
    recorded_at: float = 0.0


class StoredEvents(NamedTuple):
    """A run's event log as kept on disk (the web API's, adapters/web/events.py): `rows` are (seq, the
    event as JSON) oldest first; `base` is the seq before the log's first event, `gone_upto` the newest
    seq pushed out by the log's bound (`base` or less: none)."""

    base: int
    gone_upto: int
    rows: Sequence[tuple[int, str]]


@runtime_checkable
class StateStore(Protocol):
    # thread <-> run
    def bind_thread(self, thread: ThreadRef, run_id: str) -> None: ...
    def run_for_thread(self, thread: ThreadRef) -> str | None: ...
    def thread_for_run(self, run_id: str) -> ThreadRef | None: ...

    # runs
    def save_run(self, run: RunRecord) -> RunRecord: ...
    def get_run(self, run_id: str) -> RunRecord | None: ...
    def list_runs(self, status: str | None = None) -> list[RunRecord]: ...
    def set_run_status(self, run_id: str, status: RunStatus | str) -> bool: ...

    # ask cards
    def save_ask_message(self, run_id: str, ask_id: str, message_id: str, question: str,
                         options: list[str]) -> None: ...
    def get_ask_message(self, run_id: str, ask_id: str) -> AskMessage | None: ...

    # platform message ids by logical key (outbox edits survive a restart)
    def save_message(self, thread: ThreadRef, key: str, message_id: str) -> None: ...
    def get_message(self, thread: ThreadRef, key: str) -> str | None: ...

    # inbound dedupe: True if seen within ttl, else record it (atomically)
    def seen(self, key: str, ttl_s: float = DEFAULT_DEDUPE_TTL_S) -> bool: ...

    # mail receipts
    def save_receipt(self, run_id: str, mail_id: str, message_id: str, state: str) -> None: ...
    def get_receipt(self, run_id: str, mail_id: str) -> Receipt | None: ...

    # mirrors: more threads showing a run
    def add_mirror(self, mirror: Mirror) -> None: ...
    def remove_mirror(self, run_id: str, thread: ThreadRef) -> bool: ...
    def mirrors_of(self, run_id: str) -> list[Mirror]: ...
    def mirrored_run(self, thread: ThreadRef) -> str | None: ...  # the run a followed ("all") thread shows

    # the durable intent log (adapters/transport/intents.py): opaque JSON per intent, in order per run
    def log_intent(self, run_id: str, iid: str, data: str) -> bool: ...  # False: that iid is logged already
    def unsettled_intents(self, run_id: str) -> list[str]: ...
    def settle_intent(self, run_id: str, iid: str, how: str) -> None: ...
    def count_unsettled_intents(self) -> int: ...

    # access
    def set_channel_policy(self, channel: str, policy: ChannelPolicy) -> None: ...
    def get_channel_policy(self, channel: str) -> ChannelPolicy | None: ...

    # routines and their occurrences (adapters/hub/routines.py)
    def save_routine(self, routine: Routine) -> Routine: ...
    def get_routine(self, routine_id: str) -> Routine | None: ...
    def list_routines(self) -> list[Routine]: ...
    def delete_routine(self, routine_id: str) -> bool: ...
    # One transaction: the occurrence (False, nothing changed: that routine and due are recorded already) and
    # the routine's next firing.
    def record_occurrence(self, occurrence: Occurrence, next_at: float | None) -> bool: ...
    def update_occurrence(self, routine_id: str, due: float, *, state: str | None = None,
                          thread: ThreadRef | None = None, note: str | None = None) -> None: ...
    def pending_occurrences(self) -> list[Occurrence]: ...  # oldest first
    def occurrences_of(self, routine_id: str, limit: int = 10, *,
                       state: str | None = None) -> list[Occurrence]: ...  # newest first; `state`: only those

    def close(self) -> None: ...
