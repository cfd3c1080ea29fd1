"""MemorySurface: a recording, in-memory chat platform for tests, benches and demos.

Every call is recorded (`calls`); `messages` holds the current content of every posted message
in post order, so a test reads the thread as a person would see it. `storm()` makes the next
calls fail with a 429-style TransientSurfaceError, like a platform shedding load.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

from adapters.platform import (
    MEMORY,
    LiveText,
    OutMessage,
    PermanentSurfaceError,
    PlatformLimits,
    PlatformSurface,
    StreamRefused,
    ThreadRef,
    TransientSurfaceError,
)

__all__ = ["MemorySurface", "Posted", "SurfaceCall"]


@dataclass(frozen=True)
class SurfaceCall:
    op: str  # post / update / notify / stream
    thread: ThreadRef
    message_id: str = ""
    msg: OutMessage | None = None
    user: str = ""
    text: str = ""


@dataclass
class Posted:
    message_id: str
    thread: ThreadRef
    msg: OutMessage
    versions: int = 1


@dataclass
class MemorySurface(PlatformSurface):
    name: str = "memory"
    limits: PlatformLimits = MEMORY
    record: bool = True  # False: no call log (long benches)
    keep: bool = True  # False: no message contents either, only counters (memory benches)
    calls: list[SurfaceCall] = field(default_factory=list)
    messages: dict[str, Posted] = field(default_factory=dict)
    notices: list[SurfaceCall] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=lambda: {"post": 0, "update": 0, "notify": 0, "failed": 0})
    on_call: Callable[[SurfaceCall], None] | None = None
    dm: bool = False  # True: direct() opens a DM thread per user, as Slack and Discord do
    streams: bool = True  # False: stream() refuses, as a platform that cannot stream (the fallback)
    stream_calls: int = 0  # stream() calls that showed something (start, grow, close)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _storm: int = 0
    _storm_retry_after: float | None = 1.0

    # ---- fault injection ----------------------------------------------------------------------
    def storm(self, calls: int, retry_after: float | None = 1.0) -> None:
        """The next `calls` post/update calls fail with a transient "429 Too Many Requests"."""
        self._storm, self._storm_retry_after = calls, retry_after

    def _maybe_fail(self) -> None:
        if self._storm > 0:
            self._storm -= 1
            self.counts["failed"] += 1
            raise TransientSurfaceError("429 Too Many Requests (simulated)", retry_after=self._storm_retry_after)

    def _note(self, call: SurfaceCall) -> None:
        if self.record:
            self.calls.append(call)
        if self.on_call is not None:
            self.on_call(call)

    # ---- the Surface contract (place: the fallback, its name) ------------------------------------
    async def post(self, thread: ThreadRef, msg: OutMessage) -> str:
        self._maybe_fail()
        mid = f"m{next(self._ids)}"
        if self.keep:
            self.messages[mid] = Posted(mid, thread, msg)
        self.counts["post"] += 1
        self._note(SurfaceCall("post", thread, mid, msg))
        return mid

    async def update(self, thread: ThreadRef, message_id: str, msg: OutMessage) -> None:
        self._maybe_fail()
        posted = self.messages.get(message_id)
        if self.keep:
            if posted is None or posted.thread != thread:
                raise PermanentSurfaceError(f"message {message_id} not found in {thread}")
            posted.msg, posted.versions = msg, posted.versions + 1
        self.counts["update"] += 1
        self._note(SurfaceCall("update", thread, message_id, msg))

    async def notify(self, thread: ThreadRef, user: str, text: str) -> None:
        call = SurfaceCall("notify", thread, user=user, text=text)
        self.counts["notify"] += 1
        self.notices.append(call)
        self._note(call)

    async def direct(self, user: str) -> ThreadRef | None:
        """A direct-message thread with one user (None when this double plays a platform without DMs)."""
        return ThreadRef(self.name, f"dm-{user}", "") if self.dm else None

    async def stream(self, thread: ThreadRef, message_id: str | None, live: LiveText) -> str:
        """A message being written: its current text kept as a "live" message (open, then done)."""
        if not self.streams:
            raise StreamRefused("this memory platform does not stream")
        self._maybe_fail()
        state = "done" if live.done else "open"
        shown = self.messages.get(message_id) if message_id is not None else None
        if live.earlier and shown is not None:  # an earlier process left it streaming: keep its words
            live = dataclasses.replace(live, text=shown.msg.text, tasks=shown.msg.tasks, plan=shown.msg.plan,
                                       title=shown.msg.title)
        text = f"{live.text}\n\n_{live.note}_" if live.done and live.note else live.text
        msg = OutMessage(live.key, "live", text, live=state, tasks=live.tasks, plan=live.plan, title=live.title)
        if message_id is None:
            message_id = f"m{next(self._ids)}"
            if self.keep:
                self.messages[message_id] = Posted(message_id, thread, msg)
        elif self.keep:
            posted = self.messages.get(message_id)
            if posted is None or posted.thread != thread or posted.msg.live != "open":
                raise PermanentSurfaceError(f"message {message_id} is not streaming in {thread}")
            posted.msg, posted.versions = dataclasses.replace(msg), posted.versions + 1
        self.stream_calls += 1
        self._note(SurfaceCall("stream", thread, message_id, msg, text=live.new))
        return message_id

    # ---- reading the thread back --------------------------------------------------------------
    @property
    def platform_calls(self) -> int:
        return self.counts["post"] + self.counts["update"]

    def thread(self, thread: ThreadRef | None = None, kind: str | None = None) -> list[OutMessage]:
        """Current content of the thread's messages, in post order (optionally one kind)."""
        return [p.msg for p in self.messages.values()
                if (thread is None or p.thread == thread) and (kind is None or p.msg.kind == kind)]

    def find(self, key_prefix: str, thread: ThreadRef | None = None) -> list[Posted]:
        return [p for p in self.messages.values()
                if p.msg.key.startswith(key_prefix) and (thread is None or p.thread == thread)]

    def notices_for(self, user: str) -> list[str]:
        return [c.text for c in self.notices if c.user == user]
