"""Per-run event logs for the HTTP API: the seed's "sequence number + polling" front end.

Every event of every run reaches `EventLogs.tap` (a `hub.taps` entry: synchronous, on the loop,
never raises). Each run keeps the newest `maxlen` events as plain JSON-safe dicts — kind, text,
tool, payload; never the SDK object behind them — in a `deque(maxlen=…)`, so a log's memory does
not grow with the length of the run. Readers ask for "everything after seq N" and are told when
some of it is no longer held (`dropped`).

A log outlives the process when `EventLogs` is given a store (`keep_in`; the bot hands it its state
store): appends are batched on the loop and written at most `FLUSH_S` after they happen, before any
reader is served them (`flush()` first: what a client saw is on disk), and on `close()`. The store
holds the same newest `maxlen` per run. A log the process has not seen yet is read back from the
store, so a restarted process serves an ended run's events with their seqs unchanged, and a woken
run's new events continue its sequence. A SIGKILL loses only events logged in the last `FLUSH_S`
that no reader had asked for; the next process numbers its events from the last one written.

A log met for the first time starts its seqs from the wall clock in microseconds, so they keep
increasing even without a store (or after one was lost): a client that kept its last seq never
mistakes the new log's events for ones it has seen. Readers wait on an `asyncio.Event` the log sets
on every append (`waiter()`), then read by cursor: no per-reader queue can grow without bound.

Partial events (the model's words as they are written) get no seq and are never stored: the log keeps
only the main thread's words being written now (`writing`: the text so far and the seq it follows),
cleared by the next event. A reader that asks for them (`?partial=1`) is shown that; everyone else
sees exactly the events and seqs they saw before streaming existed.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import math
import time
from collections import OrderedDict, deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, overload

from adapters.platform.limits import WEB
from flower_core import Event, is_partial
from flower_core.payloads import PartialPayload

log = logging.getLogger(__name__)

__all__ = ["FLUSH_S", "EventLog", "EventLogs", "EventStore", "Page", "event_record", "json_safe"]

FLUSH_S = 0.1  # the longest an appended event waits before it is written (a SIGKILL may lose these)

VALUE_MAX = 2_000  # one string inside a payload (tool inputs may carry whole files)
ITEMS_MAX = 200  # keys of a dict / items of a list inside a payload
DEPTH_MAX = 8


def _clip(s: str, limit: int) -> str:
    return s if len(s) <= limit else s[: limit - 1] + "…"


def json_safe(value: Any, depth: int = 0) -> Any:
    """A copy of `value` that json.dumps always accepts and whose size is bounded.

    Strings are clipped, containers cut to ITEMS_MAX entries and DEPTH_MAX levels, non-finite
    floats become None, anything else (an object from a library) its clipped `str()`.
    """
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, str):
        return _clip(value, VALUE_MAX)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if depth >= DEPTH_MAX:
        return "…"
    if isinstance(value, dict):
        return {_clip(str(k), 200): json_safe(v, depth + 1) for k, v in itertools.islice(value.items(), ITEMS_MAX)}
    if isinstance(value, list | tuple | set | frozenset | deque):
        return [json_safe(v, depth + 1) for v in itertools.islice(value, ITEMS_MAX)]
    try:
        return _clip(str(value), VALUE_MAX)
    except Exception:
        return f"<{type(value).__name__}>"


def event_record(seq: int, ev: Event) -> dict[str, Any]:
    """The four public fields of an Event (the seed's shape) plus its sequence number."""
    payload = ev.payload if isinstance(ev.payload, dict) else {}
    return {"seq": seq, "kind": str(ev.kind), "text": _clip(str(ev.text or ""), WEB.event_text_max),
            "tool": str(ev.tool or ""), "payload": json_safe(payload)}


def clock_base() -> int:
    """A starting sequence number above any an earlier process could have handed out."""
    return time.time_ns() // 1000


@dataclass(frozen=True)
class Page:
    """What a reader gets: the events after its cursor and whether some of those are gone."""

    events: list[dict[str, Any]]
    texts: list[str]  # the same events as JSON, encoded once when logged (frames to many readers join them)
    dropped: bool  # events newer than the cursor existed but are no longer held
    first: int  # oldest seq held (0 when empty)
    last: int  # newest seq handed out so far (the cursor to use next)


class EventStore(Protocol):
    """Where logs outlive the process (the bot's SQLiteStateStore). Rows are (seq, the event as JSON);
    `load_events` answers (base, gone_upto, rows oldest first), or None for a log never written."""

    def append_events(self, run_id: str, base: int, gone_upto: int, rows: Sequence[tuple[int, str]]) -> None: ...

    def load_events(self, run_id: str) -> tuple[int, int, Sequence[tuple[int, str]]] | None: ...


class EventLog:
    """One run's newest events. Appends and reads happen on the event loop's thread."""

    def __init__(self, run_id: str, maxlen: int = WEB.event_log_max, *, base: int | None = None) -> None:
        if maxlen < 1:
            raise ValueError("maxlen must be at least 1")
        self.run_id = run_id
        self.items: deque[dict[str, Any]] = deque(maxlen=maxlen)
        self.texts: deque[str] = deque(maxlen=maxlen)  # items[i] as JSON
        self.base = clock_base() if base is None else base
        self.last = self.base  # the newest seq handed out
        self.gone_upto = self.base  # every seq <= this that existed here has been pushed out
        self.saved = self.base  # the newest seq written to the store (when there is one)
        self.total = 0
        self.writing: dict[str, Any] | None = None  # {"after": seq, "text": words so far}: see partial()
        self._waiters: set[asyncio.Event] = set()

    @classmethod
    def restored(cls, run_id: str, maxlen: int, base: int, gone_upto: int,
                 rows: Sequence[tuple[int, str]]) -> EventLog:
        """The log as a store kept it: the same seqs, the next append numbered after the newest."""
        made = cls(run_id, maxlen, base=base)
        kept = [(seq, text) for seq, text in rows if seq > gone_upto]
        if len(kept) > maxlen:  # kept under a larger bound than this process's
            gone_upto = kept[-maxlen - 1][0]
            kept = kept[-maxlen:]
        for _, text in kept:
            made.items.append(json.loads(text))
            made.texts.append(text)
        made.gone_upto = max(base, gone_upto)
        made.last = made.saved = kept[-1][0] if kept else made.gone_upto
        return made

    def partial(self, ev: Event) -> None:
        """Words of the main thread being written: kept (no seq, no store) until the next event."""
        if PartialPayload.of(ev).subagent or not ev.text:
            return
        now = self.writing or {"after": self.last, "text": ""}
        self.writing = {"after": now["after"], "text": _clip(now["text"] + str(ev.text), WEB.event_text_max)}
        for w in self._waiters:
            w.set()

    def append(self, ev: Event) -> dict[str, Any]:
        self.writing = None
        record = event_record(self.last + 1, ev)
        text = json.dumps(record)  # before any change (the two deques stay aligned); ASCII: no stray surrogate
        if len(self.items) == self.items.maxlen:
            self.gone_upto = self.items[0]["seq"]
        self.last += 1
        self.total += 1
        self.items.append(record)
        self.texts.append(text)
        for w in self._waiters:
            w.set()
        return record

    def unsaved(self) -> list[tuple[int, str]]:
        """(seq, JSON) of the events held but not yet written, oldest first."""
        if not self.items or self.saved >= self.last:
            return []
        first = self.items[0]["seq"]
        start = max(0, self.saved - first + 1)  # seqs are contiguous in the deque
        return [(first + i, text) for i, text in enumerate(itertools.islice(self.texts, start, None), start)]

    def after(self, after: int, limit: int | None = None) -> Page:
        """Events with seq > after (at most `limit`, oldest first)."""
        first = self.items[0]["seq"] if self.items else 0
        # Seqs are contiguous in the deque, so the cursor maps to an index.
        start = 0 if not self.items or after < first else after - first + 1
        stop = None if limit is None else start + max(0, limit)
        events = list(itertools.islice(self.items, start, stop))
        texts = list(itertools.islice(self.texts, start, stop))
        lost = self.gone_upto > self.base and after < self.gone_upto  # pushed out by maxlen
        lost |= 0 < after < self.base  # a cursor from before this log existed (a restart in between)
        return Page(events, texts, lost, first, events[-1]["seq"] if events else self.last)

    def waiter(self, w: asyncio.Event | None = None) -> asyncio.Event:
        """An event (`w`, or a new one) set on every append; `release()` it when the reader goes away."""
        w = w or asyncio.Event()
        self._waiters.add(w)
        return w

    def release(self, w: asyncio.Event) -> None:
        self._waiters.discard(w)

    def poke(self) -> None:
        """Wake the readers without an event (e.g. the run ended: their next frame says so)."""
        for w in self._waiters:
            w.set()


class EventLogs:
    """The logs of the runs this process has seen, newest runs kept (`max_runs` logs in memory; with a
    store, a log pushed out of memory is read back from it when asked for again)."""

    def __init__(self, maxlen: int = WEB.event_log_max, max_runs: int = 100, *, store: EventStore | None = None,
                 flush_s: float = FLUSH_S) -> None:
        self.maxlen, self.max_runs, self.flush_s = maxlen, max_runs, flush_s
        self.logs: OrderedDict[str, EventLog] = OrderedDict()
        self.store = store
        self.errors = 0
        self.flushes = 0  # batches written
        self._dirty: dict[str, EventLog] = {}  # logs with events not written yet (held even if pushed out)
        self._timer: asyncio.TimerHandle | None = None
        self._failing = False

    def keep_in(self, store: EventStore) -> None:
        """Keep the logs in `store` from now on (before any event: the bot calls it while wiring)."""
        self.store = store

    def tap(self, run_id: str, ev: Event) -> None:
        """A `hub.taps` entry: never blocks, never raises into the run."""
        try:
            found = self.get(run_id, create=True)
            assert found is not None
            if is_partial(ev):
                found.partial(ev)
                return
            found.append(ev)
            if self.store is not None:
                self._dirty[run_id] = found
                self._arm()
        except Exception as exc:
            self.errors += 1
            log.warning("event log %s: event dropped: %r", run_id, exc)

    @overload
    def get(self, run_id: str, *, create: Literal[True]) -> EventLog: ...

    @overload
    def get(self, run_id: str, *, create: bool = False) -> EventLog | None: ...

    def get(self, run_id: str, *, create: bool = False) -> EventLog | None:
        """The run's log (read back from the store when this process has not seen it); None when there is
        none, unless `create`."""
        found = self.logs.get(run_id) or self._dirty.get(run_id) or self._load(run_id)
        if found is None:
            if not create:
                return None
            found = EventLog(run_id, self.maxlen)
        self.logs[run_id] = found
        self.logs.move_to_end(run_id)
        while len(self.logs) > self.max_runs:
            self.logs.popitem(last=False)
        return found

    def runs(self) -> Iterable[str]:
        return list(self.logs)

    # ---- the store ------------------------------------------------------------------------------
    def _load(self, run_id: str) -> EventLog | None:
        if self.store is None:
            return None
        try:
            stored = self.store.load_events(run_id)
        except Exception as exc:
            self.errors += 1
            log.warning("event log %s: cannot read it back: %r", run_id, exc)
            return None
        if stored is None:
            return None
        base, gone_upto, rows = stored
        return EventLog.restored(run_id, self.maxlen, base, gone_upto, rows)

    def _arm(self) -> None:
        if self._timer is not None:
            return
        try:
            self._timer = asyncio.get_running_loop().call_later(self.flush_s, self._due)
        except RuntimeError:  # no loop (a synchronous caller): write now
            self.flush()

    def _due(self) -> None:
        self._timer = None
        self.flush()

    def flush(self) -> None:
        """Write every event not written yet, one transaction per run. Readers call it before they are
        served, so what a client has seen is on disk. Never raises: a failed write is tried again."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self.store is None or not self._dirty:
            return
        for run_id, found in list(self._dirty.items()):
            try:
                self.store.append_events(run_id, found.base, found.gone_upto, found.unsaved())
            except Exception as exc:
                self.errors += 1
                if not self._failing:  # once per failing spell, not per batch
                    log.warning("event log %s: not written, will try again: %r", run_id, exc)
                self._failing = True
                continue
            self._failing = False
            found.saved = found.last
            self.flushes += 1
            del self._dirty[run_id]
        if self._dirty:
            self._arm()

    def close(self) -> None:
        """The last write (a clean shutdown): after it, nothing logged is only in memory."""
        self.flush()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
