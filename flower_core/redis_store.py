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
which carries a store across a Redis restart.
"""

from __future__ import annotations

import asyncio
import json
import threading
import uuid as uuidlib
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any, cast
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

from flower_core.session_store import SessionLookups

# About 3 s of backoff in all: enough for a supervised Redis to come back, short enough to fail visibly.
_RETRIES = 6
_BACKOFF_CAP_S, _BACKOFF_BASE_S = 1.0, 0.05
_RETRY_ON: tuple[type[Exception], ...] = (RedisConnectionError, RedisTimeoutError)


def _backoff() -> ExponentialWithJitterBackoff:
    return ExponentialWithJitterBackoff(cap=_BACKOFF_CAP_S, base=_BACKOFF_BASE_S)


# Compare-and-set rounds for one append; each lost round means another writer appended to the same session.
_CAS_ROUNDS = 64

# Strictly increasing epoch-ms from Redis's own clock, so processes on skewed hosts still agree.
_CLOCK_LUA = """
local function next_mtime(clock)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local last = tonumber(redis.call('GET', clock) or '0')
  if now <= last then now = last + 1 end
  redis.call('SET', clock, string.format('%d', now))
  return now
end
"""

# KEYS: clock, projects, meta, entries, uuids, then subs (subpath) or sessions, where, summaries (main).
# ARGV: batch id, expected m ('' = no check), project_key, session_id, subpath, summary data, then
# (uuid or '', json) pairs. Returns {'ok', mtime} | {'replay'} | {'conflict'} | {'dup'}.
_APPEND_LUA = _CLOCK_LUA + """
local meta = KEYS[3]
if redis.call('HGET', meta, 'batch') == ARGV[1] then return {'dup'} end
local m = redis.call('HGET', meta, 'm')
if ARGV[2] ~= '' and (m or '0') ~= ARGV[2] then return {'conflict'} end
local len = redis.call('LLEN', KEYS[4])
local fresh = 0
for i = 7, #ARGV, 2 do
  local id = ARGV[i]
  if id == '' or redis.call('HSETNX', KEYS[5], id, len) == 1 then
    redis.call('RPUSH', KEYS[4], ARGV[i + 1])
    len = len + 1
    fresh = fresh + 1
  end
end
if fresh == 0 then return {'replay'} end
local mtime = next_mtime(KEYS[1])
local stamp = string.format('%d', mtime)
if not m then redis.call('HINCRBY', KEYS[2], ARGV[3], 1) end
redis.call('HSET', meta, 'm', stamp, 'batch', ARGV[1])
if ARGV[5] ~= '' then
  redis.call('HSET', KEYS[6], ARGV[5], stamp)
else
  redis.call('ZADD', KEYS[6], stamp, ARGV[4])
  redis.call('ZADD', KEYS[7], stamp, ARGV[3])
  redis.call('HSET', KEYS[8], ARGV[4], '{"mtime":' .. stamp .. ',"data":' .. ARGV[6] .. '}')
end
return {'ok', mtime}
"""

# KEYS: projects, subs, sessions, where, summaries, then (meta, entries, uuids) per transcript.
# ARGV: project_key, session_id, 'main' | 'sub', then the subpath of each transcript ('' for main).
# A main delete names every subpath it saw; if the session gained one since, it answers 'conflict'.
_DELETE_LUA = """
local pk, sid, mode = ARGV[1], ARGV[2], ARGV[3]
if mode == 'main' then
  local listed = #ARGV - 4
  if redis.call('HLEN', KEYS[2]) ~= listed then return 'conflict' end
  for i = 5, #ARGV do
    if redis.call('HEXISTS', KEYS[2], ARGV[i]) == 0 then return 'conflict' end
  end
end
for i = 6, #KEYS, 3 do
  if redis.call('EXISTS', KEYS[i]) == 1 then redis.call('HINCRBY', KEYS[1], pk, -1) end
  redis.call('DEL', KEYS[i], KEYS[i + 1], KEYS[i + 2])
end
if mode == 'main' then
  redis.call('DEL', KEYS[2])
  redis.call('ZREM', KEYS[3], sid)
  redis.call('ZREM', KEYS[4], pk)
  redis.call('HDEL', KEYS[5], sid)
