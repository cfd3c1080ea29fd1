"""One suite, both StateStore implementations; SQLite also across a reopen (a bot restart)."""

from __future__ import annotations

import dataclasses
import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from adapters.platform import ThreadRef
from adapters.state import (
    ChannelPolicy,
    MemoryStateStore,
    Occurrence,
    Routine,
    RunRecord,
    SQLiteStateStore,
    StateStore,
)
from adapters.state.base import KEEP_OCCURRENCES

T1 = ThreadRef("slack", "C1", "1700000000.000100")
T2 = ThreadRef("discord", "42", "99")


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=["memory", "sqlite"])
def make(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[Clock], StateStore]]:
    opened: list[StateStore] = []

    def factory(clock: Clock) -> StateStore:
        store: StateStore
        if request.param == "memory":
            store = MemoryStateStore(clock=clock)
        else:
            store = SQLiteStateStore(tmp_path / "state" / "bridge.db", clock=clock)
        opened.append(store)
        return store

    yield factory
    for s in opened:
        s.close()


def test_is_a_state_store(make: Callable[[Clock], StateStore]) -> None:
    assert isinstance(make(Clock()), StateStore)


def test_thread_bindings(make: Callable[[Clock], StateStore]) -> None:
    s = make(Clock())
    assert s.run_for_thread(T1) is None and s.thread_for_run("r1") is None
    s.bind_thread(T1, "r1")
    s.bind_thread(T2, "r2")
    assert s.run_for_thread(T1) == "r1" and s.thread_for_run("r2") == T2
    s.bind_thread(T1, "r3")  # a new run in the same thread takes it over
    assert s.run_for_thread(T1) == "r3"
    assert s.thread_for_run("r1") == T1  # the old run still knows where it lived


def test_runs(make: Callable[[Clock], StateStore]) -> None:
    clock = Clock()
    s = make(clock)
    r = s.save_run(RunRecord("r1", T1, "U1", "build a thing", "running", "/w", "/runs/r1"))
    assert r.created_at == r.updated_at == clock.now
    assert s.get_run("r1") == r and s.get_run("nope") is None
    clock.now += 5
    s.save_run(RunRecord("r2", T2, "U2", "other", "done"))
    clock.now += 5
    assert s.set_run_status("r1", "done") is True
    assert s.set_run_status("ghost", "done") is False
    r1 = s.get_run("r1")
    assert r1 is not None and r1.status == "done" and r1.updated_at == clock.now and r1.created_at == r.created_at
    assert [x.run_id for x in s.list_runs()] == ["r1", "r2"]
    assert [x.run_id for x in s.list_runs("done")] == ["r1", "r2"]
    assert s.list_runs("running") == []
    again = s.save_run(RunRecord("r1", T1, "U1", "build a thing", "running"))  # re-save keeps created_at
    assert again.created_at == r.created_at


def test_asks_messages_receipts(make: Callable[[Clock], StateStore]) -> None:
    s = make(Clock())
    s.save_ask_message("r1", "q1", "M1", "Which colour?", ["red", "blue"])
    s.save_ask_message("r2", "q1", "M9", "Other run, same ask id", [])
    a = s.get_ask_message("r1", "q1")
    assert a is not None and (a.message_id, a.question, a.options) == ("M1", "Which colour?", ["red", "blue"])
    assert s.get_ask_message("r2", "q1").message_id == "M9"  # type: ignore[union-attr]
    assert s.get_ask_message("r1", "q2") is None
    s.save_message(T1, "status", "111.1")
    s.save_message(T1, "status", "111.2")
    assert s.get_message(T1, "status") == "111.2" and s.get_message(T2, "status") is None
    s.save_receipt("r1", "m1", "222.1", "queued")
    s.save_receipt("r1", "m1", "222.1", "delivered")
    rc = s.get_receipt("r1", "m1")
    assert rc is not None and rc.state == "delivered" and s.get_receipt("r1", "m2") is None


def test_dedupe_with_ttl(make: Callable[[Clock], StateStore]) -> None:
    clock = Clock()
    s = make(clock)
    assert s.seen("ev1") is False
    assert s.seen("ev1") is True
    clock.now += 899
    assert s.seen("ev1") is True
    clock.now += 2  # default TTL is 900 s
    assert s.seen("ev1") is False  # expired: recorded afresh
    assert s.seen("ev1") is True
    assert s.seen("short", ttl_s=10) is False
    clock.now += 11
    assert s.seen("short", ttl_s=10) is False


