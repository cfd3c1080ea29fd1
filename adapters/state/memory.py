"""A StateStore kept in dicts: for tests, the terminal and one-shot runs (nothing survives exit)."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable

from adapters.platform import ThreadRef
from adapters.state.base import (
    DEFAULT_DEDUPE_TTL_S,
    KEEP_OCCURRENCES,
    AskMessage,
    ChannelPolicy,
    Mirror,
    Occurrence,
    Receipt,
    Routine,
    RunRecord,
    RunStatus,
)

__all__ = ["MemoryStateStore"]


class MemoryStateStore:
    def __init__(self, *, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._thread_run: dict[ThreadRef, str] = {}
        self._run_thread: dict[str, ThreadRef] = {}
        self._runs: dict[str, RunRecord] = {}
        self._asks: dict[tuple[str, str], AskMessage] = {}
        self._messages: dict[tuple[ThreadRef, str], str] = {}
        self._dedupe: dict[str, float] = {}  # key -> expiry
        self._receipts: dict[tuple[str, str], Receipt] = {}
        self._policies: dict[str, ChannelPolicy] = {}
        self._mirrors: dict[tuple[str, ThreadRef], Mirror] = {}  # insertion order = the order they were added
        self._intents: dict[str, dict[str, tuple[str, str]]] = {}  # run -> iid -> (data, settled), in order
        self._routines: dict[str, Routine] = {}
        self._occurrences: dict[tuple[str, float], Occurrence] = {}  # in the order they were recorded

    def bind_thread(self, thread: ThreadRef, run_id: str) -> None:
        with self._lock:
            self._thread_run[thread] = run_id
            self._run_thread[run_id] = thread

    def run_for_thread(self, thread: ThreadRef) -> str | None:
        with self._lock:
            return self._thread_run.get(thread)

    def thread_for_run(self, run_id: str) -> ThreadRef | None:
        with self._lock:
            return self._run_thread.get(run_id)

    def save_run(self, run: RunRecord) -> RunRecord:
        now = self._clock()
        with self._lock:
            old = self._runs.get(run.run_id)
            created = run.created_at or (old.created_at if old else now)
            stored = dataclasses.replace(run, status=RunStatus.of(str(run.status)), created_at=created,
                                         updated_at=run.updated_at or now)
            self._runs[run.run_id] = stored
            return stored

    def get_run(self, run_id: str) -> RunRecord | None:
        with self._lock:
            return self._runs.get(run_id)

    def list_runs(self, status: str | None = None) -> list[RunRecord]:
        with self._lock:
            runs = [r for r in self._runs.values() if status is None or r.status == status]
        return sorted(runs, key=lambda r: (r.created_at, r.run_id))

    def set_run_status(self, run_id: str, status: RunStatus | str) -> bool:
        with self._lock:
            run = self._runs.get(run_id)
            if run is None:
                return False
            self._runs[run_id] = dataclasses.replace(run, status=RunStatus.of(str(status)), updated_at=self._clock())
            return True

    def save_ask_message(self, run_id: str, ask_id: str, message_id: str, question: str,
                         options: list[str]) -> None:
        with self._lock:
            self._asks[(run_id, ask_id)] = AskMessage(run_id, ask_id, message_id, question, list(options))

    def get_ask_message(self, run_id: str, ask_id: str) -> AskMessage | None:
        with self._lock:
            return self._asks.get((run_id, ask_id))

    def save_message(self, thread: ThreadRef, key: str, message_id: str) -> None:
        with self._lock:
            self._messages[(thread, key)] = message_id

    def get_message(self, thread: ThreadRef, key: str) -> str | None:
        with self._lock:
            return self._messages.get((thread, key))

    def seen(self, key: str, ttl_s: float = DEFAULT_DEDUPE_TTL_S) -> bool:
        now = self._clock()
        with self._lock:
            expiry = self._dedupe.get(key)
            if expiry is not None and expiry > now:
                return True
            self._dedupe[key] = now + ttl_s
            if len(self._dedupe) > 10_000:  # keep memory flat under a long uptime
                self._dedupe = {k: e for k, e in self._dedupe.items() if e > now}
            return False

    def save_receipt(self, run_id: str, mail_id: str, message_id: str, state: str) -> None:
        with self._lock:
            self._receipts[(run_id, mail_id)] = Receipt(run_id, mail_id, message_id, state)

    def get_receipt(self, run_id: str, mail_id: str) -> Receipt | None:
        with self._lock:
            return self._receipts.get((run_id, mail_id))

    def add_mirror(self, mirror: Mirror) -> None:
        with self._lock:
            self._mirrors.pop((mirror.run_id, mirror.thread), None)
            self._mirrors[(mirror.run_id, mirror.thread)] = mirror

    def remove_mirror(self, run_id: str, thread: ThreadRef) -> bool:
        with self._lock:
            return self._mirrors.pop((run_id, thread), None) is not None

    def mirrors_of(self, run_id: str) -> list[Mirror]:
        with self._lock:
            return [m for (rid, _), m in self._mirrors.items() if rid == run_id]

    def mirrored_run(self, thread: ThreadRef) -> str | None:
        with self._lock:
            found = [m.run_id for (_, t), m in self._mirrors.items() if t == thread and m.scope == "all"]
            return found[-1] if found else None

    def log_intent(self, run_id: str, iid: str, data: str) -> bool:
        with self._lock:
            log = self._intents.setdefault(run_id, {})
            if iid in log:
                return False
            log[iid] = (data, "")
            return True

    def unsettled_intents(self, run_id: str) -> list[str]:
        with self._lock:
            return [data for data, settled in self._intents.get(run_id, {}).values() if not settled]

    def settle_intent(self, run_id: str, iid: str, how: str) -> None:
        with self._lock:
            log = self._intents.get(run_id, {})
            if iid in log and not log[iid][1]:
                log[iid] = (log[iid][0], how)

    def count_unsettled_intents(self) -> int:
        with self._lock:
            return sum(1 for log in self._intents.values() for _d, settled in log.values() if not settled)

    def set_channel_policy(self, channel: str, policy: ChannelPolicy) -> None:
        with self._lock:
            self._policies[channel] = policy

    def get_channel_policy(self, channel: str) -> ChannelPolicy | None:
        with self._lock:
            return self._policies.get(channel)

    def save_routine(self, routine: Routine) -> Routine:
        with self._lock:
            old = self._routines.get(routine.routine_id)
            stored = dataclasses.replace(routine, created_at=routine.created_at or (old.created_at if old else
                                                                                    self._clock()))
            self._routines[routine.routine_id] = stored
            return stored

    def get_routine(self, routine_id: str) -> Routine | None:
        with self._lock:
            return self._routines.get(routine_id)

    def list_routines(self) -> list[Routine]:
        with self._lock:
            return sorted(self._routines.values(), key=lambda r: (r.created_at, r.routine_id))

    def delete_routine(self, routine_id: str) -> bool:
        with self._lock:
            return self._routines.pop(routine_id, None) is not None

    def record_occurrence(self, occurrence: Occurrence, next_at: float | None) -> bool:
        with self._lock:
            key = (occurrence.routine_id, occurrence.due)
            if key in self._occurrences:
                return False
            self._occurrences[key] = dataclasses.replace(occurrence, recorded_at=occurrence.recorded_at
                                                         or self._clock())
            routine = self._routines.get(occurrence.routine_id)
            if routine is not None:
                self._routines[routine.routine_id] = dataclasses.replace(routine, next_at=next_at)
            self._prune_occurrences(occurrence.routine_id)
            return True

    def _prune_occurrences(self, routine_id: str) -> None:
        """The history stays bounded (base.KEEP_OCCURRENCES says what is never dropped); under the lock."""
        mine = [k for k, o in reversed(self._occurrences.items()) if o.routine_id == routine_id]  # newest first
        started = [k for k in mine if self._occurrences[k].state == "started"][:2]
        for key in mine[KEEP_OCCURRENCES:]:
            if self._occurrences[key].state != "pending" and key not in started:
                del self._occurrences[key]

    def update_occurrence(self, routine_id: str, due: float, *, state: str | None = None,
                          thread: ThreadRef | None = None, note: str | None = None) -> None:
        with self._lock:
            old = self._occurrences.get((routine_id, due))
            if old is None:
                return
            self._occurrences[(routine_id, due)] = dataclasses.replace(
                old, state=state if state is not None else old.state, thread=thread or old.thread,
                note=note if note is not None else old.note)

    def pending_occurrences(self) -> list[Occurrence]:
        with self._lock:
            return [o for o in self._occurrences.values() if o.state == "pending"]

    def occurrences_of(self, routine_id: str, limit: int = 10, *, state: str | None = None) -> list[Occurrence]:
        with self._lock:
            found = [o for o in self._occurrences.values()
                     if o.routine_id == routine_id and state in (None, o.state)]
        return found[::-1][:limit]

    def close(self) -> None:
        pass
