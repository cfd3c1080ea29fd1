"""What every flower session store must do, written once and run against each backend.

tests/core/test_session_store.py (SQLite) and tests/transport/test_redis_store.py (Redis) call these checks with
their own stores; what only one backend can show (a server restart, racing pools, a new event loop)
stays in that backend's file.
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    ResultMessage,
    TextBlock,
    project_key_for_directory,
    query,
)
from claude_agent_sdk.testing import run_session_store_conformance

from flower_core.redis_store import RedisSessionStore
from flower_core.session_store import SQLiteSessionStore
from tests.conftest import scenario_of

Store = SQLiteSessionStore | RedisSessionStore

KEY: Any = {"project_key": "p", "session_id": "s"}
SUB_KEY: Any = {**KEY, "subpath": "subagents/agent-1"}


def assistant_entry(uuid: str, inp: int, read: int = 0, create: int = 0, *, model: str = "m",
                    sidechain: bool = False) -> Any:
    """A transcript entry as the CLI writes it for an assistant turn, with the usage that sets the context."""
    usage = {"input_tokens": inp, "cache_read_input_tokens": read, "cache_creation_input_tokens": create}
    return {"type": "assistant", "uuid": uuid, "isSidechain": sidechain,
            "message": {"role": "assistant", "model": model, "usage": usage, "content": []}}


async def close_store(store: Store) -> None:
    """Redis must release its async connections on the running loop; SQLite just closes its file."""
    if isinstance(store, RedisSessionStore):
        await store.aclose()
    else:
        store.close()


async def check_conformance(make_store: Callable[[int], Store]) -> None:
    """The SDK's own contract suite; ``make_store(n)`` must return an empty store each time."""
    counter = itertools.count()
    made: list[Store] = []

    def make() -> Store:
        made.append(make_store(next(counter)))
        return made[-1]

    await run_session_store_conformance(make)
    for store in made:
        await close_store(store)


async def check_uuid_replay(store: Store) -> None:
    """Replayed uuids are dropped and leave mtime alone; new entries move it. Closes the store."""
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
    await store.append(SUB_KEY, [{"type": "user", "uuid": "u1"}, {"type": "user", "uuid": "u1"}])
    await store.append(SUB_KEY, [{"type": "user", "uuid": "u1"}])
    assert [e.get("uuid") for e in await store.load(SUB_KEY) or []] == ["u1"]
    [summary_after] = await store.list_session_summaries("p")
    assert summary_after["mtime"] == after["mtime"]
    await close_store(store)


async def check_two_stores_see_one_session(a: Store, b: Store) -> None:
    """Two store objects over the same backing data read each other's writes and agree on mtime."""
    await a.append(KEY, [{"type": "user", "uuid": "1"}])
    await b.append(KEY, [{"type": "user", "uuid": "1"}, {"type": "user", "uuid": "2"}])
    await a.append(KEY, [{"type": "user", "uuid": "3"}])
    assert [e["uuid"] for e in await b.load(KEY) or []] == ["1", "2", "3"]
    mtimes = [s["mtime"] for s in await a.list_sessions("p") + await b.list_sessions("p")]
    assert len(set(mtimes)) == 1


async def check_sync_helpers(store: Store) -> None:
    """has_session / last_context / projects, which the Runtime calls without a loop. Closes the store."""
    assert not store.has_session("s") and store.last_context("s") == 0
    await store.append(KEY, [assistant_entry("a1", 100, 10, 1), {"type": "user", "uuid": "u"},
                             assistant_entry("a2", 1200, 300, 50),
                             assistant_entry("a3", 9999, sidechain=True),
                             assistant_entry("a4", 7777, model="<synthetic>"),
                             {"type": "system", "uuid": "z"}])
    await store.append(SUB_KEY, [assistant_entry("b1", 5555)])
    assert store.has_session("s") and store.has_session("s", project_key="p")
    assert not store.has_session("s", project_key="q") and not store.has_session("other")
    assert store.last_context("s") == 1550
    assert store.last_context("s", project_key="p", scan=1) == 0
    assert store.projects() == ["p"]
    await store.delete(KEY)
    assert not store.has_session("s") and store.projects() == []
    await close_store(store)
    # closed stores refuse politely rather than failing somewhere inside a dead connection
    try:
        store.has_session("s")
    except RuntimeError as exc:
        assert "closed" in str(exc)
    else:
        raise AssertionError("a closed store must refuse")


async def check_truncate_after(store: Store) -> None:
    """Cutting a transcript after an entry, as parking does before it rewrites the tail. Closes the store."""
    await store.append(KEY, [assistant_entry("a1", 100), {"type": "user", "uuid": "u"}, {"type": "x"},
                             assistant_entry("a2", 2000)])
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
    await store.append(KEY, [{"type": "user", "uuid": "u"}, assistant_entry("a2", 3000)])
    assert [e.get("uuid") for e in await store.load(KEY) or []] == ["a1", "u", "a2"]
    assert store.last_context("s", project_key="p") == 3000
    await close_store(store)


def _texts(msgs: list[Any]) -> list[str]:
    return [b.text for m in msgs if isinstance(m, AssistantMessage) for b in m.content if isinstance(b, TextBlock)]


def _assistant_texts(body: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for msg in body.get("messages", []):
        if msg.get("role") == "assistant" and isinstance(msg.get("content"), list):
            out += [b.get("text", "") for b in msg["content"] if b.get("type") == "text"]
    return out


async def check_resume_through_the_cli(make_store: Callable[[], Store],
                                       double_factory: Callable[..., Awaitable[Any]], tmp_path: Path) -> None:
    """The real SDK and CLI write a session into one store, then resume it from a second store object
    with a fresh config dir: the CLI's local transcript is gone, only the store carries the session.
    ``make_store()`` must return a new store object over the same backing data each call."""
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

    first = make_store()
    msgs = [m async for m in query(prompt="remember alpha", options=ClaudeAgentOptions(
        env=md.env(home1), cwd=str(ws), max_turns=2, setting_sources=[], session_store=first,
        session_store_flush="eager"))]
    result = msgs[-1]
    assert isinstance(result, ResultMessage) and not result.is_error
    sid = result.session_id
    await close_store(first)

    second = make_store()
    assert second.projects() == [project_key_for_directory(str(ws))]  # the key a Runtime derives from cwd
    assert second.has_session(sid, project_key=second.projects()[0]) and second.last_context(sid) == 1234
    msgs = [m async for m in query(prompt="now beta", options=ClaudeAgentOptions(
        env=md.env(home2), cwd=str(ws), max_turns=2, setting_sources=[], session_store=second, resume=sid))]
    assert _texts(msgs)[-1] == "Second turn; you said: now beta"
    resumed = md.model_requests()[-1]
    assert resumed.turn == 1 and "Alpha reply from the first process." in _assistant_texts(resumed.body)
    assert "remember alpha" in resumed.first_user_text
    assert not list(home2.rglob("*.jsonl"))  # the CLI never had a local copy in the fresh config dir
    # and the mirror kept going: the second exchange is in the store too
    entries = await second.load({"project_key": second.projects()[0], "session_id": sid}) or []
    assert any("Second turn" in str(e.get("message")) for e in entries)
    await close_store(second)
