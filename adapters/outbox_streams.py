"""A thread's live messages (kind "live": words being written), shown through `Surface.stream`.

```
Outbox ──stream(msg)──▶ LiveStreams ──stream(thread, id, LiveText)──▶ Surface
   ▲                        │
   └──unqueue(which)────────┘   a text given up, or streaming refused: its queued live messages go
```

The `Outbox` owns one `LiveStreams` and keeps the queue: it coalesces a live key still queued into
its newer text, paces a growing stream to once per `limits.stream_every_s` (`pace_wait`) and skips
prose this thread has shown live (`shown_whole`). This module makes the calls: a live key is shown
as a streamed message, started, grown (words, its tasks) and closed; a text longer than `text_max`
closes it and continues in a new one. A live message goes to `Surface.stream` when the surface has
one of its own, and is dropped at once when it has not (`accepts`).

A text this thread could not stream (the stream failed) is given up: its words follow as the prose,
posted as before. A refusal (`StreamRefused`) turns streaming off for the thread, said once in the
log per platform.

The ids of the thread's messages still streaming are kept in the store (key `OPEN_STREAMS`): the
`LiveStreams` made for the thread after a restart first closes those the earlier process left open
(`close_orphans`), with a short note (`LiveText.earlier`), so no message stays "streaming" forever.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from adapters.lru import LRU
from adapters.outbox_ids import MessageIds
from adapters.platform import (
    LiveText,
    OutMessage,
    PlatformLimits,
    StreamRefused,
    Surface,
    Task,
    ThreadRef,
    TransientSurfaceError,
    as_platform,
    provides,
)
from adapters.ratelimit import RateBudget
from adapters.textsplit import neutralize_mentions

__all__ = ["CUT_NOTE", "OPEN_STREAMS", "LiveStreams", "StreamCounts"]

# The outbox's logger: what its streams say reads, and is filtered, as the outbox's lines always were.
log = logging.getLogger("adapters.outbox")
_REFUSALS_LOGGED: set[str] = set()  # platforms whose refusal to stream was said in the log (once each)
OPEN_STREAMS = "live:open"  # the store key of a thread's messages still streaming (their ids, space-separated)
# Per store: (thread, id) of the streams this process opened there and has not closed (the store's other
# outboxes for a thread are streaming those: not orphans).
_OPEN_HERE: weakref.WeakKeyDictionary[Any, set[tuple[str, str]]] = weakref.WeakKeyDictionary()
CUT_NOTE = "cut off by a restart"


class StreamCounts(Protocol):
    """The counters stream calls add to (the outbox's `OutboxStats`)."""

    streams: int  # successful surface.stream calls
    retries: int  # failed calls that were tried again


# Removes the queued messages the predicate picks and returns them (the outbox's queue, in order).
Unqueue = Callable[[Callable[[OutMessage], bool]], list[OutMessage]]


@dataclasses.dataclass
class _Stream:
    """One live key as this thread shows it: the streamed message now growing and what it shows."""

    message_id: str | None = None
    offset: int = 0  # where in the live text this message starts (earlier parts closed at text_max)
    sent: int = 0  # how much of the text from offset the message shows
    tasks: tuple[Task, ...] = ()  # the tasks it shows
    at: float = float("-inf")  # when it last grew


class LiveStreams:
    """The live messages of one thread: what is streaming, what was shown whole, what is left open."""

    def __init__(self, surface: Surface, thread: ThreadRef, *, limits: PlatformLimits, budget: RateBudget,
                 stats: StreamCounts, unqueue: Unqueue, clock: Callable[[], float],
                 sleeper: Callable[[float], Awaitable[object]], give_up_s: float, backoff_max_s: float,
                 max_known: int, store: MessageIds | None = None) -> None:
        self.surface, self.thread, self.limits = surface, thread, limits
        self._budget, self._stats, self._unqueue = budget, stats, unqueue
        self._clock, self._sleeper = clock, sleeper
        self._give_up_s, self._backoff_max_s = give_up_s, backoff_max_s
        self._store = store
        self._enabled = provides(surface, "stream")
        self._streams: dict[str, _Stream] = {}  # live keys being shown
        self._shown_live: LRU[str, bool] = LRU(max_known)  # live keys shown whole, as written (or not: False)
        self._open_ids: set[str] = set()  # this thread's streamed messages not closed yet (kept in the store)
        self._orphans = self._left_open()  # … and those an earlier process left open: closed first

    # ---- what the outbox asks ----
    @property
    def enabled(self) -> bool:
        """Whether this thread shows words as they are written (its surface streams and has not refused)."""
        return self._enabled

    def accepts(self, key: str) -> bool:
        """Whether a live message for `key` is worth queueing: the thread streams and kept this text live
        (else the thread shows the words once complete, as the prose)."""
        return self._enabled and self._shown_live.get(key) is not False

    def showing(self, key: str) -> bool:
        """Whether `key` has a stream under way (the outbox waits on the "grow" budget for it, not "start")."""
        return key in self._streams

    def pace_wait(self, key: str) -> float | None:
        """How long the stream of `key` must wait before it grows again (at most once per stream_every_s);
        None when `key` is not being shown."""
        stream = self._streams.get(key)
        return None if stream is None else stream.at + self.limits.stream_every_s - self._clock()

    def shown_whole(self, key: str) -> bool:
        """Whether the words of `key` are on the thread, whole, as they were streamed."""
        return bool(self._shown_live.get(key))

    @property
    def has_orphans(self) -> bool:
        """Whether streams an earlier process left open are still to be closed."""
        return bool(self._orphans)

    # ---- live messages ----
    async def stream(self, msg: OutMessage) -> None:
        """Show the live message's newest text: start, grow or close its streamed message(s)."""
        st = self._streams.setdefault(msg.key, _Stream())
        done = msg.live in ("done", "cut")
        text = neutralize_mentions(msg.text)
        while len(text) - st.offset > self.limits.text_max:  # this message is full: close it, go on in a new one
            cut = st.offset + _cut_at(text[st.offset:], self.limits.text_max)
            if not await self._stream_call(msg, st, text[st.offset:cut], done=True, tasks=()):
                return
            st.message_id, st.offset, st.sent, st.tasks = None, cut, 0, ()
        piece = text[st.offset:]
        unchanged = st.message_id is not None and not done and len(piece) <= st.sent and msg.tasks == st.tasks
        note = "stopped before the end" if msg.live == "cut" else ""
        if not unchanged and not await self._stream_call(msg, st, piece, done=done, note=note, tasks=msg.tasks):
            return
        if msg.live in ("said", "done"):
            self._shown_live.put(msg.key, True)  # its words are on the thread, whole
        if done:
            self._streams.pop(msg.key, None)
            if msg.live == "cut":
                self._shown_live.put(msg.key, False)

    async def _stream_call(self, msg: OutMessage, st: _Stream, piece: str, *, done: bool, note: str = "",
                           tasks: tuple[Task, ...]) -> bool:
        """One stream call, paced and retried; False when this text is given up (the prose shows it)."""
        start, key = st.message_id is None, msg.key
        if not piece.strip() and not tasks and start:
            return True  # nothing to show yet
        live = LiveText(key, piece, piece[st.sent:] if not start else piece, done=done, note=note, owner=msg.owner,
                        tasks=tasks, plan=msg.plan, title=msg.title)
        started = self._clock()
        attempt = 0
        while True:
            bucket = self._budget.bucket("start" if start else "grow")
            while (wait := bucket.wait_time()) > 0:
                await self._sleeper(wait)
            bucket.take()
            try:
                st.message_id = await as_platform(self.surface).stream(self.thread, st.message_id, live)
                st.sent, st.tasks, st.at = len(piece), tasks, self._clock()
                self._opened(st.message_id, not done)
                self._stats.streams += 1
                return True
            except asyncio.CancelledError:
                raise
            except StreamRefused as exc:
                self._refused(exc)
                return False
            except TransientSurfaceError as exc:
                delay = exc.retry_after if exc.retry_after is not None else min(self._backoff_max_s, 2.0 ** attempt)
                bucket.block_for(delay)
                attempt += 1
                if self._clock() - started + delay <= self._give_up_s:
                    self._stats.retries += 1
                    await self._sleeper(delay)
                    continue
                error: BaseException = exc
            except Exception as exc:  # PermanentSurfaceError (the message went away), or a surface bug
                error = exc
            log.warning("outbox %s: streaming %s given up (%r); its words follow as a message", self.thread, key,
                        error)
            self._give_up(key)
            return False

    def _give_up(self, key: str) -> None:
        st = self._streams.pop(key, None)
        if st is not None and st.message_id is not None:
            self._opened(st.message_id, False)  # not ours to close any more (it failed): never retried
        self._shown_live.put(key, False)
        self._unqueue(lambda m: m.kind == "live" and m.key == key)

    def _refused(self, exc: BaseException) -> None:
        """The platform will not stream here: this thread shows words as complete messages from now on."""
        self._enabled = False
        if self.surface.name not in _REFUSALS_LOGGED:
            _REFUSALS_LOGGED.add(self.surface.name)
            log.warning("%s refused to stream a message (%s): its threads show the agent's words once each "
                        "message is complete", self.surface.name, exc)
        for key in list(self._streams):
            self._give_up(key)
        for m in self._unqueue(lambda m: m.kind == "live"):
            self._shown_live.put(m.key, False)

    # ---- streams left open by an earlier process ----
    def _left_open(self) -> list[str]:
        if self._store is None:
            return []
        try:
            ids = (self._store.get_message(self.thread, OPEN_STREAMS) or "").split()
            # Another outbox of this process may be streaming in the thread right now: those are not orphans.
            here = _OPEN_HERE.get(self._store, set())
            return [i for i in ids if (str(self.thread), i) not in here]
        except Exception as exc:
            log.warning("outbox store lookup failed for %s %s: %r", self.thread, OPEN_STREAMS, exc)
            return []

    def _opened(self, message_id: str, still: bool) -> None:
        """Keep the thread's open streams in the store (before the next call: a kill leaves them known)."""
        before = set(self._open_ids)
        (self._open_ids.add if still else self._open_ids.discard)(message_id)
        if self._store is not None and self._open_ids != before:
            try:
                mine = _OPEN_HERE.setdefault(self._store, set())
                (mine.add if still else mine.discard)((str(self.thread), message_id))
                here = {i for t, i in mine if t == str(self.thread)}  # the thread's other outboxes' too
                self._store.save_message(self.thread, OPEN_STREAMS, " ".join(sorted(self._open_ids | here)) or "-")
            except Exception as exc:
                log.warning("outbox store save failed for %s %s: %r", self.thread, OPEN_STREAMS, exc)

    async def close_orphans(self) -> None:
        """Close, in order, the streams an earlier process left open (the outbox's worker does this first)."""
        while self._orphans:
            await self._close_orphan(self._orphans.pop(0))

    async def _close_orphan(self, message_id: str) -> None:
        """Close a message an earlier process was streaming: its words stay, a short note ends it."""
        if message_id == "-":
            return
        self._open_ids.add(message_id)
        live = LiveText(f"{OPEN_STREAMS}:{message_id}", "", "", done=True, note=CUT_NOTE, earlier=True)
        started, attempt = self._clock(), 0
        while True:
            try:
                await as_platform(self.surface).stream(self.thread, message_id, live)
                self._stats.streams += 1
                break
            except asyncio.CancelledError:
                raise
            except TransientSurfaceError as exc:
                delay = exc.retry_after if exc.retry_after is not None else min(self._backoff_max_s, 2.0 ** attempt)
                attempt += 1
                if self._clock() - started + delay <= self._give_up_s:
                    await self._sleeper(delay)
                    continue
                log.warning("outbox %s: could not close stream %s left by a restart: %r", self.thread, message_id, exc)
                break
            except Exception as exc:  # gone, or never closable (the platform forgot it): nothing left open
                log.info("outbox %s: stream %s left by a restart not closed: %r", self.thread, message_id, exc)
                break
        self._opened(message_id, False)


def _cut_at(text: str, limit: int) -> int:
    """Where to end a full streamed message: after the last line break or space in its second half."""
    head = text[:limit]
    for sep in ("\n", " "):
        at = head.rfind(sep)
        if at >= limit // 2:
            return at + 1
    return limit
