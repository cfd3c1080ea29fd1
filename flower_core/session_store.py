"""SQLiteSessionStore: the SDK's SessionStore protocol on one SQLite file.

The CLI mirrors every transcript line here (``ClaudeAgentOptions(session_store=...)``); on
``resume`` the SDK loads the session back from the store into a temporary config dir, so a session
survives a new process, a new machine user, or a wiped ``CLAUDE_CONFIG_DIR``.

Concurrency: one connection per store, used under a lock (the SDK calls from the event loop; the
Runtime may call the sync helpers from other threads). WAL journaling plus ``BEGIN IMMEDIATE`` per
write lets several processes share the file (two Runtimes on one run_dir). Calls are short local
writes, so they run inline rather than hopping to a thread pool, which also keeps call order.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Self, cast

from claude_agent_sdk import SessionStore, fold_session_summary
from claude_agent_sdk.types import (
    SessionKey,
    SessionListSubkeysKey,
    SessionStoreEntry,
    SessionStoreListEntry,
    SessionSummaryEntry,
)

from flower_core.events import context_of

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    project_key TEXT NOT NULL,
    session_id TEXT NOT NULL,
    subpath TEXT NOT NULL DEFAULT '',
    uuid TEXT,
    data TEXT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS entries_uuid ON entries(project_key, session_id, subpath, uuid);
CREATE INDEX IF NOT EXISTS entries_key ON entries(project_key, session_id, subpath, seq);
CREATE TABLE IF NOT EXISTS transcripts (
    project_key TEXT NOT NULL,
    session_id TEXT NOT NULL,
    subpath TEXT NOT NULL DEFAULT '',
    mtime INTEGER NOT NULL,
    PRIMARY KEY (project_key, session_id, subpath)
);
CREATE INDEX IF NOT EXISTS transcripts_session ON transcripts(session_id);
CREATE TABLE IF NOT EXISTS summaries (
    project_key TEXT NOT NULL,
    session_id TEXT NOT NULL,
    mtime INTEGER NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (project_key, session_id)
);
"""


async def stored_entries(store: Any, key: SessionKey) -> list[dict[str, Any]]:
    """A session's entries as stored, from any store (ours say so through ``load_stored``)."""
    read = store.load_stored if isinstance(store, SessionLookups) else store.load
    return [dict(e) for e in await read(key) or []]


def newest_context(entries_newest_first: Iterable[Mapping[str, Any]]) -> int:
    """The context size of the newest real main-thread assistant turn among these entries (0: none)."""
    for entry in entries_newest_first:
        if entry.get("type") != "assistant" or entry.get("isSidechain"):
            continue
        message = entry.get("message")
        if not isinstance(message, dict) or message.get("model") == "<synthetic>":
            continue
        size = context_of(message.get("usage"))
        if size:
            return size
    return 0


