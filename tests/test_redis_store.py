"""RedisSessionStore: the SDK's contract suite, idempotency, helpers, a server restart, and a real resume.

The checks shared with the SQLite store live in tests/store_contract.py; what only a server can show
(a restart, racing connection pools, a new event loop, another prefix) stays here.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from flower_core.redis_store import RedisSessionStore
from flower_core.runtime import Runtime
from tests import store_contract as contract
from tests.redis_support import RedisServer
from tests.store_contract import KEY, SUB_KEY, assistant_entry


async def test_conformance_suite(redis_server: RedisServer) -> None:
    # a fresh prefix per contract: each store starts empty
    await contract.check_conformance(lambda n: RedisSessionStore(redis_server.url, prefix=f"conf{n}"))


async def test_uuid_replay_is_idempotent_and_keeps_mtime(redis_server: RedisServer) -> None:
    await contract.check_uuid_replay(RedisSessionStore(redis_server.url))


async def test_two_store_objects_share_one_server(redis_server: RedisServer) -> None:
    a, b = RedisSessionStore(redis_server.url), RedisSessionStore(redis_server.url)
    await contract.check_two_stores_see_one_session(a, b)
    # another prefix is another store
    other = RedisSessionStore(redis_server.url, prefix="elsewhere")
    assert await other.load(KEY) is None and other.projects() == []
    for store in (a, b, other):
        await store.aclose()


async def test_racing_writers_lose_nothing_and_mtime_never_goes_back(redis_server: RedisServer) -> None:
    """Two stores (two connection pools, as two processes would have) append to one session at once."""
    a, b = RedisSessionStore(redis_server.url), RedisSessionStore(redis_server.url)
    seen: list[int] = []

    async def writer(store: RedisSessionStore, name: str) -> None:
        for i in range(40):
            await store.append(KEY, [{"type": "user", "uuid": f"{name}{i}", "timestamp": "2024-01-01T00:00:00Z"},
                                     {"type": "x", "n": i}])
            seen.extend(s["mtime"] for s in await store.list_sessions("p"))

    await asyncio.gather(writer(a, "a"), writer(b, "b"), writer(a, "a"))  # the third replays the first
    loaded = await a.load(KEY) or []
    ids = [e["uuid"] for e in loaded if "uuid" in e]
    assert sorted(ids) == sorted([f"a{i}" for i in range(40)] + [f"b{i}" for i in range(40)])
    assert [e["uuid"] for e in loaded if str(e.get("uuid", "")).startswith("a")] == [f"a{i}" for i in range(40)]
    assert len(loaded) - len(ids) == 120  # uuid-less entries are never deduped: 3 writers x 40
    [summary] = await a.list_session_summaries("p")
    [listed] = await a.list_sessions("p")
    assert summary["mtime"] == listed["mtime"] and summary["data"].get("created_at")
    assert max(seen) == listed["mtime"]
    await a.aclose()
    await b.aclose()


async def test_sync_helpers(redis_server: RedisServer) -> None:
    await contract.check_sync_helpers(RedisSessionStore(redis_server.url))


async def test_truncate_after(redis_server: RedisServer) -> None:
    with RedisSessionStore(redis_server.url) as store:
        await contract.check_truncate_after(store)


async def test_data_survives_a_server_restart_and_a_kill(redis_server: RedisServer) -> None:
    store = RedisSessionStore(redis_server.url)
    await store.append(KEY, [assistant_entry("a1", 100), {"type": "x", "text": "ünïcode ✓"}])
    await store.append(SUB_KEY, [{"type": "user", "uuid": "b"}])
    before = (await store.load(KEY), await store.list_sessions("p"), await store.list_session_summaries("p"))
    redis_server.restart()  # same port: the store's clients reconnect through their retry policy
    assert (await store.load(KEY), await store.list_sessions("p"), await store.list_session_summaries("p")) == before
    assert store.has_session("s") and await store.list_subkeys(KEY) == ["subagents/agent-1"]
    await store.append(KEY, [{"type": "user", "uuid": "u2"}])
    redis_server.kill()  # no goodbye: appendfsync always kept every acknowledged write
    redis_server.start()
    assert [e.get("uuid") for e in await store.load(KEY) or []] == ["a1", None, "u2"]
    [listed] = await store.list_sessions("p")
    assert listed["mtime"] > before[1][0]["mtime"]
    await store.aclose()


def test_the_store_follows_a_new_event_loop(redis_server: RedisServer) -> None:
    """redis.asyncio connections belong to a loop; a Runtime driven by two asyncio.run calls must still work."""
    store = RedisSessionStore(redis_server.url)
    asyncio.run(store.append(KEY, [{"type": "user", "uuid": "1"}]))
    asyncio.run(store.append(KEY, [{"type": "user", "uuid": "2"}]))
    assert [e["uuid"] for e in asyncio.run(store.load(KEY)) or []] == ["1", "2"]
    store.close()


async def test_runtime_uses_a_given_store_and_leaves_it_open(redis_server: RedisServer, tmp_path: Path) -> None:
    store = RedisSessionStore(redis_server.url)
    rt = Runtime(workspace=tmp_path / "ws", run_dir=tmp_path / "run", session_store=store)
    assert rt.store is store and not (tmp_path / "run" / "sessions.db").exists()
    await store.append({"project_key": rt.project_key, "session_id": "s1"}, [assistant_entry("a", 4321)])
    assert rt.has_session("s1") and rt.context_of("s1") == 4321
    rt.close()
    assert store.has_session("s1")  # the caller's store is still open
    await store.aclose()


async def test_resume_from_the_store_with_a_fresh_store_and_config_dir(
        double_factory: Any, redis_server: RedisServer, tmp_path: Path) -> None:
    """Only Redis carries the session into the second process."""
    await contract.check_resume_through_the_cli(lambda: RedisSessionStore(redis_server.url), double_factory, tmp_path)