def test_dedupe_is_atomic_across_threads(make: Callable[[Clock], StateStore]) -> None:
    s = make(Clock())
    results: list[bool] = []
    barrier = threading.Barrier(8)

    def worker() -> None:
        barrier.wait()
        results.extend(s.seen(f"k{i}") for i in range(50))

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results.count(False) == 50  # each key admitted exactly once


def test_channel_policy(make: Callable[[Clock], StateStore]) -> None:
    s = make(Clock())
    assert s.get_channel_policy("slack:C1") is None
    p = ChannelPolicy(starters={"U1"}, responders=None, admins={"U9"})
    s.set_channel_policy("slack:C1", p)
    assert s.get_channel_policy("slack:C1") == p
    s.set_channel_policy("slack:C1", ChannelPolicy())
    assert s.get_channel_policy("slack:C1") == ChannelPolicy()


def test_sqlite_survives_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "bridge.db"
    clock = Clock()
    a = SQLiteStateStore(path, clock=clock)
    a.bind_thread(T1, "r1")
    a.save_run(RunRecord("r1", T1, "U1", "task", "waiting"))
    a.save_ask_message("r1", "q1", "M1", "Q?", ["a", "b"])
    a.save_message(T1, "status", "S1")
    a.save_receipt("r1", "m1", "R1", "queued")
    a.set_channel_policy("slack:C1", ChannelPolicy(responders={"U2"}))
    assert a.seen("ev1") is False
    a.close()

    b = SQLiteStateStore(path, clock=clock)
    assert b.run_for_thread(T1) == "r1" and b.thread_for_run("r1") == T1
    run = b.get_run("r1")
    assert run is not None and run.status == "waiting" and run.thread == T1
    assert b.get_ask_message("r1", "q1").options == ["a", "b"]  # type: ignore[union-attr]
    assert b.get_message(T1, "status") == "S1"
    assert b.get_receipt("r1", "m1").message_id == "R1"  # type: ignore[union-attr]
    assert b.get_channel_policy("slack:C1") == ChannelPolicy(responders={"U2"})
    assert b.seen("ev1") is True
    b.close()
    mode = sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_two_connections_share_dedupe(tmp_path: Path) -> None:
    # Two processes (here: connections) on one file must not both admit the same event.
    a, b = SQLiteStateStore(tmp_path / "x.db"), SQLiteStateStore(tmp_path / "x.db")
    try:
        assert a.seen("ev") is False
        assert b.seen("ev") is True
    finally:
        a.close()
        b.close()


def test_a_run_keeps_its_round(make: Callable[[Clock], StateStore]) -> None:
    store = make(Clock())
    first = store.save_run(RunRecord("r1", T1, "U1", "task", "done"))
    assert first.round == 1
    assert first.spent_usd == 0.0 and first.cap_usd is None
    store.save_run(dataclasses.replace(first, round=2, status="starting", spent_usd=1.25, cap_usd=6.0))
    store.set_run_status("r1", "done")
    got = store.get_run("r1")
    assert got is not None and got.round == 2 and got.status == "done" and got.created_at == first.created_at
    assert got.spent_usd == 1.25 and got.cap_usd == 6.0
    assert [r.round for r in store.list_runs()] == [2]


def test_an_older_database_gains_the_round_and_budget_columns(tmp_path: Path) -> None:
    """A DB made before rounds existed (no `round`, `spent_usd`, `cap_usd`): its runs read as round 1 with
    nothing spent, and can go on."""
    path = tmp_path / "old.db"
    db = sqlite3.connect(path)
    db.executescript("""
        CREATE TABLE runs (run_id TEXT PRIMARY KEY, thread TEXT NOT NULL, owner TEXT NOT NULL, task TEXT NOT NULL,
            status TEXT NOT NULL, workspace TEXT NOT NULL, run_dir TEXT NOT NULL,
            created_at REAL NOT NULL, updated_at REAL NOT NULL);""")
    db.execute("INSERT INTO runs VALUES ('r1', ?, 'U1', 'old task', 'done', '/ws', '/rd', 5.0, 6.0)", (str(T1),))
    db.commit()
    db.close()
    store = SQLiteStateStore(path)
    old = store.get_run("r1")
    assert old is not None and old.round == 1 and old.task == "old task" and old.created_at == 5.0
    assert old.spent_usd == 0.0 and old.cap_usd is None
    store.save_run(dataclasses.replace(old, round=2, spent_usd=0.5))
    store.close()
    again = SQLiteStateStore(path)  # reopened: the migration is not run twice, the round is kept
    kept = again.get_run("r1")
    assert kept is not None and kept.round == 2 and kept.spent_usd == 0.5 and kept.cap_usd is None
    again.close()


