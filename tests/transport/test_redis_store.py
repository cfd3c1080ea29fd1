"""RedisSessionStore: the SDK's contract suite, idempotency, helpers, a server restart, and a real resume.

The checks shared with the SQLite store live in tests/support/store_contract.py; what only a server can show
(a restart, racing connection pools, a new event loop, another prefix) stays here.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from flower_core.redis_store import RedisSessionStore, StaleWriter
from flower_core.runtime import Runtime
from tests.support import store_contract as contract
from tests.support.redis_support import RedisServer
from tests.support.store_contract import KEY, SUB_KEY, assistant_entry


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


async def test_a_fenced_view_writes_only_while_its_generation_holds(redis_server: RedisServer) -> None:
    store = RedisSessionStore(redis_server.url)
    client, _ = await store._aclient()
    await client.hset("run:r1", "gen", 1)
    stale: list[int] = []
    view = store.fenced("run:r1", 1, on_stale=lambda: stale.append(1))
    await view.append(KEY, [assistant_entry("a1", 10), assistant_entry("a2", 10)])
    await view.append(SUB_KEY, [{"type": "user", "uuid": "s1"}])
    assert view.truncate_after("s", "a1", project_key="p") == 1 and not stale
    await client.hincrby("run:r1", "gen", 1)  # another process took the run over
    with pytest.raises(StaleWriter):
        await view.append(KEY, [assistant_entry("late", 10)])
    with pytest.raises(StaleWriter):
        await view.append(SUB_KEY, [{"type": "user", "uuid": "late"}])
    with pytest.raises(StaleWriter):
        view.truncate_after("s", "a1", project_key="p")
    with pytest.raises(StaleWriter):
        await view.delete(KEY)
    assert len(stale) == 4 and not view.lagging  # refused, not lost: the stored copy is the new holder's
    assert [e.get("uuid") for e in await store.load(KEY) or []] == ["a1"]
    assert [e.get("uuid") for e in await view.load(SUB_KEY) or []] == ["s1"]  # reads go on
    await store.fenced("run:r1", 2).append(KEY, [assistant_entry("b1", 10)])
    await store.append(KEY, [assistant_entry("plain", 10)])  # the store itself is not fenced
    assert [e.get("uuid") for e in await store.load(KEY) or []] == ["a1", "b1", "plain"]
    view.close()  # a view owns no connections: the store goes on
    assert store.has_session("s")
    await store.aclose()


async def test_an_append_waits_out_a_redis_outage(redis_server: RedisServer) -> None:
    """The SDK drops a batch whose append fails (the copy would lag the CLI's transcript for good), so an
    append outlasts an outage longer than the client's own retries (about 3 s)."""
    store = RedisSessionStore(redis_server.url)
    view = store.fenced("run:r1", 1)
    client, _ = await store._aclient()
    await client.hset("run:r1", "gen", 1)
    await view.append(KEY, [assistant_entry("a1", 10)])
    redis_server.stop()
    pending = asyncio.ensure_future(view.append(KEY, [assistant_entry("a2", 10)]))
    await asyncio.sleep(4.0)  # the outage
    assert not pending.done() and not await view.drained(timeout=0.01)
    redis_server.start()
    await asyncio.wait_for(pending, 30)
    assert await view.drained(timeout=0.01) and not view.lagging
    assert [e.get("uuid") for e in await store.load(KEY) or []] == ["a1", "a2"]
    await store.aclose()