class SessionLookups:
    """What our stores share beyond the SDK's protocol: the Runtime's synchronous questions (on two
    primitives each store provides) and `with` support (on its close())."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _project_of(self, session_id: str, project_key: str | None) -> str | None:
        raise NotImplementedError

    def _tail(self, project_key: str, session_id: str, scan: int) -> Iterable[Mapping[str, Any]]:
        """The main transcript's last ``scan`` entries, newest first."""
        raise NotImplementedError

    async def load_stored(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        """The transcript exactly as stored. ``load()`` is what a resume is fed, which a store may rewrite
        (trimming.py, pruning.py); the runtime's own readers (parking, cut-off calls) want this."""
        return await cast(SessionStore, self).load(key)

    def has_session(self, session_id: str, *, project_key: str | None = None) -> bool:
        """Is this session's main transcript stored (under ``project_key``, or under any project)?"""
        return self._project_of(session_id, project_key) is not None

    def last_context(self, session_id: str, *, project_key: str | None = None, scan: int = 60) -> int:
        """Context size the model saw on the session's last real turn; 0 when unknown.

        Reads the usage of the newest non-synthetic, main-thread assistant entry among the last
        ``scan`` entries of the main transcript.
        """
        pk = self._project_of(session_id, project_key)
        return 0 if pk is None else newest_context(self._tail(pk, session_id, scan))


class SQLiteSessionStore(SessionLookups, SessionStore):
    """Transcript mirror in SQLite. Passes ``claude_agent_sdk.testing.run_session_store_conformance``.

    Entries with a ``uuid`` are idempotent per transcript; a batch that is entirely a replay does not
    advance ``mtime`` nor refold the summary. Only main transcripts (no ``subpath``) feed summaries.
    """

    def __init__(self, path: str | Path, *, timeout_s: float = 30.0) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._last_mtime = 0
        self._timeout_s = timeout_s
        self._closed = False
        self._conn: sqlite3.Connection | None = self._connect()
        self._conn.execute("PRAGMA journal_mode=WAL")
        with self._write() as db:
            # executescript() would commit on its own; run the statements inside our transaction.
            for statement in filter(None, (s.strip() for s in _SCHEMA.split(";"))):
                db.execute(statement)

    # -- plumbing -----------------------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        # isolation_level=None: transactions are explicit (BEGIN IMMEDIATE) so writers queue up politely.
        conn = sqlite3.connect(str(self.path), timeout=self._timeout_s, isolation_level=None,
                               check_same_thread=False)
        conn.execute("PRAGMA synchronous=NORMAL")
        return conn

    @property
    def _db(self) -> sqlite3.Connection:
        if self._closed:
            raise RuntimeError("SQLiteSessionStore is closed")
        if self._conn is None:  # released while its run was parked: open again on first use
            self._conn = self._connect()
        return self._conn

    def release(self) -> None:
        """Close the connection (and its three open files: the db, its WAL and shared memory) until the
        next use opens it again. A parked run calls it: it may wait for hours without touching the store."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

    def _read(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    def _next_mtime(self, db: sqlite3.Connection) -> int:
        """Storage write time in epoch ms, strictly increasing even across processes sharing the file."""
        now = int(time.time() * 1000)
        row = db.execute("SELECT MAX(mtime) FROM transcripts").fetchone()
        floor = max(self._last_mtime, int(row[0] or 0))
        self._last_mtime = now if now > floor else floor + 1
        return self._last_mtime

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    # -- SessionStore protocol ------------------------------------------------------------------
    async def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        if not entries:
            return
        pk, sid, sub = key["project_key"], key["session_id"], key.get("subpath") or ""
        with self._write() as db:
            fresh: list[SessionStoreEntry] = []
            for entry in entries:
                uuid = entry.get("uuid")
                cur = db.execute(
                    "INSERT OR IGNORE INTO entries(project_key, session_id, subpath, uuid, data) VALUES (?,?,?,?,?)",
                    (pk, sid, sub, uuid if isinstance(uuid, str) else None,
                     json.dumps(entry, ensure_ascii=False, separators=(",", ":"))))
                if cur.rowcount:
                    fresh.append(entry)
            if not fresh:
                return  # a full replay: nothing changed, so neither mtime nor the summary moves
            mtime = self._next_mtime(db)
            db.execute("INSERT INTO transcripts(project_key, session_id, subpath, mtime) VALUES (?,?,?,?) "
                       "ON CONFLICT(project_key, session_id, subpath) DO UPDATE SET mtime=excluded.mtime",
                       (pk, sid, sub, mtime))
            if sub:
                return
            row = db.execute("SELECT mtime, data FROM summaries WHERE project_key=? AND session_id=?",
                             (pk, sid)).fetchone()
            prev = (cast(SessionSummaryEntry, {"session_id": sid, "mtime": row[0], "data": json.loads(row[1])})
                    if row else None)
            folded = fold_session_summary(prev, key, fresh)
            db.execute("INSERT INTO summaries(project_key, session_id, mtime, data) VALUES (?,?,?,?) "
                       "ON CONFLICT(project_key, session_id) DO UPDATE SET mtime=excluded.mtime, data=excluded.data",
                       (pk, sid, mtime, json.dumps(folded["data"], ensure_ascii=False)))

    async def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        return await self.load_stored(key)

    async def load_stored(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        pk, sid, sub = key["project_key"], key["session_id"], key.get("subpath") or ""
        with self._lock:
            known = self._db.execute("SELECT 1 FROM transcripts WHERE project_key=? AND session_id=? AND subpath=?",
                                     (pk, sid, sub)).fetchone()
            if not known:
                return None
            rows = self._db.execute("SELECT data FROM entries WHERE project_key=? AND session_id=? AND subpath=? "
                                    "ORDER BY seq", (pk, sid, sub)).fetchall()
        return [cast(SessionStoreEntry, json.loads(r[0])) for r in rows]

    async def list_sessions(self, project_key: str) -> list[SessionStoreListEntry]:
        rows = self._read("SELECT session_id, mtime FROM transcripts WHERE project_key=? AND subpath=''",
                          (project_key,))
        return [{"session_id": sid, "mtime": int(mtime)} for sid, mtime in rows]

    async def list_session_summaries(self, project_key: str) -> list[SessionSummaryEntry]:
        rows = self._read("SELECT session_id, mtime, data FROM summaries WHERE project_key=?", (project_key,))
        return [{"session_id": sid, "mtime": int(mtime), "data": json.loads(data)} for sid, mtime, data in rows]

    async def delete(self, key: SessionKey) -> None:
        pk, sid, sub = key["project_key"], key["session_id"], key.get("subpath")
        with self._write() as db:
            if sub:
                args: tuple[str, ...] = (pk, sid, sub)
                db.execute("DELETE FROM entries WHERE project_key=? AND session_id=? AND subpath=?", args)
                db.execute("DELETE FROM transcripts WHERE project_key=? AND session_id=? AND subpath=?", args)
                return
            # A main transcript takes its subagent transcripts and its summary with it: no orphans.
            for table in ("entries", "transcripts", "summaries"):
                db.execute(f"DELETE FROM {table} WHERE project_key=? AND session_id=?", (pk, sid))

    async def list_subkeys(self, key: SessionListSubkeysKey) -> list[str]:
        rows = self._read("SELECT subpath FROM transcripts WHERE project_key=? AND session_id=? AND subpath!='' "
                          "ORDER BY subpath", (key["project_key"], key["session_id"]))
        return [r[0] for r in rows]

    # -- synchronous helpers for the Runtime --------------------------------------------------------
    def projects(self) -> list[str]:
        """The project keys present (the SDK derives them from cwd; look here rather than guess)."""
        return [r[0] for r in self._read("SELECT DISTINCT project_key FROM transcripts ORDER BY project_key")]

    def _project_of(self, session_id: str, project_key: str | None) -> str | None:
        if project_key is not None:
            rows = self._read("SELECT project_key FROM transcripts WHERE project_key=? AND session_id=? "
                              "AND subpath=''", (project_key, session_id))
        else:
            rows = self._read("SELECT project_key FROM transcripts WHERE session_id=? AND subpath='' "
                              "ORDER BY mtime DESC LIMIT 1", (session_id,))
        return rows[0][0] if rows else None

    def _tail(self, project_key: str, session_id: str, scan: int) -> Iterable[Mapping[str, Any]]:
        rows = self._read("SELECT data FROM entries WHERE project_key=? AND session_id=? AND subpath='' "
                          "ORDER BY seq DESC LIMIT ?", (project_key, session_id, max(1, scan)))
        return (json.loads(data) for (data,) in rows)

    def truncate_after(self, session_id: str, entry_uuid: str, *, project_key: str) -> int:
        """Delete what the main transcript holds after the entry ``entry_uuid``; returns how many rows went.

        For rewriting the tail of a stopped session before it resumes (runtime/parking.py closes a
        question's tool call this way). Nothing is deleted when the uuid is not in the transcript.
        """
        with self._write() as db:
            row = db.execute("SELECT seq FROM entries WHERE project_key=? AND session_id=? AND subpath='' AND uuid=?",
                             (project_key, session_id, entry_uuid)).fetchone()
            if row is None:
                return 0
            cur = db.execute("DELETE FROM entries WHERE project_key=? AND session_id=? AND subpath='' AND seq>?",
                             (project_key, session_id, row[0]))
            if cur.rowcount:
                db.execute("UPDATE transcripts SET mtime=? WHERE project_key=? AND session_id=? AND subpath=''",
                           (self._next_mtime(db), project_key, session_id))
            return int(cur.rowcount)
