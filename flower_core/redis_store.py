"""RedisSessionStore: the SDK's SessionStore protocol on Redis, shared by every process of a deployment.

Same semantics as ``session_store.SQLiteSessionStore`` (uuid-idempotent appends, a strictly increasing
epoch-ms ``mtime``, summaries folded only from main transcripts, subpaths), so a Runtime can take either.

Layout, for a prefix ``P`` (each name part is percent-encoded, so ``:`` and ``/`` inside it are harmless):

=====================================  ======  ===================================================
key                                    type    holds
=====================================  ======  ===================================================
``P:clock``                            string  the last mtime handed out (shared by all processes)
``P:projects``                         hash    project_key -> number of transcripts stored under it
``P:p:{pk}:sessions``                  zset    session_id -> mtime (main transcripts only)
``P:p:{pk}:summaries``                 hash    session_id -> ``{"mtime": ..., "data": ...}``
``P:s:{pk}:{sid}:subs``                hash    subpath -> mtime (a session's subagent transcripts)
``P:w:{sid}``                          zset    project_key -> mtime (find a session without its project)
``P:t:{pk}:{sid}:{sub}:entries``       list    the transcript's entries, JSON, in append order
``P:t:{pk}:{sid}:{sub}:uuids``         hash    uuid -> its index in ``entries`` (the idempotency key)
``P:t:{pk}:{sid}:{sub}:meta``          hash    ``m``: mtime of the last write, ``batch``: its batch id
=====================================  ======  ===================================================

Every write is one Lua script, so Redis applies a batch whole or not at all (the AOF records a script's
effects as one MULTI/EXEC). The summary fold is the SDK's Python function, so an append to a main
transcript reads a snapshot, folds outside Redis and writes with a compare-and-set on the transcript's
``m``; a conflicting writer makes it read again. ``m`` comes from the shared clock, which never repeats,
so a delete-and-recreate between the read and the write cannot fool the check.

The async protocol methods use ``redis.asyncio`` (its connections belong to one event loop, so the client
is built lazily in the loop that calls and rebuilt when the loop changes); the synchronous helpers the
Runtime and parking call use a blocking client. Both retry a command on a dropped connection with backoff,
and an append (or a load) waits out an outage of up to ``_OUTAGE_S`` (the SDK drops a batch whose append fails, and
the stored copy would then lag the CLI's transcript for good).

Fencing: ``fenced(hash, gen)`` is a view of the store (sharing its connections) whose writes are refused
in the same script once ``hash``'s ``gen`` field moved on, i.e. another process took the run over
(redis_scripts.py); a refused write calls ``on_stale`` and raises ``StaleWriter``. A view also knows
which of its appends are still in flight (``drained``) and whether one failed (``lagging``), so what
depends on a turn being stored is only recorded once it is.
"""

from __future__ import annotations

import asyncio
import json
import threading
import uuid as uuidlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from typing import Any, TypeVar, cast
from urllib.parse import quote

import redis
import redis.asyncio as aredis
from claude_agent_sdk import SessionStore, fold_session_summary
from claude_agent_sdk.types import (
    SessionKey,
    SessionListSubkeysKey,
    SessionStoreEntry,
    SessionStoreListEntry,
    SessionSummaryEntry,
)
from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import ExponentialWithJitterBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.retry import Retry

from flower_core.redis_scripts import APPEND_LUA, DELETE_LUA, STALE, TRUNCATE_LUA
from flower_core.session_store import SessionLookups

# About 3 s of backoff in all: enough for a supervised Redis to come back, short enough to fail visibly.
_RETRIES = 6
_BACKOFF_CAP_S, _BACKOFF_BASE_S = 1.0, 0.05
_RETRY_ON: tuple[type[Exception], ...] = (RedisConnectionError, RedisTimeoutError)


def _backoff() -> ExponentialWithJitterBackoff:
    return ExponentialWithJitterBackoff(cap=_BACKOFF_CAP_S, base=_BACKOFF_BASE_S)


