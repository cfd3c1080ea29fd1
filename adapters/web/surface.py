"""WebSurface: the web page as a chat platform — we are the platform, so we keep the messages.

Each thread's messages live in a small SQLite table (a file under the bot's root, or memory):
message id -> current content (`render.message_json`, stamped), in post order. Every post or edit
takes the next number of one counter (`seq`), which is also kept, so a page that remembers the
highest seq it has applied asks for "changes after N" and gets exactly the messages changed since —
current versions, in post order — with no duplicate and no gap, even across a bot restart (the
counter continues from the file). Pages are told that something changed by an asyncio.Event per
watcher (`watch()`), and read by cursor: a slow page costs a query, never an unbounded queue.

`notify()` (an ephemeral line for the actor) is not stored: it goes to the pages watching the
thread at that moment, like Slack's ephemeral messages.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from adapters.platform import (
    TASK_STATES,
    WEB,
    LiveText,
    OutMessage,
    PermanentSurfaceError,
    PlatformSurface,
    Task,
    ThreadRef,
)
from adapters.web.render import message_json, stamped

__all__ = ["WEB", "Watcher", "WebSurface"]

log = logging.getLogger(__name__)

NOTICES_KEPT = 20  # ephemeral lines a watcher holds until its page reads them

_SCHEMA = """
CREATE TABLE IF NOT EXISTS messages (
    id TEXT PRIMARY KEY,          -- "w<pos>"
    thread TEXT NOT NULL,         -- str(ThreadRef)
    pos INTEGER NOT NULL,         -- the seq it was posted at: post order
    seq INTEGER NOT NULL,         -- the seq of its latest version
    body TEXT NOT NULL            -- message_json() of the latest version
);
CREATE INDEX IF NOT EXISTS messages_by_thread ON messages (thread, seq);
"""


@dataclass(eq=False)  # identity: watchers live in a set
class Watcher:
    """One page's interest in threads: `wake` is set when any of them changes or gets a notice."""

    threads: set[str] = field(default_factory=set)
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    notices: list[dict[str, str]] = field(default_factory=list)


