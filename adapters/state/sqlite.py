"""The default StateStore: one SQLite file in WAL mode, so a restarted bot picks up where it was.

Every method is one short statement (or transaction) under a lock; the connection is shared across
threads (check_same_thread=False) because answers and events arrive from platform threads too.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

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
    StoredEvents,
)

__all__ = ["SQLiteStateStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS bindings (
    run_id TEXT PRIMARY KEY, thread TEXT NOT NULL, bound_at REAL NOT NULL, seq INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS bindings_thread ON bindings(thread, seq);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY, thread TEXT NOT NULL, owner TEXT NOT NULL, task TEXT NOT NULL,
    status TEXT NOT NULL, workspace TEXT NOT NULL, run_dir TEXT NOT NULL,
    created_at REAL NOT NULL, updated_at REAL NOT NULL, round INTEGER NOT NULL DEFAULT 1,
    spent_usd REAL NOT NULL DEFAULT 0, cap_usd REAL);
CREATE INDEX IF NOT EXISTS runs_status ON runs(status);
CREATE TABLE IF NOT EXISTS asks (
    run_id TEXT NOT NULL, ask_id TEXT NOT NULL, message_id TEXT NOT NULL, question TEXT NOT NULL,
    options TEXT NOT NULL, PRIMARY KEY (run_id, ask_id));
CREATE TABLE IF NOT EXISTS messages (
    thread TEXT NOT NULL, key TEXT NOT NULL, message_id TEXT NOT NULL, PRIMARY KEY (thread, key));
CREATE TABLE IF NOT EXISTS dedupe (key TEXT PRIMARY KEY, expires REAL NOT NULL);
CREATE INDEX IF NOT EXISTS dedupe_expires ON dedupe(expires);
CREATE TABLE IF NOT EXISTS receipts (
    run_id TEXT NOT NULL, mail_id TEXT NOT NULL, message_id TEXT NOT NULL, state TEXT NOT NULL,
    PRIMARY KEY (run_id, mail_id));
CREATE TABLE IF NOT EXISTS policies (channel TEXT PRIMARY KEY, policy TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS mirrors (
    run_id TEXT NOT NULL, thread TEXT NOT NULL, scope TEXT NOT NULL, by TEXT NOT NULL, seq INTEGER NOT NULL,
    PRIMARY KEY (run_id, thread));
CREATE INDEX IF NOT EXISTS mirrors_thread ON mirrors(thread, seq);
CREATE TABLE IF NOT EXISTS intents (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL, iid TEXT NOT NULL UNIQUE, data TEXT NOT NULL,
    settled TEXT NOT NULL DEFAULT '', settled_at REAL);
CREATE INDEX IF NOT EXISTS intents_open ON intents(run_id, settled, seq);
CREATE TABLE IF NOT EXISTS event_logs (run_id TEXT PRIMARY KEY, base INTEGER NOT NULL, gone_upto INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS events (
    run_id TEXT NOT NULL, seq INTEGER NOT NULL, body TEXT NOT NULL, PRIMARY KEY (run_id, seq)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS routines (routine_id TEXT PRIMARY KEY, data TEXT NOT NULL, created_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS occurrences (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, routine_id TEXT NOT NULL, due REAL NOT NULL, run_id TEXT NOT NULL,
    kind TEXT NOT NULL, state TEXT NOT NULL, thread TEXT NOT NULL DEFAULT '', note TEXT NOT NULL DEFAULT '',
    recorded_at REAL NOT NULL, UNIQUE (routine_id, due));
CREATE INDEX IF NOT EXISTS occurrences_state ON occurrences(state, seq);
"""
SCHEMA_VERSION = "1"
# Named, so a column added by a migration (at the end of an old table) reads the same as in a new one.
_RUN_COLUMNS = ("run_id, thread, owner, task, status, workspace, run_dir, created_at, updated_at, round, spent_usd,"
                " cap_usd, origin")
# Columns added since the first schema, with how an older database gains them.
_ADDED_RUN_COLUMNS = {"round": "INTEGER NOT NULL DEFAULT 1", "spent_usd": "REAL NOT NULL DEFAULT 0", "cap_usd": "REAL",
                      "origin": "TEXT NOT NULL DEFAULT ''"}
