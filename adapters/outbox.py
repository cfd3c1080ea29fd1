"""One outbox per thread: the only path from the hub's OutMessages to a platform Surface.

`put()` is synchronous and never blocks or raises, so it is safe inside a run's `on_event`. A
worker task drains the queue in order. While it waits for the rate budget, newer messages pile up
and are coalesced: a newer version of a queued key replaces the older one in place (status edits
collapse to the latest), consecutive new prose is merged into one post up to the text limit.
Text is defused of mass mentions and split at the platform limit; the first chunk carries the
key, so later edits of that key edit the same platform message(s) (`MessageIdCache`, outbox_ids.py,
remembers which).

Failure policy: TransientSurfaceError is retried with backoff (honouring retry_after). A
PermanentSurfaceError drops an ordinary message (reported through on_error, counted in
stats.dropped) but an `important` one (ask cards, the summary) keeps being retried, for up to
`important_give_up_s` (10 minutes by default), so it survives anything short of an outage. These
numbers, and how much it queues and remembers, are one `OutboxBounds` value.

Live messages (kind "live": words being written) are queued here like any key and shown by the
thread's `LiveStreams` (outbox_streams.py), when it accepts them. A live key still queued is replaced
by its newer text, and a stream grows at most once per `limits.stream_every_s`, so what arrives
meanwhile goes in one call; its close is not held back (the next message waits on it). A prose
message whose words this thread has shown live (`live_keys`) is not posted again; one the thread
could not stream is posted as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable

from adapters.longoutput import as_file
from adapters.outbox_ids import MessageIdCache, MessageIds
from adapters.outbox_streams import LiveStreams
from adapters.platform import OutMessage, PlatformLimits, Surface, ThreadRef, TransientSurfaceError
from adapters.ratelimit import RateBudget
from adapters.textsplit import neutralize_mentions, split_text

__all__ = ["MessageIds", "Outbox", "OutboxBounds", "OutboxStats"]

log = logging.getLogger(__name__)
_CONTINUED = "(continued above)"


@dataclasses.dataclass
class OutboxStats:
    posts: int = 0  # successful surface.post calls
    updates: int = 0  # successful surface.update calls
    retries: int = 0  # failed calls that were tried again
    dropped: int = 0  # logical messages lost: prose overflow, permanent errors, give-ups, put after close
    coalesced: int = 0  # messages folded into another before sending (same key, or merged prose)
    streams: int = 0  # successful surface.stream calls (a start, a growth, a close)


@dataclasses.dataclass(frozen=True)
class OutboxBounds:
    """How much an outbox queues and remembers, and how long it keeps trying."""

    max_prose: int = 200  # prose messages queued at most; older ones are dropped past it
    give_up_s: float = 120.0  # how long an ordinary message is retried
    important_give_up_s: float = 600.0  # how long an important one (ask cards, the summary) is retried
    backoff_max_s: float = 30.0  # the longest wait between two tries
    max_known: int = 2048  # keys whose platform message ids are kept in memory (the rest: the store)


class Outbox:
    def __init__(self, surface: Surface, thread: ThreadRef, *, clock: Callable[[], float] = time.monotonic,
                 sleeper: Callable[[float], Awaitable[object]] = asyncio.sleep,
                 limits: PlatformLimits | None = None,
                 on_error: Callable[[OutMessage, BaseException], object] | None = None,
                 on_sent: Callable[[OutMessage, str], object] | None = None,
                 store: MessageIds | None = None, budget: RateBudget | None = None,
                 bounds: OutboxBounds = OutboxBounds()) -> None:
        self.surface, self.thread = surface, thread
        self.limits = limits or surface.limits
        self.stats = OutboxStats()
        self._clock, self._sleeper = clock, sleeper
        self._on_error, self._on_sent = on_error, on_sent
        self._budget = budget or RateBudget(self.limits, clock)
        self._max_prose, self._give_up_s, self._important_give_up_s = (
            bounds.max_prose, bounds.give_up_s, bounds.important_give_up_s)
        self._backoff_max_s = bounds.backoff_max_s
        self._pending: list[OutMessage] = []
        self._ids = MessageIdCache(thread, store, bounds.max_known)  # the platform messages showing each key
        self._closed = False
        self._task: asyncio.Task[None] | None = None
        self._idle = asyncio.Event()
        self._idle.set()
        self._nudge = asyncio.Event()  # a paced live message was closed: stop waiting for its pace
        self._live = LiveStreams(surface, thread, limits=self.limits, budget=self._budget, stats=self.stats,
                                 unqueue=self._unqueue, clock=clock, sleeper=sleeper, give_up_s=self._give_up_s,
                                 backoff_max_s=self._backoff_max_s, max_known=bounds.max_known, store=store)
        try:
            self._loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            self._loop = None
        if self._live.has_orphans:  # closed first, before anything queued
            self._idle.clear()
            self._start()

    # ---- producer side (synchronous, never raises) ----
    def put(self, msg: OutMessage) -> None:
        """Queue a message, on the chat loop (events cross onto it once, in the transport: RunEngine.on_event).
        Never blocks, never raises."""
        try:
            if self._loop is None:
                with contextlib.suppress(RuntimeError):
                    self._loop = asyncio.get_running_loop()
            self._enqueue(msg)
        except Exception as exc:  # a bug: report, never raise into the run
            self._report(msg, exc)

    @property
    def depth(self) -> int:
        """Messages queued and not yet delivered (read by the metrics)."""
        return len(self._pending)

    def message_id(self, key: str) -> str | None:
        """The platform id of the message showing `key`, if it was posted (or known from the store)."""
        ids = self._ids.known(key)
        return ids[0] if ids else None

    async def flush(self) -> None:
        """Wait until everything queued so far has been delivered or given up."""
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        self._start()
        while True:
            await self._idle.wait()
            if not self._pending:
                return
            await asyncio.sleep(0)  # queued just now, before the worker cleared the idle flag

    async def close(self, *, drain: bool = True) -> None:
        """Stop accepting messages; deliver what is queued (drain) or abandon it, then stop the worker."""
        self._closed = True
        if not drain:
            self.stats.dropped += len(self._pending)
            self._pending.clear()
            if self._task is not None:
                self._task.cancel()
        task = self._task
        if task is not None:
            try:
                await task
            except asyncio.CancelledError:
                if not task.cancelled():
                    raise
        self._idle.set()

    @property
    def streaming(self) -> bool:
        """Whether this thread shows words as they are written (its surface streams and has not refused)."""
        return self._live.enabled

    def _enqueue(self, msg: OutMessage) -> None:
        if msg.kind == "live" and not self._live.accepts(msg.key):
            return  # this thread shows the words once complete (the prose), or gave up streaming this text
        if self._closed:
            self.stats.dropped += 1
            self._report(msg, RuntimeError("outbox is closed"))
            return
        for i, old in enumerate(self._pending):
            if old.key == msg.key:
                # Same key still queued: the newer content wins, in the older one's place.
                self._pending[i] = dataclasses.replace(msg, replace=old.replace and msg.replace,
                                                       important=old.important or msg.important)
                self.stats.coalesced += 1
                if msg.kind == "live" and msg.live in ("done", "cut"):
                    self._nudge.set()  # the close is not held back by the pace (the next message waits on it)
                break
        else:
            self._pending.append(msg)
            if msg.kind == "prose":
                self._trim_prose()
        self._idle.clear()
        self._start()

    def _trim_prose(self) -> None:
        prose = [m for m in self._pending if m.kind == "prose" and not m.important]
        for victim in prose[: max(0, len(prose) - self._max_prose)]:
            self._pending.remove(victim)  # oldest first: the newest speech matters most
            self.stats.dropped += 1

    def _unqueue(self, which: Callable[[OutMessage], bool]) -> list[OutMessage]:
        """Take the queued messages `which` picks off the queue (a live text given up); return them in order."""
        taken = [m for m in self._pending if which(m)]
        self._pending = [m for m in self._pending if not which(m)]
        return taken

    def _start(self) -> None:
        if self._task is None and self._loop is not None and not self._loop.is_closed():
            self._task = self._loop.create_task(self._run(), name=f"outbox {self.thread}")

    # ---- worker side ----
    async def _run(self) -> None:
        await self._live.close_orphans()
        while True:
            if not self._pending:
                self._idle.set()
                self._task = None  # an idle thread costs no task: the next message starts a worker again
                return
            self._idle.clear()
            head = self._pending[0]
            try:
                wait = self._wait_for(head)
                if wait > 0:
                    # More messages may coalesce meanwhile; a live message's pace ends early once it is complete.
                    await (self._pause(wait) if head.kind == "live" else self._sleeper(wait))
                    continue
                taken = self._take()
                if taken is None:
                    continue
                msg = head = taken
                await (self._live.stream(msg) if msg.kind == "live" else self._deliver(msg))
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a bug in a surface, the store or here: keep the thread moving
                if self._pending and self._pending[0] is head:
                    self._pending.pop(0)
                self.stats.dropped += 1
                self._report(head, exc)

    async def _pause(self, wait: float) -> None:
        self._nudge.clear()
        slept = asyncio.ensure_future(self._sleeper(wait))
        nudged = asyncio.ensure_future(self._nudge.wait())
        try:
            await asyncio.wait({slept, nudged}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (slept, nudged):
                task.cancel()
            await asyncio.gather(slept, nudged, return_exceptions=True)

    def _is_edit(self, msg: OutMessage) -> bool:
        if msg.kind == "live":
            return self._live.showing(msg.key)
        return msg.replace and self._ids.known(msg.key) is not None

    def _wait_for(self, head: OutMessage) -> float:
        live = head.kind == "live"
        op = ("grow" if live else "update") if self._is_edit(head) else "start" if live else "post"
        wait = self._budget.bucket(op).wait_time()
        growing = head.kind == "live" and head.live in ("open", "said")
        pace = self._live.pace_wait(head.key) if growing else None
        if pace is not None:  # growing: at most once per stream_every_s (the close goes at once)
            wait = max(wait, pace)
        return wait

    def _shown_as_written(self, msg: OutMessage) -> bool:
        """Prose whose every part this thread showed live, whole: it is on the thread already."""
        return msg.kind == "prose" and bool(msg.live_keys) and all(self._live.shown_whole(k) for k in msg.live_keys)

    def _take(self) -> OutMessage | None:
        msg = self._pending.pop(0)
        if self._shown_as_written(msg):
            self.stats.coalesced += 1
            return None
        if msg.kind != "prose" or msg.title or msg.fields or msg.buttons or self._is_edit(msg):
            return msg
        text = neutralize_mentions(msg.text)
        while self._pending:
            nxt = self._pending[0]
            if nxt.kind != "prose" or nxt.title or nxt.fields or nxt.buttons or self._is_edit(nxt):
                break
            if self._shown_as_written(nxt):
                break
            more = neutralize_mentions(nxt.text)
            if len(text) + 2 + len(more) > self.limits.text_max:
                break
            self._pending.pop(0)
            text = f"{text}\n\n{more}"
            msg = dataclasses.replace(msg, important=msg.important or nxt.important)
            self.stats.coalesced += 1
        return dataclasses.replace(msg, text=text)

    def _parts(self, msg: OutMessage) -> list[OutMessage]:
        chunks = split_text(neutralize_mentions(msg.text), self.limits.text_max) or [""]
        if (long := as_file(msg, self.limits, len(chunks))) is not None:  # a preview and the text as a file
            msg, chunks = long, split_text(neutralize_mentions(long.text), self.limits.text_max) or [""]
        fields = [(neutralize_mentions(k), neutralize_mentions(v)) for k, v in msg.fields]
        parts = []
        for k, chunk in enumerate(chunks):
            first, last = k == 0, k == len(chunks) - 1
            parts.append(dataclasses.replace(
                msg, key=msg.key if first else f"{msg.key}#{k + 1}", text=chunk,
                title=neutralize_mentions(msg.title) if first else "", fields=fields if first else [],
                buttons=msg.buttons if last else []))  # buttons sit under the end of the text
        return parts

    async def _deliver(self, msg: OutMessage) -> None:
        old = (self._ids.known(msg.key) or []) if msg.replace else []
        parts = self._parts(msg)
        ids: list[str] = []
        for k, part in enumerate(parts):
            mid = await self._call(part, old[k] if k < len(old) else None)
            if mid is None:  # given up: keep what was sent so far addressable
                break
            ids.append(mid)
        if not ids:
            return
        if len(ids) == len(parts):
            for extra in old[len(parts):]:  # the message shrank: blank the leftover chunks
                filler = dataclasses.replace(msg, key=f"{msg.key}#x", text=_CONTINUED, title="", fields=[],
                                             buttons=[], important=False)
                await self._call(filler, extra)
            ids.extend(old[len(parts):])
        self._ids.remember(msg.key, ids)
        if self._on_sent is not None:
            try:
                self._on_sent(msg, ids[0])
            except Exception as exc:
                self._report(msg, exc)

    async def _call(self, part: OutMessage, message_id: str | None) -> str | None:
        """One post or update, paced and retried; the message id, or None when given up."""
        started = self._clock()
        limit = self._important_give_up_s if part.important else self._give_up_s
        attempt = 0
        while True:
            op = "update" if message_id else "post"
            bucket = self._budget.bucket(op)
            while (wait := bucket.wait_time()) > 0:
                await self._sleeper(wait)
            bucket.take()
            delay: float | None = None
            try:
                if message_id:
                    await self.surface.update(self.thread, message_id, part)
                    self.stats.updates += 1
                    return message_id
                new_id = await self.surface.post(self.thread, part)
                self.stats.posts += 1
                return new_id
            except asyncio.CancelledError:
                raise
            except TransientSurfaceError as exc:
                error: BaseException = exc
                if exc.retry_after is not None:
                    delay = max(0.0, exc.retry_after)
                    bucket.block_for(delay)
            except Exception as exc:  # PermanentSurfaceError, or a surface bug treated alike
                error = exc
                if message_id:
                    # The old message is gone or uneditable: show the new content as a fresh post.
                    log.info("outbox: update of %s failed (%r); posting anew", part.key, exc)
                    message_id = None
                    self.stats.retries += 1
                    continue
                if not part.important:
                    self.stats.dropped += 1
                    self._report(part, exc)
                    return None
            if delay is None:
                delay = min(self._backoff_max_s, 2.0 ** attempt)
            attempt += 1
            if self._clock() - started + delay > limit:
                self.stats.dropped += 1
                self._report(part, error)
                return None
            self.stats.retries += 1
            await self._sleeper(delay)

    def _report(self, msg: OutMessage, exc: BaseException) -> None:
        level = logging.ERROR if msg.important else logging.WARNING
        log.log(level, "outbox %s: message %s (%s) not delivered: %r", self.thread, msg.key, msg.kind, exc)
        if self._on_error is not None:
            try:
                self._on_error(msg, exc)
            except Exception:
                log.exception("outbox on_error callback failed")

