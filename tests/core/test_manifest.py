"""Manifest: append semantics across objects and processes; nothing lost, nothing half-written."""

from __future__ import annotations

import json
import multiprocessing as mp
from pathlib import Path
from typing import Any

import pytest

from flower_core.manifest import Manifest

ROWS_PER_WRITER = 40


def _writer(path: str, run_id: str, start: Any) -> None:
    """Child process: wait for the common start, then record rows as fast as possible."""
    start.wait(timeout=30)
    m = Manifest(path, run_id)
    for i in range(ROWS_PER_WRITER):
        m.record({"step": f"{run_id}-{i}", "ok": True, "cost_usd": 0.01 * i})


def test_record_stamps_the_run_and_keeps_other_runs(tmp_path: Path) -> None:
    path = tmp_path / "manifest.json"
    a, b = Manifest(path, "run-a"), Manifest(path, "run-b")
    a.record({"step": "one", "ok": True})
    b.record({"step": "other", "ok": False})
    a.record({"step": "two", "ok": True})
    assert [(r["run"], r["step"]) for r in a.rows()] == [("run-a", "one"), ("run-a", "two"), ("run-b", "other")]
    assert [r["step"] for r in b.rows("run-b")] == ["other"]
    assert json.loads(path.read_text()) == a.rows()
    assert not list(tmp_path.glob(".manifest.json.*.tmp"))  # temp files never linger


def test_replace_by_index_and_reopen_adopts_own_rows(tmp_path: Path) -> None:
    path = tmp_path / "manifest.json"
    m = Manifest(path, "r1")
    i = m.record({"step": "work", "ok": False, "error": "in-flight"})
    assert m.record({"step": "work", "ok": True}, index=i) == i
    Manifest(path, "r0").record({"step": "x"})
    again = Manifest(path, "r1")  # a restarted process continuing the same run
    again.record({"step": "next"})
    assert [(r["run"], r["step"], r.get("ok")) for r in again.rows()] == [
        ("r1", "work", True), ("r1", "next", None), ("r0", "x", None)]
    assert again.own_rows() == again.rows("r1")


def test_unreadable_file_is_kept_aside_not_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "manifest.json"
    path.write_text("{not json")
    Manifest(path, "r").record({"step": "s"})
    [aside] = list(tmp_path.glob("manifest.json.corrupt-*"))
    assert aside.read_text() == "{not json"
    assert [r["step"] for r in json.loads(path.read_text())] == ["s"]


def test_concurrent_processes_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "manifest.json"
    ctx = mp.get_context("spawn")
    start = ctx.Event()
    procs = [ctx.Process(target=_writer, args=(str(path), f"run{k}", start)) for k in range(3)]
    for p in procs:
        p.start()
    start.set()
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    rows = json.loads(path.read_text())
    assert len(rows) == 3 * ROWS_PER_WRITER
    for k in range(3):
        assert [r["step"] for r in rows if r["run"] == f"run{k}"] == [f"run{k}-{i}" for i in range(ROWS_PER_WRITER)]


def test_a_bounded_record_gives_up_instead_of_deadlocking(tmp_path: Path) -> None:
    # rescue() runs in a signal handler that may interrupt a write holding the lock.
    m = Manifest(tmp_path / "manifest.json", "run-a")
    assert m._mutex.acquire()
    try:
        with pytest.raises(TimeoutError):
            m.record({"step": "x"}, wait_s=0.05)
    finally:
        m._mutex.release()
    assert m.record({"step": "x"}, wait_s=0.05) == 0