_OCCURRENCE_COLUMNS = "routine_id, due, run_id, kind, state, thread, note, recorded_at"


def _routine_json(r: Routine) -> str:
    data = dataclasses.asdict(r)
    data["place"] = str(r.place)
    return json.dumps(data)


def _routine_of(text: str) -> Routine:
    data = json.loads(text)
    known = {f.name for f in dataclasses.fields(Routine)}
    data = {k: v for k, v in data.items() if k in known}  # a field a newer version wrote is left out
    data["place"] = ThreadRef.parse(data["place"])
    return Routine(**data)


def _set_or_none(v: list[str] | None) -> frozenset[str] | None:
    return None if v is None else frozenset(v)


class SQLiteStateStore:
    def __init__(self, path: str | Path, *, clock: Callable[[], float] = time.time) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._clock = clock
        self._lock = threading.Lock()
        # isolation_level=None: autocommit; multi-statement writes use explicit BEGIN IMMEDIATE.
        self._db = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None, timeout=10.0)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)
        self._migrate()
        self._db.execute("INSERT OR IGNORE INTO meta(name, value) VALUES ('schema', ?)", (SCHEMA_VERSION,))
        self._writes = 0

    def _migrate(self) -> None:
        """Columns added since a database was made: a DB of an older version gains them with their default."""
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(runs)")}
        for name, kind in _ADDED_RUN_COLUMNS.items():
            if name not in columns:
                self._db.execute(f"ALTER TABLE runs ADD COLUMN {name} {kind}")

    def _one(self, sql: str, args: tuple[object, ...]) -> tuple[Any, ...] | None:
        with self._lock:
            row: tuple[Any, ...] | None = self._db.execute(sql, args).fetchone()
            return row

    def _exec(self, sql: str, args: tuple[object, ...]) -> int:
        with self._lock:
            return self._db.execute(sql, args).rowcount

    # thread <-> run
    def bind_thread(self, thread: ThreadRef, run_id: str) -> None:
        with self._lock:
            self._db.execute(
                "INSERT INTO bindings(run_id, thread, bound_at, seq) VALUES (?, ?, ?,"
                " (SELECT COALESCE(MAX(seq), 0) + 1 FROM bindings))"
                " ON CONFLICT(run_id) DO UPDATE SET thread=excluded.thread, bound_at=excluded.bound_at,"
                " seq=excluded.seq", (run_id, str(thread), self._clock()))

    def run_for_thread(self, thread: ThreadRef) -> str | None:
        row = self._one("SELECT run_id FROM bindings WHERE thread=? ORDER BY seq DESC LIMIT 1", (str(thread),))
        return None if row is None else str(row[0])

    def thread_for_run(self, run_id: str) -> ThreadRef | None:
        row = self._one("SELECT thread FROM bindings WHERE run_id=?", (run_id,))
        return None if row is None else ThreadRef.parse(row[0])

    # runs
    def save_run(self, run: RunRecord) -> RunRecord:
        now = self._clock()
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                old = self._db.execute("SELECT created_at FROM runs WHERE run_id=?", (run.run_id,)).fetchone()
                created = run.created_at or (old[0] if old else now)
                stored = RunRecord(run.run_id, run.thread, run.owner, run.task, run.status, run.workspace,
                                   run.run_dir, created, run.updated_at or now, run.round, run.spent_usd, run.cap_usd,
                                   run.origin)
                self._db.execute(
                    f"INSERT OR REPLACE INTO runs({_RUN_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (stored.run_id, str(stored.thread), stored.owner, stored.task, str(stored.status),
                     stored.workspace, stored.run_dir, stored.created_at, stored.updated_at, stored.round,
                     stored.spent_usd, stored.cap_usd, stored.origin))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return stored

    @staticmethod
    def _run(row: tuple[Any, ...]) -> RunRecord:
        return RunRecord(row[0], ThreadRef.parse(row[1]), row[2], row[3], RunStatus.of(row[4]), row[5], row[6], row[7],
                         row[8], int(row[9]), float(row[10]), None if row[11] is None else float(row[11]), str(row[12]))

    def get_run(self, run_id: str) -> RunRecord | None:
        row = self._one(f"SELECT {_RUN_COLUMNS} FROM runs WHERE run_id=?", (run_id,))
        return None if row is None else self._run(row)

    def list_runs(self, status: str | None = None) -> list[RunRecord]:
        with self._lock:
            if status is None:
                rows = self._db.execute(f"SELECT {_RUN_COLUMNS} FROM runs ORDER BY created_at, run_id").fetchall()
            else:
                rows = self._db.execute(f"SELECT {_RUN_COLUMNS} FROM runs WHERE status=? ORDER BY created_at, run_id",
                                        (status,)).fetchall()
        return [self._run(r) for r in rows]

    def set_run_status(self, run_id: str, status: RunStatus | str) -> bool:
        return self._exec("UPDATE runs SET status=?, updated_at=? WHERE run_id=?",
                          (str(status), self._clock(), run_id)) > 0

    # ask cards
    def save_ask_message(self, run_id: str, ask_id: str, message_id: str, question: str,
                         options: list[str]) -> None:
        self._exec("INSERT OR REPLACE INTO asks VALUES (?, ?, ?, ?, ?)",
                   (run_id, ask_id, message_id, question, json.dumps(list(options))))

    def get_ask_message(self, run_id: str, ask_id: str) -> AskMessage | None:
        row = self._one("SELECT message_id, question, options FROM asks WHERE run_id=? AND ask_id=?",
                        (run_id, ask_id))
        return None if row is None else AskMessage(run_id, ask_id, row[0], row[1], list(json.loads(row[2])))

    # message ids by key
    def save_message(self, thread: ThreadRef, key: str, message_id: str) -> None:
        self._exec("INSERT OR REPLACE INTO messages VALUES (?, ?, ?)", (str(thread), key, message_id))

    def get_message(self, thread: ThreadRef, key: str) -> str | None:
        row = self._one("SELECT message_id FROM messages WHERE thread=? AND key=?", (str(thread), key))
        return None if row is None else str(row[0])

    # dedupe
    def seen(self, key: str, ttl_s: float = DEFAULT_DEDUPE_TTL_S) -> bool:
        now = self._clock()
        with self._lock:
            # One statement: inserts a new key or revives an expired one (rowcount 1 = not seen before);
            # a live key is left alone (rowcount 0 = seen). Atomic across threads and processes.
            n = self._db.execute(
                "INSERT INTO dedupe(key, expires) VALUES (?, ?) ON CONFLICT(key) DO UPDATE"
                " SET expires=excluded.expires WHERE dedupe.expires <= ?", (key, now + ttl_s, now)).rowcount
            self._writes += 1
            if self._writes % 500 == 0:  # prune now and then so the table stays small
                self._db.execute("DELETE FROM dedupe WHERE expires <= ?", (now,))
        return n == 0

    # mail receipts
    def save_receipt(self, run_id: str, mail_id: str, message_id: str, state: str) -> None:
        self._exec("INSERT OR REPLACE INTO receipts VALUES (?, ?, ?, ?)", (run_id, mail_id, message_id, state))

    def get_receipt(self, run_id: str, mail_id: str) -> Receipt | None:
        row = self._one("SELECT message_id, state FROM receipts WHERE run_id=? AND mail_id=?", (run_id, mail_id))
        return None if row is None else Receipt(run_id, mail_id, row[0], row[1])

    # mirrors
    def add_mirror(self, mirror: Mirror) -> None:
        self._exec("INSERT OR REPLACE INTO mirrors(run_id, thread, scope, by, seq) VALUES (?, ?, ?, ?,"
                   " (SELECT COALESCE(MAX(seq), 0) + 1 FROM mirrors))",
                   (mirror.run_id, str(mirror.thread), mirror.scope, mirror.by))

    def remove_mirror(self, run_id: str, thread: ThreadRef) -> bool:
        return self._exec("DELETE FROM mirrors WHERE run_id=? AND thread=?", (run_id, str(thread))) > 0

    def mirrors_of(self, run_id: str) -> list[Mirror]:
        with self._lock:
            rows = self._db.execute("SELECT thread, scope, by FROM mirrors WHERE run_id=? ORDER BY seq",
                                    (run_id,)).fetchall()
        return [Mirror(run_id, ThreadRef.parse(t), scope, by) for t, scope, by in rows]

    def mirrored_run(self, thread: ThreadRef) -> str | None:
        row = self._one("SELECT run_id FROM mirrors WHERE thread=? AND scope='all' ORDER BY seq DESC LIMIT 1",
                        (str(thread),))
        return None if row is None else str(row[0])

    # intents: committed before log_intent returns (WAL: a SIGKILL of this process loses no commit)
    def log_intent(self, run_id: str, iid: str, data: str) -> bool:
        return self._exec("INSERT OR IGNORE INTO intents(run_id, iid, data) VALUES (?, ?, ?)",
                          (run_id, iid, data)) > 0

    def unsettled_intents(self, run_id: str) -> list[str]:
        with self._lock:
            rows = self._db.execute("SELECT data FROM intents WHERE run_id=? AND settled='' ORDER BY seq",
                                    (run_id,)).fetchall()
        return [str(r[0]) for r in rows]

    def settle_intent(self, run_id: str, iid: str, how: str) -> None:
        self._exec("UPDATE intents SET settled=?, settled_at=? WHERE run_id=? AND iid=? AND settled=''",
                   (how, self._clock(), run_id, iid))

    def count_unsettled_intents(self) -> int:
        row = self._one("SELECT COUNT(*) FROM intents WHERE settled=''", ())
        return int(row[0]) if row else 0

    # run event logs (the web API's): one transaction per batch; committed, so a SIGKILL loses none of it
    def append_events(self, run_id: str, base: int, gone_upto: int, rows: Sequence[tuple[int, str]]) -> None:
        """Add `rows` (seq, JSON) to the run's log and drop what its bound pushed out (seq <= gone_upto):
        the table holds at most the log's bound per run. `base` is kept from the log's first batch."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.execute(
                    "INSERT INTO event_logs(run_id, base, gone_upto) VALUES (?, ?, ?) ON CONFLICT(run_id)"
                    " DO UPDATE SET gone_upto=MAX(gone_upto, excluded.gone_upto)", (run_id, base, gone_upto))
                self._db.executemany("INSERT OR REPLACE INTO events(run_id, seq, body) VALUES (?, ?, ?)",
                                     [(run_id, seq, body) for seq, body in rows if seq > gone_upto])
                self._db.execute("DELETE FROM events WHERE run_id=? AND seq<=?", (run_id, gone_upto))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def load_events(self, run_id: str) -> StoredEvents | None:
        with self._lock:
            meta = self._db.execute("SELECT base, gone_upto FROM event_logs WHERE run_id=?", (run_id,)).fetchone()
            if meta is None:
                return None
            rows = self._db.execute("SELECT seq, body FROM events WHERE run_id=? ORDER BY seq", (run_id,)).fetchall()
        return StoredEvents(int(meta[0]), int(meta[1]), [(int(seq), str(body)) for seq, body in rows])

    # access
    def set_channel_policy(self, channel: str, policy: ChannelPolicy) -> None:
        data = {
            "starters": None if policy.starters is None else sorted(policy.starters),
            "responders": None if policy.responders is None else sorted(policy.responders),
            "admins": sorted(policy.admins),
        }
        self._exec("INSERT OR REPLACE INTO policies VALUES (?, ?)", (channel, json.dumps(data)))

    def get_channel_policy(self, channel: str) -> ChannelPolicy | None:
        row = self._one("SELECT policy FROM policies WHERE channel=?", (channel,))
        if row is None:
            return None
        data = json.loads(row[0])
        return ChannelPolicy(_set_or_none(data["starters"]), _set_or_none(data["responders"]),
                             frozenset(data["admins"]))

    # routines: the routine as JSON; an occurrence is unique per (routine, due) and recorded with the routine's
    # next firing in one transaction, committed before record_occurrence returns
    def save_routine(self, routine: Routine) -> Routine:
        with self._lock:
            old = self._db.execute("SELECT created_at FROM routines WHERE routine_id=?",
                                   (routine.routine_id,)).fetchone()
            stored = dataclasses.replace(routine, created_at=routine.created_at or (old[0] if old else self._clock()))
            self._db.execute("INSERT OR REPLACE INTO routines(routine_id, data, created_at) VALUES (?, ?, ?)",
                             (stored.routine_id, _routine_json(stored), stored.created_at))
        return stored

    def get_routine(self, routine_id: str) -> Routine | None:
        row = self._one("SELECT data FROM routines WHERE routine_id=?", (routine_id,))
        return None if row is None else _routine_of(row[0])

    def list_routines(self) -> list[Routine]:
        with self._lock:
            rows = self._db.execute("SELECT data FROM routines ORDER BY created_at, routine_id").fetchall()
        return [_routine_of(r[0]) for r in rows]

    def delete_routine(self, routine_id: str) -> bool:
        return self._exec("DELETE FROM routines WHERE routine_id=?", (routine_id,)) > 0

    def record_occurrence(self, occurrence: Occurrence, next_at: float | None) -> bool:
        o = occurrence
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                n = self._db.execute(
                    f"INSERT OR IGNORE INTO occurrences({_OCCURRENCE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (o.routine_id, o.due, o.run_id, o.kind, o.state, str(o.thread) if o.thread else "", o.note,
                     o.recorded_at or self._clock())).rowcount
                row = self._db.execute("SELECT data FROM routines WHERE routine_id=?", (o.routine_id,)).fetchone()
                if n and row is not None:
                    data = json.loads(row[0])
                    data["next_at"] = next_at
                    self._db.execute("UPDATE routines SET data=? WHERE routine_id=?", (json.dumps(data), o.routine_id))
                if n:  # the history stays bounded (base.KEEP_OCCURRENCES says what is never dropped)
                    self._db.execute(
                        "DELETE FROM occurrences WHERE routine_id=? AND state != 'pending'"
                        " AND seq NOT IN (SELECT seq FROM occurrences WHERE routine_id=? ORDER BY seq DESC LIMIT ?)"
                        " AND seq NOT IN (SELECT seq FROM occurrences WHERE routine_id=? AND state='started'"
                        " ORDER BY seq DESC LIMIT 2)", (o.routine_id, o.routine_id, KEEP_OCCURRENCES, o.routine_id))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return n > 0

    def update_occurrence(self, routine_id: str, due: float, *, state: str | None = None,
                          thread: ThreadRef | None = None, note: str | None = None) -> None:
        self._exec("UPDATE occurrences SET state=COALESCE(?, state), thread=COALESCE(?, thread),"
                   " note=COALESCE(?, note) WHERE routine_id=? AND due=?",
                   (state, str(thread) if thread else None, note, routine_id, due))

    @staticmethod
    def _occurrence(row: tuple[Any, ...]) -> Occurrence:
        return Occurrence(row[0], float(row[1]), row[2], row[3], row[4], ThreadRef.parse(row[5]) if row[5] else None,
                          row[6], float(row[7]))

    def pending_occurrences(self) -> list[Occurrence]:
        with self._lock:
            rows = self._db.execute(f"SELECT {_OCCURRENCE_COLUMNS} FROM occurrences WHERE state='pending'"
                                    " ORDER BY seq").fetchall()
        return [self._occurrence(r) for r in rows]

    def occurrences_of(self, routine_id: str, limit: int = 10, *, state: str | None = None) -> list[Occurrence]:
        with self._lock:
            rows = self._db.execute(f"SELECT {_OCCURRENCE_COLUMNS} FROM occurrences WHERE routine_id=?"
                                    " AND (? IS NULL OR state=?) ORDER BY seq DESC LIMIT ?",
                                    (routine_id, state, state, limit)).fetchall()
        return [self._occurrence(r) for r in rows]

    def close(self) -> None:
        with self._lock:
            self._db.close()
