"""SQLiteSessionStore: the SDK's own contract suite, idempotency, helpers, and a real resume from the store."""

from __future__ import annotations

import itertools
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

from flower_core.session_store import SQLiteSessionStore
from tests.conftest import scenario_of

KEY: Any = {"project_key": "p", "session_id": "s"}


def _assistant(uuid: str, inp: int, read: int = 0, create: int = 0, *, model: str = "m",
               sidechain: bool = False) -> Any:
    usage = {"input_tokens": inp, "cache_read_input_tokens": read, "cache_creation_input_tokens": create}
    return {"type": "assistant", "uuid": uuid, "isSidechain": sidechain,
            "message": {"role": "assistant", "model": model, "usage": usage, "content": []}}


async def test_conformance_suite(tmp_path: Path) -> None:
    counter = itertools.count()
    made: list[SQLiteSessionStore] = []

    def make() -> SQLiteSessionStore:
        made.append(SQLiteSessionStore(tmp_path / f"s{next(counter)}.db"))
        return made[-1]

    await run_session_store_conformance(make)
    for store in made:
        store.close()


async def test_uuid_replay_is_idempotent_and_keeps_mtime(tmp_path: Path) -> None:
    with SQLiteSessionStore(tmp_path / "s.db") as store:
        batch: Any = [{"type": "user", "uuid": "u1"}, {"type": "x"}, {"type": "assistant", "uuid": "u2"}]
        await store.append(KEY, batch)
        [before] = await store.list_sessions("p")
        [summary_before] = await store.list_session_summaries("p")
        await store.append(KEY, [{"type": "user", "uuid": "u1"}, {"type": "assistant", "uuid": "u2"}])
        assert await store.list_sessions("p") == [before]
        assert await store.list_session_summaries("p") == [summary_before]
        await store.append(KEY, [{"type": "user", "uuid": "u2"}, {"type": "user", "uuid": "u3"},
                                 {"type": "user", "uuid": "u3"}])
        loaded = await store.load(KEY)
        assert [e.get("uuid") for e in loaded or []] == ["u1", None, "u2", "u3"]
        [after] = await store.list_sessions("p")
        assert after["mtime"] > before["mtime"]


async def test_two_store_objects_share_one_file(tmp_path: Path) -> None:
    a, b = SQLiteSessionStore(tmp_path / "s.db"), SQLiteSessionStore(tmp_path / "s.db")
    try:
        await a.append(KEY, [{"type": "user", "uuid": "1"}])
        await b.append(KEY, [{"type": "user", "uuid": "1"}, {"type": "user", "uuid": "2"}])
        await a.append(KEY, [{"type": "user", "uuid": "3"}])
        assert [e["uuid"] for e in await b.load(KEY) or []] == ["1", "2", "3"]
        mtimes = [s["mtime"] for s in await a.list_sessions("p") + await b.list_sessions("p")]
        assert len(set(mtimes)) == 1
    finally:
        a.close()
        b.close()


async def test_sync_helpers(tmp_path: Path) -> None:
    with SQLiteSessionStore(tmp_path / "s.db") as store:
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
    # closed stores refuse politely rather than segfaulting on a dead connection
    try:
        store.has_session("s")
    except RuntimeError as exc:
        assert "closed" in str(exc)
    else:
        raise AssertionError("a closed store must refuse")


def _texts(msgs: list[Any]) -> list[str]:
    return [b.text for m in msgs if isinstance(m, AssistantMessage) for b in m.content if isinstance(b, TextBlock)]


def _assistant_texts(body: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for msg in body.get("messages", []):
        if msg.get("role") == "assistant" and isinstance(msg.get("content"), list):
            out += [b.get("text", "") for b in msg["content"] if b.get("type") == "text"]
    return out


async def test_resume_from_the_store_with_a_fresh_store_and_config_dir(double_factory: Any, tmp_path: Path) -> None:
    """The CLI's local transcript is gone (new config dir); only the SQLite file carries the session."""
    ws, db = tmp_path / "ws", tmp_path / "run" / "sessions.db"
    ws.mkdir()
    home1, home2 = tmp_path / "home1", tmp_path / "home2"
    home1.mkdir()
    home2.mkdir()
    md = await double_factory(scenario_of({"name": "main", "turn": [
        {"say": "Alpha reply from the first process.", "usage": {"input_tokens": 1000,
                                                                  "cache_read_input_tokens": 234}},
        {"say": "Second turn; you said: {last_user_text}"},
    ]}))

    first = SQLiteSessionStore(db)
    msgs = [m async for m in query(prompt="remember alpha", options=ClaudeAgentOptions(
        env=md.env(home1), cwd=str(ws), max_turns=2, setting_sources=[], session_store=first,
        session_store_flush="eager"))]
    result = msgs[-1]
    assert isinstance(result, ResultMessage) and not result.is_error
    sid = result.session_id
    first.close()

    second = SQLiteSessionStore(db)
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
    second.close()