# Compare-and-set rounds for one append; each lost round means another writer appended to the same session.
_CAS_ROUNDS = 64
_T = TypeVar("_T")
# How long an append (or a load) waits for Redis to come back (the SDK gives one append 60 s, then drops the batch).
_OUTAGE_S = 50.0


class StaleWriter(RuntimeError):
    """A fenced store's run has a newer holder: this process may no longer write its sessions."""

def _q(part: str) -> str:
    return quote(part, safe="")


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


async def _close_with_loop(client: aredis.Redis) -> AsyncIterator[None]:
    """Parks in the loop that owns ``client`` and closes it when that loop shuts down.

    ``asyncio.run`` (and ``asyncio.Runner``) finalise every live async generator of their loop before
    closing it; that is the last moment the client's connections can be closed cleanly, and the
    store, which only notices a new loop later, would otherwise leave them to the garbage collector.
    """
    try:
        yield
    finally:
        await client.aclose()


class _Names:
    """Key names for one prefix (see the table in the module docstring)."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.clock = f"{prefix}:clock"
        self.projects = f"{prefix}:projects"

    def sessions(self, pk: str) -> str:
        return f"{self.prefix}:p:{_q(pk)}:sessions"

    def summaries(self, pk: str) -> str:
        return f"{self.prefix}:p:{_q(pk)}:summaries"

    def subs(self, pk: str, sid: str) -> str:
        return f"{self.prefix}:s:{_q(pk)}:{_q(sid)}:subs"

    def where(self, sid: str) -> str:
        return f"{self.prefix}:w:{_q(sid)}"

    def transcript(self, pk: str, sid: str, sub: str) -> tuple[str, str, str]:
        """(meta, entries, uuids) of one transcript."""
        base = f"{self.prefix}:t:{_q(pk)}:{_q(sid)}:{_q(sub)}"
        return f"{base}:meta", f"{base}:entries", f"{base}:uuids"


class RedisSessionStore(SessionLookups, SessionStore):
    """Transcript mirror in Redis. Passes ``claude_agent_sdk.testing.run_session_store_conformance``.

    Entries with a ``uuid`` are idempotent per transcript; a batch that is entirely a replay does not
    advance ``mtime`` nor refold the summary. Only main transcripts (no ``subpath``) feed summaries.
    Several processes may share one Redis and one ``prefix``; different prefixes never see each other.
    """

    def __init__(self, url: str, *, prefix: str = "flower:ss") -> None:
        self.url = url
        self.prefix = prefix
        self._names = _Names(prefix)
        self._lock = threading.Lock()
        self._closed = False
        self._sync: redis.Redis | None = None
        self._async: aredis.Redis | None = None
        self._async_loop: asyncio.AbstractEventLoop | None = None
        self._async_scripts: dict[str, Any] = {}
        self._sync_scripts: dict[str, Any] = {}
        self._closing: set[Any] = set()  # keeps fire-and-forget close tasks alive until they finish
        self._loop_guard: Any = None
        self._fence_init("", "", None)

    def _fence_init(self, key: str, gen: str, on_stale: Callable[[], None] | None) -> None:
        self._fence_key, self._fence_gen, self._on_stale = key, gen, on_stale
        self._writes: set[asyncio.Future[None]] = set()
        #: An append failed for good: the stored transcript lacks entries the CLI wrote.
        self.lagging = False

    def fenced(self, key: str, gen: int, on_stale: Callable[[], None] | None = None) -> RedisSessionStore:
        """This store, writing only while the hash ``key`` has ``gen`` in its ``gen`` field."""
        return _FencedStore(self, key, str(gen), on_stale)

    async def drained(self, timeout: float = _OUTAGE_S) -> bool:
        """True once every append begun before this call has finished (stored or failed) within ``timeout``."""
        pending = list(self._writes)
        if not pending:
            return True
        _done, left = await asyncio.wait(pending, timeout=timeout)
        return not left

    def _fence(self, keys: list[str]) -> list[str]:
        return [self._fence_key or self._names.clock, *keys]

    def _checked(self, out: Any) -> Any:
        if isinstance(out, list) and out and out[0] == STALE:
            if self._on_stale is not None:
                self._on_stale()
            raise StaleWriter(f"another process holds this run now (generation {self._fence_gen} is stale)")
        return out

    # -- plumbing -----------------------------------------------------------------------------
    def _client(self) -> tuple[redis.Redis, dict[str, Any]]:
        with self._lock:
            if self._closed:
                raise RuntimeError("RedisSessionStore is closed")
            if self._sync is None:
                self._sync = redis.Redis.from_url(self.url, decode_responses=True, retry=Retry(_backoff(), _RETRIES),
                                                  retry_on_error=list(_RETRY_ON))
                self._sync_scripts = {"truncate": self._sync.register_script(TRUNCATE_LUA)}
            return self._sync, self._sync_scripts

    async def _aclient(self) -> tuple[aredis.Redis, dict[str, Any]]:
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._closed:
                raise RuntimeError("RedisSessionStore is closed")
            if self._async is not None and self._async_loop is loop:
                return self._async, self._async_scripts
            if self._async is not None and self._async_loop is not None:
                self._dispose(self._async, self._async_loop)
            client = aredis.Redis.from_url(self.url, decode_responses=True, retry=AsyncRetry(_backoff(), _RETRIES),
                                           retry_on_error=list(_RETRY_ON))
            scripts = {"append": client.register_script(APPEND_LUA), "delete": client.register_script(DELETE_LUA)}
            self._async, self._async_loop, self._async_scripts = client, loop, scripts
            guard = self._loop_guard = _close_with_loop(client)
        await guard.__anext__()
        return client, scripts

    def _dispose(self, client: aredis.Redis, loop: asyncio.AbstractEventLoop) -> None:
        """Close an async client from wherever we are; its connections only work inside ``loop``."""
        if loop.is_closed():
            return  # asyncio.run already closed it through _close_with_loop
        try:
            current: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            current = None
        if current is loop:
            task = loop.create_task(client.aclose())
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)
        elif loop.is_running():
            asyncio.run_coroutine_threadsafe(client.aclose(), loop)
        elif current is None:
            loop.run_until_complete(client.aclose())
        # else: an idle loop while another one runs here; _close_with_loop closes it when that loop shuts down

    def close(self) -> None:
        with self._lock:
            self._closed = True
            sync, self._sync = self._sync, None
            client, loop, self._async, self._async_loop = self._async, self._async_loop, None, None
        if sync is not None:
            sync.close()
        if client is not None and loop is not None:
            self._dispose(client, loop)

    async def aclose(self) -> None:
        """``close`` for async callers: waits for the async client's connections to be released."""
        with self._lock:
            client, loop = self._async, self._async_loop
            mine = client is not None and loop is asyncio.get_running_loop()
            if mine:
                self._async, self._async_loop = None, None
        if mine and client is not None:
            await client.aclose()
        self.close()

    # -- SessionStore protocol ------------------------------------------------------------------
    async def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        if not entries:
            return
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._writes.add(done)
        try:
            # One batch id for every try: a script Redis ran before the connection dropped knows it.
            batch = uuidlib.uuid4().hex
            await self._through_outage(lambda: self._append(key, entries, batch))
        except StaleWriter:
            raise
        except Exception:
            self.lagging = True
            raise
        finally:
            self._writes.discard(done)
            done.set_result(None)

    async def _through_outage(self, call: Callable[[], Awaitable[_T]]) -> _T:
        loop = asyncio.get_running_loop()
        deadline, delay = loop.time() + _OUTAGE_S, 0.1
        while True:
            try:
                return await call()
            except _RETRY_ON:
                if loop.time() + delay > deadline:
                    raise
                await asyncio.sleep(delay)  # Redis is away (the client's own retries ran out): try again
                delay = min(1.0, delay * 2)

    async def _append(self, key: SessionKey, entries: list[SessionStoreEntry], batch: str) -> None:
        pk, sid, sub = key["project_key"], key["session_id"], key.get("subpath") or ""
        client, scripts = await self._aclient()
        n = self._names
        meta, listed, uuids = n.transcript(pk, sid, sub)
        ids = [u if isinstance(u := entry.get("uuid"), str) else "" for entry in entries]
        flat = [part for pair in zip(ids, (_dumps(e) for e in entries), strict=True) for part in pair]
        if sub:  # no summary to fold: Redis alone decides which entries are fresh
            self._checked(await scripts["append"](keys=self._fence([n.clock, n.projects, meta, listed, uuids,
                                                                    n.subs(pk, sid)]),
                                                  args=[self._fence_gen, batch, "", pk, sid, sub, "", *flat]))
            return
        keys = [n.clock, n.projects, meta, listed, uuids, n.sessions(pk), n.where(sid), n.summaries(pk)]
        wanted = sorted({u for u in ids if u})
        for _ in range(_CAS_ROUNDS):
            async with client.pipeline(transaction=True) as pipe:
                pipe.hget(meta, "m")
                pipe.hget(n.summaries(pk), sid)
                if wanted:
                    pipe.hmget(uuids, wanted)
                m, stored, *rest = await pipe.execute()
            known = {u for u, idx in zip(wanted, rest[0] if rest else [], strict=True) if idx is not None}
            fresh: list[SessionStoreEntry] = []
            for entry, u in zip(entries, ids, strict=True):
                if u:
                    if u in known:
                        continue
                    known.add(u)
                fresh.append(entry)
            if not fresh:
                return  # a full replay: nothing changed, so neither mtime nor the summary moves
            prev = None
            if stored is not None:
                saved = json.loads(stored)
                prev = cast(SessionSummaryEntry, {"session_id": sid, "mtime": saved["mtime"], "data": saved["data"]})
            folded = fold_session_summary(prev, key, fresh)
            out = self._checked(await scripts["append"](
                keys=self._fence(keys), args=[self._fence_gen, batch, m or "0", pk, sid, "", _dumps(folded["data"]),
                                              *flat]))
            if out[0] != "conflict":
                return
        raise RuntimeError(f"append to session {sid!r} lost {_CAS_ROUNDS} races in a row")

    async def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        meta, listed, _ = self._names.transcript(key["project_key"], key["session_id"], key.get("subpath") or "")
        client, _scripts = await self._aclient()

        async def read() -> list[Any]:
            async with client.pipeline(transaction=True) as pipe:
                pipe.exists(meta)
                pipe.lrange(listed, 0, -1)
                return list(await pipe.execute())
        known, rows = await self._through_outage(read)  # a resume right after a Redis restart still finds it
        if not known:
            return None
        return [cast(SessionStoreEntry, json.loads(r)) for r in rows]

    async def list_sessions(self, project_key: str) -> list[SessionStoreListEntry]:
        client, _scripts = await self._aclient()
        rows = cast(list[tuple[str, float]],
                    await client.zrange(self._names.sessions(project_key), 0, -1, withscores=True))
        return [{"session_id": sid, "mtime": int(mtime)} for sid, mtime in rows]

    async def list_session_summaries(self, project_key: str) -> list[SessionSummaryEntry]:
        client, _scripts = await self._aclient()
        rows = cast(dict[str, str], await client.hgetall(self._names.summaries(project_key)))
        out: list[SessionSummaryEntry] = []
        for sid, raw in rows.items():
            saved = json.loads(raw)
            out.append({"session_id": sid, "mtime": int(saved["mtime"]), "data": saved["data"]})
        return out

    async def delete(self, key: SessionKey) -> None:
        pk, sid, sub = key["project_key"], key["session_id"], key.get("subpath")
        client, scripts = await self._aclient()
        n = self._names
        head = [n.projects, n.subs(pk, sid), n.sessions(pk), n.where(sid), n.summaries(pk)]
        if sub:
            self._checked(await scripts["delete"](keys=self._fence([*head, *n.transcript(pk, sid, sub)]),
                                                  args=[self._fence_gen, pk, sid, "sub", sub]))
            return
        # A main transcript takes its subagent transcripts and its summary with it: no orphans.
        for _ in range(_CAS_ROUNDS):
            subs = sorted(cast(list[str], await client.hkeys(n.subs(pk, sid))))
            keys = [*head, *(name for s in ("", *subs) for name in n.transcript(pk, sid, s))]
            out = self._checked(await scripts["delete"](keys=self._fence(keys),
                                                        args=[self._fence_gen, pk, sid, "main", "", *subs]))
            if out != "conflict":
                return
        raise RuntimeError(f"delete of session {sid!r} lost {_CAS_ROUNDS} races in a row")

    async def list_subkeys(self, key: SessionListSubkeysKey) -> list[str]:
        client, _scripts = await self._aclient()
        return sorted(cast(list[str], await client.hkeys(self._names.subs(key["project_key"], key["session_id"]))))

    # -- synchronous helpers for the Runtime (same contract as SQLiteSessionStore's) -----------------
    def projects(self) -> list[str]:
        """The project keys present (the SDK derives them from cwd; look here rather than guess)."""
        client, _scripts = self._client()
        counts = cast(dict[str, str], client.hgetall(self._names.projects))
        return sorted(pk for pk, count in counts.items() if int(count) > 0)

    def _project_of(self, session_id: str, project_key: str | None) -> str | None:
        client, _scripts = self._client()
        if project_key is not None:
            found = client.zscore(self._names.sessions(project_key), session_id) is not None
            return project_key if found else None
        newest = cast(list[str], client.zrevrange(self._names.where(session_id), 0, 0))
        return newest[0] if newest else None

    def _tail(self, project_key: str, session_id: str, scan: int) -> Iterable[Mapping[str, Any]]:
        client, _scripts = self._client()
        _meta, listed, _uuids = self._names.transcript(project_key, session_id, "")
        rows = cast(list[str], client.lrange(listed, -max(1, scan), -1))
        return (json.loads(raw) for raw in reversed(rows))

    def truncate_after(self, session_id: str, entry_uuid: str, *, project_key: str) -> int:
        """Delete what the main transcript holds after the entry ``entry_uuid``; returns how many entries went.

        For rewriting the tail of a stopped session before it resumes (runtime/parking.py closes a
        question's tool call this way). Nothing is deleted when the uuid is not in the transcript.
        """
        _client, scripts = self._client()
        n = self._names
        meta, listed, uuids = n.transcript(project_key, session_id, "")
        gone = self._checked(scripts["truncate"](
            keys=self._fence([n.clock, meta, listed, uuids, n.sessions(project_key), n.where(session_id)]),
            args=[self._fence_gen, entry_uuid, session_id, project_key]))
        return int(gone)


class _FencedStore(RedisSessionStore):
    """A fenced view (see ``RedisSessionStore.fenced``): the parent's connections, its own fence and books.
    Closing it closes nothing: the connections are the parent's."""

    def __init__(self, parent: RedisSessionStore, key: str, gen: str, on_stale: Callable[[], None] | None) -> None:
        # Not super().__init__: a view owns no connections.
        self.url, self.prefix, self._names, self._parent = parent.url, parent.prefix, parent._names, parent
        self._fence_init(key, gen, on_stale)

    def _client(self) -> tuple[redis.Redis, dict[str, Any]]:
        return self._parent._client()

    async def _aclient(self) -> tuple[aredis.Redis, dict[str, Any]]:
        return await self._parent._aclient()

    def close(self) -> None:
        return None

    async def aclose(self) -> None:
        return None