def test_routines_and_their_occurrences(make: Callable[[Clock], StateStore]) -> None:
    clock = Clock()
    s = make(clock)
    place = ThreadRef("slack", "C1")
    saved = s.save_routine(Routine("rt1", "Daily", "triage", "0 9 * * 1-5", "Europe/Berlin", place, "U1", next_at=100.0,
                                   said="every weekday at 9:00"))
    assert saved.created_at == clock.now and s.get_routine("rt1") == saved
    clock.now += 5
    assert s.save_routine(dataclasses.replace(saved, paused=True)).created_at == saved.created_at
    assert [r.routine_id for r in s.list_routines()] == ["rt1"] and s.get_routine("nope") is None
    # an occurrence is recorded once per due time, and moves the routine's next firing in the same step
    occ = Occurrence("rt1", 100.0, "r1")
    assert s.record_occurrence(occ, 200.0)
    assert not s.record_occurrence(dataclasses.replace(occ, run_id="r2"), 300.0)
    routine = s.get_routine("rt1")
    assert routine is not None and routine.next_at == 200.0 and routine.paused
    s.update_occurrence("rt1", 100.0, thread=T1)
    [pending] = s.pending_occurrences()
    assert (pending.run_id, pending.thread, pending.state) == ("r1", T1, "pending")
    s.update_occurrence("rt1", 100.0, state="started")
    assert s.pending_occurrences() == []
    assert s.record_occurrence(Occurrence("rt1", 200.0, "r3", "manual", "skipped", note="busy"), None)
    assert [(o.run_id, o.state, o.note, o.thread) for o in s.occurrences_of("rt1")] == [
        ("r3", "skipped", "busy", None), ("r1", "started", "", T1)]
    assert [o.run_id for o in s.occurrences_of("rt1", state="started")] == ["r1"]
    assert s.occurrences_of("rt1", 1) == s.occurrences_of("rt1", state="skipped")
    assert s.delete_routine("rt1") and not s.delete_routine("rt1") and s.list_routines() == []


def test_a_run_keeps_its_origin(make: Callable[[Clock], StateStore]) -> None:
    s = make(Clock())
    s.save_run(RunRecord("r1", T1, "U1", "triage", origin="⏰ Daily, 09:00"))
    run = s.get_run("r1")
    assert run is not None and run.origin == "⏰ Daily, 09:00"


def test_a_routines_history_stays_bounded_but_keeps_what_the_overlap_rule_reads(
        make: Callable[[Clock], StateStore]) -> None:
    s = make(Clock())
    s.save_routine(Routine("rt1", "Hourly", "triage", "0 * * * *", "UTC", ThreadRef("slack", "C1"), "U1"))
    s.record_occurrence(Occurrence("rt1", 0.0, "r0", state="started"), None)
    s.record_occurrence(Occurrence("rt1", 1.0, "r1", state="started"), None)
    s.record_occurrence(Occurrence("rt1", 2.0, "r2", state="pending"), None)
    for due in range(3, 3 + KEEP_OCCURRENCES + 50):  # a day-long run beside an hourly routine, and then some
        s.record_occurrence(Occurrence("rt1", float(due), f"s{due}", state="skipped"), None)
    kept = s.occurrences_of("rt1", 10_000)
    assert len(kept) == KEEP_OCCURRENCES + 3  # the newest, plus what is never dropped
    assert [o.run_id for o in s.occurrences_of("rt1", 10, state="started")] == ["r1", "r0"]
    assert [o.run_id for o in s.pending_occurrences()] == ["r2"]
    assert kept[0].run_id == f"s{2 + KEEP_OCCURRENCES + 50}" and not any(o.run_id == "s3" for o in kept)
