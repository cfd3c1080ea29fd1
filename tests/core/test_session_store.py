"""SQLiteSessionStore: the SDK's own contract suite, idempotency, helpers, and a real resume from the store.

The checks themselves live in tests/support/store_contract.py, shared with the Redis store; what is about one
SQLite file shared by several connections stays here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flower_core.session_store import SQLiteSessionStore
from tests.support import store_contract as contract


async def test_conformance_suite(tmp_path: Path) -> None:
    await contract.check_conformance(lambda n: SQLiteSessionStore(tmp_path / f"s{n}.db"))


async def test_uuid_replay_is_idempotent_and_keeps_mtime(tmp_path: Path) -> None:
    with SQLiteSessionStore(tmp_path / "s.db") as store:
        await contract.check_uuid_replay(store)


async def test_two_store_objects_share_one_file(tmp_path: Path) -> None:
    """Two connections to one WAL file, as a bot and a worker process would hold."""
    a, b = SQLiteSessionStore(tmp_path / "s.db"), SQLiteSessionStore(tmp_path / "s.db")
    try:
        await contract.check_two_stores_see_one_session(a, b)
    finally:
        a.close()
        b.close()


async def test_sync_helpers(tmp_path: Path) -> None:
    with SQLiteSessionStore(tmp_path / "s.db") as store:
        await contract.check_sync_helpers(store)


async def test_truncate_after(tmp_path: Path) -> None:
    with SQLiteSessionStore(tmp_path / "s.db") as store:
        await contract.check_truncate_after(store)


async def test_resume_from_the_store_with_a_fresh_store_and_config_dir(double_factory: Any, tmp_path: Path) -> None:
    """Only the SQLite file carries the session into the second process."""
    db = tmp_path / "run" / "sessions.db"
    await contract.check_resume_through_the_cli(lambda: SQLiteSessionStore(db), double_factory, tmp_path)