else
  redis.call('HDEL', KEYS[2], ARGV[4])
end
if tonumber(redis.call('HGET', KEYS[1], pk) or '0') <= 0 then redis.call('HDEL', KEYS[1], pk) end
return 'ok'
"""

# KEYS: clock, meta, entries, uuids, sessions, where. ARGV: uuid, session_id, project_key.
# Keeps the entries up to and including the one with that uuid; returns how many went.
_TRUNCATE_LUA = _CLOCK_LUA + """
local idx = redis.call('HGET', KEYS[4], ARGV[1])
if not idx then return 0 end
idx = tonumber(idx)
local gone = redis.call('LLEN', KEYS[3]) - 1 - idx
if gone <= 0 then return 0 end
redis.call('LTRIM', KEYS[3], 0, idx)
local known = redis.call('HGETALL', KEYS[4])
for i = 1, #known, 2 do
  if tonumber(known[i + 1]) > idx then redis.call('HDEL', KEYS[4], known[i]) end
end
local stamp = string.format('%d', next_mtime(KEYS[1]))
redis.call('HSET', KEYS[2], 'm', stamp)
redis.call('ZADD', KEYS[5], stamp, ARGV[2])
redis.call('ZADD', KEYS[6], stamp, ARGV[3])
return gone
"""


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

    # -- plumbing -----------------------------------------------------------------------------
    def _client(self) -> tuple[redis.Redis, dict[str, Any]]:
        with self._lock:
            if self._closed:
                raise RuntimeError("RedisSessionStore is closed")
            if self._sync is None:
                self._sync = redis.Redis.from_url(self.url, decode_responses=True, retry=Retry(_backoff(), _RETRIES),
                                                  retry_on_error=list(_RETRY_ON))
                self._sync_scripts = {"truncate": self._sync.register_script(_TRUNCATE_LUA)}
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
            scripts = {"append": client.register_script(_APPEND_LUA), "delete": client.register_script(_DELETE_LUA)}
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
        pk, sid, sub = key["project_key"], key["session_id"], key.get("subpath") or ""
        client, scripts = await self._aclient()
        n = self._names
        meta, listed, uuids = n.transcript(pk, sid, sub)
        ids = [u if isinstance(u := entry.get("uuid"), str) else "" for entry in entries]
        flat = [part for pair in zip(ids, (_dumps(e) for e in entries), strict=True) for part in pair]
        # A retried script (connection lost after Redis ran it) recognises its own batch id and stops.
        batch = uuidlib.uuid4().hex
        if sub:  # no summary to fold: Redis alone decides which entries are fresh
            await scripts["append"](keys=[n.clock, n.projects, meta, listed, uuids, n.subs(pk, sid)],
                                    args=[batch, "", pk, sid, sub, "", *flat])
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
            out = await scripts["append"](keys=keys, args=[batch, m or "0", pk, sid, "", _dumps(folded["data"]),
                                                           *flat])
            if out[0] != "conflict":
                return
        raise RuntimeError(f"append to session {sid!r} lost {_CAS_ROUNDS} races in a row")

    async def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        meta, listed, _ = self._names.transcript(key["project_key"], key["session_id"], key.get("subpath") or "")
        client, _scripts = await self._aclient()
        async with client.pipeline(transaction=True) as pipe:
            pipe.exists(meta)
            pipe.lrange(listed, 0, -1)
            known, rows = await pipe.execute()
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
            await scripts["delete"](keys=[*head, *n.transcript(pk, sid, sub)], args=[pk, sid, "sub", sub])
            return
        # A main transcript takes its subagent transcripts and its summary with it: no orphans.
        for _ in range(_CAS_ROUNDS):
            subs = sorted(cast(list[str], await client.hkeys(n.subs(pk, sid))))
            keys = [*head, *(name for s in ("", *subs) for name in n.transcript(pk, sid, s))]
            if await scripts["delete"](keys=keys, args=[pk, sid, "main", "", *subs]) != "conflict":
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
        gone = scripts["truncate"](keys=[n.clock, meta, listed, uuids, n.sessions(project_key), n.where(session_id)],
                                   args=[entry_uuid, session_id, project_key])
        return int(gone)
