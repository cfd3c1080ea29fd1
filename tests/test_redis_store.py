"""RedisSessionStore: the SDK's contract suite, idempotency, helpers, a server restart, and a real resume."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path
from typing import Any

from claude_agent_sdk import ClaudeAgentOptions, ResultMessage, project_key_for_directory, query
from claude_agent_sdk.testing import run_session_store_conformance

from flower_core.redis_store import RedisSessionStore
from flower_core.runtime import Runtime
from tests.conftest import scenario_of
from tests.redis_support import RedisServer
from tests.test_session_store import _assistant, _assistant_texts, _texts

KEY: Any = {"project_key": "p", "session_id": "s"}


async def test_conformance_suite(redis_server: RedisServer) -> None:
    counter = itertools.count()
    made: list[RedisSessionStore] = []

    def make() -> RedisSessionStore:  # a fresh prefix per contract: each store starts empty
        made.append(RedisSessionStore(redis_server.url, prefix=f"conf{next(counter)}"))
        return made[-1]

    await run_session_store_conformance(make)
    for store in made:
        await store.aclose()


async def test_uuid_replay_is_idempotent_and_keeps_mtime(redis_server: RedisServer) -> None:
    store = RedisSessionStore(redis_server.url)
    batch: Any = [{"type": "user", "uuid": "u1"}, {"type": "x"}, {"type": "assistant", "uuid": "u2"}]
    await store.append(KEY, batch)
    [before] = await store.list_sessions("p")
    [summary_before] = await store.list_session_summaries("p")
    assert summary_before["mtime"] == before["mtime"]
    await store.append(KEY, [{"type": "user", "uuid": "u1"}, {"type": "assistant", "uuid": "u2"}])
    assert await store.list_sessions("p") == [before]
    assert await store.list_session_summaries("p") == [summary_before]
    await store.append(KEY, [{"type": "user", "uuid": "u2"}, {"type": "user", "uuid": "u3"},
                             {"type": "user", "uuid": "u3"}])
    loaded = await store.load(KEY)
    assert [e.get("uuid") for e in loaded or []] == ["u1", None, "u2", "u3"]
    [after] = await store.list_sessions("p")
    assert after["mtime"] > before["mtime"]
    # a subagent transcript dedupes on its own, and never moves the main summary
    sub: Any = {**KEY, "subpath": "subagents/agent-1"}
    await store.append(sub, [{"type": "user", "uuid": "u1"}, {"type": "user", "uuid": "u1"}])
    await store.append(sub, [{"type": "user", "uuid": "u1"}])
    assert [e.get("uuid") for e in await store.load(sub) or []] == ["u1"]
    [summary_after] = await store.list_session_summaries("p")
    assert summary_after["mtime"] == after["mtime"]
    await store.aclose()


async def test_two_store_objects_share_one_server(redis_server: RedisServer) -> None:
    a, b = RedisSessionStore(redis_server.url), RedisSessionStore(redis_server.url)
    await a.append(KEY, [{"type": "user", "uuid": "1"}])
    await b.append(KEY, [{"type": "user", "uuid": "1"}, {"type": "user", "uuid": "2"}])
    await a.append(KEY, [{"type": "user", "uuid": "3"}])
    assert [e["uuid"] for e in await b.load(KEY) or []] == ["1", "2", "3"]
    mtimes = [s["mtime"] for s in await a.list_sessions("p") + await b.list_sessions("p")]
    assert len(set(mtimes)) == 1
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
    store = RedisSessionStore(redis_server.url)
    assert not store.has_session("s") and store.last_context("s") == 0
    await store.append(KEY, [_assistant("a1", 100, 10, 1), {"type": "user", "uuid": "u"},
                             _assistant("a2", 1200, 300, 50),
                             _assistant("a3", 9999, sidechain=True),
                             _assistant("a4", 7777, model="<synthetic>"),
                             {"type": "system", "uuid": "z"}])
    sub: Any = {**KEY, "subpath": "subagents/agent-1"}
    await store.append(sub, [_assistant("b1", 5555)])
    assert store.has_session("s") and store.has_session("s", project_key="p")
    assert not store.has_session("s", project_key="q") and not store.has_session("other")
    assert store.last_context("s") == 1550
    assert store.last_context("s", project_key="p", scan=1) == 0
    assert store.projects() == ["p"]
    await store.delete(KEY)
    assert not store.has_session("s") and store.projects() == []
    await store.aclose()
    # closed stores refuse politely
    try:
        store.has_session("s")
    except RuntimeError as exc:
        assert "closed" in str(exc)
    else:
        raise AssertionError("a closed store must refuse")


async def test_truncate_after(redis_server: RedisServer) -> None:
    with RedisSessionStore(redis_server.url) as store:
        await store.append(KEY, [_assistant("a1", 100), {"type": "user", "uuid": "u"}, {"type": "x"},
                                 _assistant("a2", 2000)])
        [before] = await store.list_sessions("p")
        assert store.truncate_after("s", "nope", project_key="p") == 0
        assert store.truncate_after("s", "a2", project_key="p") == 0  # already the last entry
        assert store.truncate_after("s", "u", project_key="q") == 0  # another project holds nothing
        assert await store.list_sessions("p") == [before]
        assert store.truncate_after("s", "u", project_key="p") == 2
        assert [e.get("uuid") for e in await store.load(KEY) or []] == ["a1", "u"]
        [after] = await store.list_sessions("p")
        assert after["mtime"] > before["mtime"]
        assert store.last_context("s") == 100
        # the cut uuid is free again: the rewritten tail goes in, the kept ones still dedupe
        await store.append(KEY, [{"type": "user", "uuid": "u"}, _assistant("a2", 3000)])
        assert [e.get("uuid") for e in await store.load(KEY) or []] == ["a1", "u", "a2"]
        assert store.last_context("s", project_key="p") == 3000
        await store.aclose()


async def test_data_survives_a_server_restart_and_a_kill(redis_server: RedisServer) -> None:
    store = RedisSessionStore(redis_server.url)
    await store.append(KEY, [_assistant("a1", 100), {"type": "x", "text": "ünïcode ✓"}])
    await store.append({**KEY, "subpath": "subagents/agent-1"}, [{"type": "user", "uuid": "b"}])
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
    await store.append({"project_key": rt.project_key, "session_id": "s1"}, [_assistant("a", 4321)])
    assert rt.has_session("s1") and rt.context_of("s1") == 4321
    rt.close()
    assert store.has_session("s1")  # the caller's store is still open
    await store.aclose()


async def test_resume_from_the_store_with_a_fresh_store_and_config_dir(
        double_factory: Any, redis_server: RedisServer, tmp_path: Path) -> None:
    """The CLI's local transcript is gone (new config dir); only Redis carries the session."""
    ws = tmp_path / "ws"
    ws.mkdir()
    home1, home2 = tmp_path / "home1", tmp_path / "home2"
    home1.mkdir()
    home2.mkdir()
    md = await double_factory(scenario_of({"name": "main", "turn": [
        {"say": "Alpha reply from the first process.", "usage": {"input_tokens": 1000,
                                                                  "cache_read_input_tokens": 234}},
        {"say": "Second turn; you said: {last_user_text}"},
    ]}))

    first = RedisSessionStore(redis_server.url)
    msgs = [m async for m in query(prompt="remember alpha", options=ClaudeAgentOptions(
        env=md.env(home1), cwd=str(ws), max_turns=2, setting_sources=[], session_store=first,
        session_store_flush="eager"))]
    result = msgs[-1]
    assert isinstance(result, ResultMessage) and not result.is_error
    sid = result.session_id
    await first.aclose()

    second = RedisSessionStore(redis_server.url)
    assert second.projects() == [project_key_for_directory(str(ws))]  # the key a Runtime derives from cwd
    assert second.has_session(sid, project_key=second.projects()[0]) and second.last_context(sid) == 1234
    msgs = [m async for m in query(prompt="now beta", options=ClaudeAgentOptions(
        env=md.env(home2), cwd=str(ws), max_turns=2, setting_sources=[], session_store=second, resume=sid))]
    assert _texts(msgs)[-1] == "Second turn; you said: now beta"
    resumed = md.model_requests()[-1]
    assert resumed.turn == 1 and "Alpha reply from the first process." in _assistant_texts(resumed.body)
    assert "remember alpha" in resumed.first_user_text
    assert not list(home2.rglob("*.jsonl"))  # the CLI never had a local copy in the fresh config dir
    entries = await second.load({"project_key": second.projects()[0], "session_id": sid}) or []
    assert any("Second turn" in str(e.get("message")) for e in entries)
    await second.aclose()
