"""Per-run event logs for the HTTP API: the seed's "sequence number + polling" front end.

Every event of every run reaches `EventLogs.tap` (a `hub.taps` entry: synchronous, on the loop,
never raises). Each run keeps the newest `maxlen` events as plain JSON-safe dicts — kind, text,
tool, payload; never the SDK object behind them — in a `deque(maxlen=…)`, so a log's memory does
not grow with the length of the run. Readers ask for "everything after seq N" and are told when
some of it is no longer held (`dropped`).

Sequence numbers start from the wall clock in microseconds when a log is created, so they keep
increasing across bot restarts (a woken run gets a new log): a client that kept its last seq never
mistakes the new log's events for ones it has seen. Readers wait on an `asyncio.Event` the log sets
on every append (`waiter()`), then read by cursor: no per-reader queue can grow without bound.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import math
import time
from collections import OrderedDict, deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from adapters.platform.limits import WEB
from flower_core import Event

log = logging.getLogger(__name__)

__all__ = ["EventLog", "EventLogs", "Page", "event_record", "json_safe"]

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
        self.total = 0
        self._waiters: set[asyncio.Event] = set()

    def append(self, ev: Event) -> dict[str, Any]:
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
    """The logs of the runs this process has seen, newest runs kept (`max_runs` logs at most)."""

    def __init__(self, maxlen: int = WEB.event_log_max, max_runs: int = 100) -> None:
        self.maxlen, self.max_runs = maxlen, max_runs
        self.logs: OrderedDict[str, EventLog] = OrderedDict()
        self.errors = 0

    def tap(self, run_id: str, ev: Event) -> None:
        """A `hub.taps` entry: never blocks, never raises into the run."""
        try:
            self.get(run_id, create=True).append(ev)  # type: ignore[union-attr]
        except Exception as exc:
            self.errors += 1
            log.warning("event log %s: event dropped: %r", run_id, exc)

    def get(self, run_id: str, *, create: bool = False) -> EventLog | None:
        found = self.logs.get(run_id)
        if found is not None:
            self.logs.move_to_end(run_id)
            return found
        if not create:
            return None
        made = self.logs[run_id] = EventLog(run_id, self.maxlen)
        while len(self.logs) > self.max_runs:
            self.logs.popitem(last=False)
        return made

    def runs(self) -> Iterable[str]:
        return list(self.logs)