class WebSurface(PlatformSurface):
    """The web page's surface. `direct` is the fallback (None): the page has no direct messages, so a
    question on a run started here waits on the page."""

    name = "web"
    place = "the web page"  # how cards of a run shown in several places name this one
    limits = WEB

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = path  # None: in memory (tests, benches); else a file created on first use
        self._db: sqlite3.Connection | None = None
        self._seq = 0
        self._watchers: set[Watcher] = set()
        # Called with (thread, message) after every post/update, e.g. to refresh the runs list.
        self.listeners: list[Callable[[ThreadRef, dict[str, Any]], object]] = []

    # ---- storage --------------------------------------------------------------------------------
    @property
    def db(self) -> sqlite3.Connection:
        if self._db is None:
            if self.path is None:
                target = ":memory:"
            else:
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
                target = str(self.path)
            db = sqlite3.connect(target, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.executescript(_SCHEMA)
            self._seq = int(db.execute("SELECT COALESCE(MAX(seq), 0) FROM messages").fetchone()[0])
            self._db = db
        return self._db

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    @property
    def head(self) -> int:
        """The newest seq handed out (0 before anything was posted)."""
        _ = self.db
        return self._seq

    def changes(self, thread: ThreadRef | str, after: int = 0) -> list[dict[str, Any]]:
        """Messages of the thread changed after seq `after`, current versions, in post order."""
        rows = self.db.execute("SELECT id, pos, seq, body FROM messages WHERE thread = ? AND seq > ? ORDER BY pos",
                               (str(thread), after)).fetchall()
        return [{**json.loads(body), "id": mid, "pos": pos, "seq": seq} for mid, pos, seq, body in rows]

    def thread_head(self, thread: ThreadRef | str) -> int:
        row = self.db.execute("SELECT COALESCE(MAX(seq), 0) FROM messages WHERE thread = ?", (str(thread),)).fetchone()
        return int(row[0])

    # ---- the Surface contract ---------------------------------------------------------------------
    async def post(self, thread: ThreadRef, msg: OutMessage) -> str:
        body = stamped(message_json(msg))
        try:
            db = self.db
            self._seq += 1
            mid = f"w{self._seq}"
            db.execute("INSERT INTO messages (id, thread, pos, seq, body) VALUES (?, ?, ?, ?, ?)",
                       (mid, str(thread), self._seq, self._seq, json.dumps(body)))
        except sqlite3.Error as exc:  # a full disk is not going to heal by retrying the same call
            raise PermanentSurfaceError(f"web thread store: {exc}") from exc
        self._changed(thread, body)
        return mid

    async def update(self, thread: ThreadRef, message_id: str, msg: OutMessage) -> None:
        body = stamped(message_json(msg))
        try:
            db = self.db
            self._seq += 1
            cur = db.execute("UPDATE messages SET seq = ?, body = ? WHERE id = ? AND thread = ?",
                             (self._seq, json.dumps(body), message_id, str(thread)))
        except sqlite3.Error as exc:
            raise PermanentSurfaceError(f"web thread store: {exc}") from exc
        if cur.rowcount != 1:
            raise PermanentSurfaceError(f"message {message_id} not found in {thread}")
        self._changed(thread, body)

    async def stream(self, thread: ThreadRef, message_id: str | None, live: LiveText) -> str:
        """A message being written: stored and shown like any message (kind "live", `live` open, then done),
        so a page sees its words grow over the WebSocket it already has, and one opened later sees them too."""
        if live.earlier and message_id is not None:  # an earlier process left it streaming: keep its words
            return await self._close_earlier(thread, message_id, live.note)
        text = f"{live.text}\n\n_{live.note}_" if live.done and live.note else live.text
        msg = OutMessage(live.key, "live", text, live="done" if live.done else "open", tasks=live.tasks,
                         plan=live.plan, title=live.title)
        if message_id is None:
            return await self.post(thread, msg)
        await self.update(thread, message_id, msg)
        return message_id

    async def _close_earlier(self, thread: ThreadRef, message_id: str, note: str) -> str:
        try:
            row = self.db.execute("SELECT body FROM messages WHERE id = ? AND thread = ?",
                                  (message_id, str(thread))).fetchone()
        except sqlite3.Error as exc:
            raise PermanentSurfaceError(f"web thread store: {exc}") from exc
        if row is None:
            raise PermanentSurfaceError(f"message {message_id} not found in {thread}")
        body = json.loads(row[0])
        text = str(body.get("text") or "") + (f"\n\n_{note}_" if note else "")
        tasks = tuple(Task(str(t.get("id")), str(t.get("title")), str(t.get("status")), str(t.get("output") or ""))
                      for t in body.get("tasks") or [] if t.get("status") in TASK_STATES)
        await self.update(thread, message_id, OutMessage(str(body.get("key") or "live"), "live", text, live="done",
                                                         tasks=tasks, plan=bool(body.get("plan")),
                                                         title=str(body.get("title") or "")))
        return message_id

    async def notify(self, thread: ThreadRef, user: str, text: str) -> None:
        for w in self._watchers:
            if str(thread) in w.threads:
                w.notices.append({"thread": str(thread), "text": text})
                del w.notices[:-NOTICES_KEPT]
                w.wake.set()

    # ---- watchers -------------------------------------------------------------------------------
    def watch(self) -> Watcher:
        w = Watcher()
        self._watchers.add(w)
        return w

    def unwatch(self, w: Watcher) -> None:
        self._watchers.discard(w)

    def _changed(self, thread: ThreadRef, body: dict[str, Any]) -> None:
        key = str(thread)
        for w in self._watchers:
            if key in w.threads:
                w.wake.set()
        for listener in self.listeners:
            try:
                listener(thread, body)
            except Exception as exc:  # a listener's bug must not fail the platform call
                log.warning("web surface listener failed: %r", exc)
