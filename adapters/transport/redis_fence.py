"""Fenced writes and liveness on Redis's own clock: every script a holder or a claimer runs.

A run's holder is whoever bumped the run hash's ``gen`` last (at claim time, in the same script that
moved the work entry to it). Every write a holder makes names its gen and is refused when the hash
holds another one — in the same script, so a holder that was replaced cannot slip one write in:

| script   | writes                                                   | refused (returns 0) unless       |
|----------|----------------------------------------------------------|----------------------------------|
| take     | work entry -> me (XCLAIM), ``gen`` + 1, holder           | the entry is mine (new, resumed) |
|          |                                                          | or its owner is dead (claim)     |
| publish  | one event / step / hello on the events stream            | ``gen`` is still mine            |
| end      | the end (also kept as ``end``), XACK + XDEL of the work  | ``gen`` is still mine            |
|          | entry, ``ended``,                                        |                                  |
|          | expiries; every intent after the holder's cursor refused |                                  |
|          | (settled moot, "the run had ended" replied), same script |                                  |
| log      | one intent on the run's stream (the front's)             | the run has not ended            |
| settle   | iid -> how in the run's settled hash                     | ``gen`` is still mine            |
| reply    | one intent's reply list                                  | ``gen`` is still mine            |
| release  | work entry -> the ``~released`` consumer (anyone claims) | the entry is mine                |
| beat     | my beat: Redis TIME and my dead-after; what I hold       | (answers which of my runs moved) |

Liveness. A beat is ``"<ms> <dead_after_ms>"`` in one hash, stamped with Redis ``TIME`` (never the
worker's clock, never a key that expires while Redis is down). A worker is dead when

    now - max(its last beat, when this Redis process started) >= its dead_after

with ``now`` and the start (``TIME`` - INFO ``uptime_in_seconds``) both Redis's. Right after a Redis
restart every beat on file is old, and nobody is dead until ``dead_after`` of Redis uptime has passed
without a beat: the live workers have beaten again by then. A name with no beat on file (stopped, or
lost with Redis's data) is judged on the start alone; ``~released`` is dead by definition.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from adapters.transport import wire

if TYPE_CHECKING:
    from redis.asyncio import Redis
    from redis.asyncio.client import Pipeline

_CLOCK = """
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function started_ms(now)
  local up = string.match(redis.call('INFO', 'server'), 'uptime_in_seconds:(%d+)')
  return now - (tonumber(up) or 0) * 1000
end
local function is_dead(beats, name, now, default_after)
  if name == '""" + wire.RELEASED + """' then return true end
  local last, after = 0, tonumber(default_after)
  local raw = redis.call('HGET', beats, name)
  if raw then
    local a, b = string.match(raw, '^(%d+) (%d+)$')
    if a then last, after = tonumber(a), tonumber(b) end
  end
  return now - math.max(last, started_ms(now)) >= after
end
local function mine(run, gen)
  return redis.call('HGET', run, 'gen') == gen
end
"""

# KEYS: beats, about, then the run hash of each run held. ARGV: name, dead_after_ms, about, then each gen.
# Returns {now_ms, i...}: the 1-based positions of the held runs whose gen is no longer ours.
_BEAT = _CLOCK + """
local now = now_ms()
redis.call('HSET', KEYS[1], ARGV[1], string.format('%d %d', now, tonumber(ARGV[2])))
redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
local out = {now}
for i = 3, #KEYS do
  if not mine(KEYS[i], ARGV[i + 1]) then out[#out + 1] = i - 2 end
end
return out
"""

# KEYS: work, run hash, beats. ARGV: group, me, entry id, mode (new | resume | claim), expected owner,
# default dead_after_ms. Returns {'ok', gen, deliveries, field, value, ...} or {why}.
_TAKE = _CLOCK + """
local pend = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[3], ARGV[3], 1)
if #pend == 0 then return {'gone'} end
local owner, deliveries = pend[1][2], pend[1][4]
if ARGV[4] == 'claim' then
  if owner ~= ARGV[5] or owner == ARGV[2] then return {'moved'} end
  if not is_dead(KEYS[3], owner, now_ms(), ARGV[6]) then return {'alive'} end
  redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, ARGV[3])
  deliveries = deliveries + 1
elseif owner ~= ARGV[2] then
  return {'moved'}
end
local entry = redis.call('XRANGE', KEYS[1], ARGV[3], ARGV[3])
if #entry == 0 then
  redis.call('XACK', KEYS[1], ARGV[1], ARGV[3])
  return {'gone'}
end
local gen = redis.call('HINCRBY', KEYS[2], 'gen', 1)
redis.call('HSET', KEYS[2], 'holder', ARGV[2], 'entry', ARGV[3])
redis.call('PERSIST', KEYS[2])
local out = {'ok', gen, deliveries}
for _, v in ipairs(entry[1][2]) do out[#out + 1] = v end
return out
"""

# KEYS: run hash, events. ARGV: gen, maxlen, then the message's field/value pairs.
_PUBLISH = _CLOCK + """
if not mine(KEYS[1], ARGV[1]) then return 0 end
redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[2], '*', unpack(ARGV, 3))
return 1
"""

# KEYS: run hash, events, work, intents, settled. ARGV: gen, maxlen, group, entry id, keep_s, cursor (the
# last intent the holder applied), reply key prefix, refusal reply, how refused ones settle, the end message
# as JSON, then its fields. The end is also kept in the run hash (``end``, ``end_id``): a front killed after it read the
# end message and before its hub booked it finds it there when it follows the run again (redis_front.py).
# An intent logged after the holder's cursor would otherwise be acknowledged by nobody and heard by nobody:
# it is refused here, atomically with the end, so its sender learns the run had ended.
_END = _CLOCK + """
if not mine(KEYS[1], ARGV[1]) then return 0 end
local late = 0
for _, entry in ipairs(redis.call('XRANGE', KEYS[4], '(' .. ARGV[6], '+')) do
  local f, iid, wants = entry[2], nil, false
  for i = 1, #f, 2 do
    if f[i] == 'iid' then iid = f[i + 1] elseif f[i] == 'reply' and f[i + 1] == '1' then wants = true end
  end
  if iid and redis.call('HEXISTS', KEYS[5], iid) == 0 then
    redis.call('HSET', KEYS[5], iid, ARGV[9])
    if wants then
      redis.call('LPUSH', ARGV[7] .. iid, ARGV[8])
      redis.call('EXPIRE', ARGV[7] .. iid, 60)
    end
    late = late + 1
  end
end
local end_id = redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[2], '*', unpack(ARGV, 11))
redis.call('XACK', KEYS[3], ARGV[3], ARGV[4])
redis.call('XDEL', KEYS[3], ARGV[4])
redis.call('HSET', KEYS[1], 'holder', '', 'ended', '1', 'end', ARGV[10], 'end_id', end_id)
for _, i in ipairs({1, 4, 5}) do redis.call('EXPIRE', KEYS[i], ARGV[5]) end
return 1 + late
"""

# KEYS: run hash, intents. ARGV: the entry's field/value pairs. Refused (false) once the run has ended: an
# intent logged after the end script ran would be read by nobody, and its sender told nothing true. With
# this check in the same script as the XADD, an intent is either before the end (which refuses or applies
# it) or refused here. A launch (a new round) clears ``ended`` before its work entry (redis_front.py).
_LOG = """
if redis.call('HGET', KEYS[1], 'ended') == '1' then return false end
return redis.call('XADD', KEYS[2], '*', unpack(ARGV))
"""

# KEYS: run hash, settled. ARGV: gen, iid, how. (A run that ended expires: its settled hash goes with it.)
_SETTLE = _CLOCK + """
if not mine(KEYS[1], ARGV[1]) then return 0 end
redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
local ttl = redis.call('PTTL', KEYS[1])
if ttl > 0 then redis.call('PEXPIRE', KEYS[2], ttl) end
return 1
"""

# KEYS: run hash, reply list. ARGV: gen, reply json, ttl_s.
_REPLY = _CLOCK + """
if not mine(KEYS[1], ARGV[1]) then return 0 end
redis.call('LPUSH', KEYS[2], ARGV[2])
redis.call('EXPIRE', KEYS[2], ARGV[3])
return 1
"""

# KEYS: work, run hash. ARGV: group, me, entry id. The entry goes to '~released' (dead: claimable at once).
_RELEASE = _CLOCK + """
local pend = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[3], ARGV[3], 1)
if #pend == 0 or pend[1][2] ~= ARGV[2] then return 0 end
redis.call('XCLAIM', KEYS[1], ARGV[1], '""" + wire.RELEASED + """', 0, ARGV[3], 'JUSTID')
if redis.call('HGET', KEYS[2], 'holder') == ARGV[2] then redis.call('HSET', KEYS[2], 'holder', '') end
return 1
"""

# KEYS: beats, about. ARGV: default dead_after_ms, name ('' = every worker with an about record).
# Returns {name, about, ...} of the live ones.
_ALIVE = _CLOCK + """
local now, out = now_ms(), {}
local names = {}
if ARGV[2] ~= '' then names = {ARGV[2]} else names = redis.call('HKEYS', KEYS[2]) end
for _, name in ipairs(names) do
  if not is_dead(KEYS[1], name, now, ARGV[1]) then
    out[#out + 1] = name
    out[#out + 1] = redis.call('HGET', KEYS[2], name) or '{}'
  end
end
return out
"""


@dataclass(frozen=True)
class Taken:
    """A work entry that is now this worker's: the run's new gen and the entry's fields."""

    gen: int
    deliveries: int
    fields: dict[str, str]


class Fence:
    """The scripts, registered on one client. Each call returns what the table above says."""

    def __init__(self, redis: Redis, keys: wire.Keys) -> None:
        self.r, self.keys = redis, keys
        self._beat, self._take = redis.register_script(_BEAT), redis.register_script(_TAKE)
        self._publish, self._end = redis.register_script(_PUBLISH), redis.register_script(_END)
        self._settle, self._reply = redis.register_script(_SETTLE), redis.register_script(_REPLY)
        self._release, self._alive = redis.register_script(_RELEASE), redis.register_script(_ALIVE)
        self._log = redis.register_script(_LOG)

    # ---- liveness ---------------------------------------------------------------------------------
    async def beat(self, name: str, dead_after_s: float, about: str, held: list[tuple[str, int]]) -> list[int]:
        """Beat; the positions (0-based) of `held` (run id, gen) whose gen is no longer ours."""
        k = self.keys
        out = await self._beat(keys=[k.beats, k.about, *(k.run(r) for r, _ in held)],
                               args=[name, int(dead_after_s * 1000), about, *(g for _, g in held)])
        return [int(i) - 1 for i in out[1:]]

    async def alive(self, dead_after_s: float, name: str = "") -> dict[str, str]:
        """name -> its about JSON, for the live workers (only `name` when given)."""
        flat = await self._alive(keys=[self.keys.beats, self.keys.about], args=[int(dead_after_s * 1000), name])
        return {str(flat[i]): str(flat[i + 1]) for i in range(0, len(flat), 2)}

    # ---- the front's writes ---------------------------------------------------------------------
    async def log(self, run_id: str, fields: dict[str, str]) -> bool:
        """Append an intent to the run's stream; False (nothing written) when the run has ended."""
        flat = [part for kv in fields.items() for part in kv]
        return await self._log(keys=[self.keys.run(run_id), self.keys.intents(run_id)], args=flat) is not None

    # ---- taking and letting go ------------------------------------------------------------------
    async def take(self, run_id: str, entry_id: str, me: str, *, mode: str, owner: str = "",
                   dead_after_s: float = 0.0) -> Taken | str:
        """mode "new" / "resume" (the entry is mine already) or "claim" (from `owner`, if it is dead).
        A Taken, or why not: "gone" (the run ended), "moved" (someone else has it), "alive"."""
        out = await self._take(keys=[self.keys.work, self.keys.run(run_id), self.keys.beats],
                               args=[wire.WORK_GROUP, me, entry_id, mode, owner, int(dead_after_s * 1000)])
        if str(out[0]) != "ok":
            return str(out[0])
        flat = [str(v) for v in out[3:]]
        return Taken(int(out[1]), int(out[2]), dict(zip(flat[::2], flat[1::2], strict=True)))

    async def release(self, run_id: str, entry_id: str, me: str) -> bool:
        return bool(await self._release(keys=[self.keys.work, self.keys.run(run_id)],
                                        args=[wire.WORK_GROUP, me, entry_id]))

    # ---- a holder's writes ----------------------------------------------------------------------
    def publish(self, pipe: Pipeline, run_id: str, gen: int, fields: dict[str, str], maxlen: int) -> Any:
        """Queued on `pipe` (its result: 1 written, 0 refused)."""
        flat = [part for kv in fields.items() for part in kv]
        return self._publish(keys=[self.keys.run(run_id), self.keys.events], args=[gen, maxlen, *flat], client=pipe)

    def end(self, pipe: Pipeline, run_id: str, gen: int, entry_id: str, fields: dict[str, str], maxlen: int,
            keep_s: int, *, cursor: str, refusal: str, refused_as: str) -> Any:
        """Queued on `pipe` (its result: 0 refused, else 1 + how many late intents it refused)."""
        k = self.keys
        flat = [part for kv in fields.items() for part in kv]
        return self._end(keys=[k.run(run_id), k.events, k.work, k.intents(run_id), k.settled(run_id)],
                         args=[gen, maxlen, wire.WORK_GROUP, entry_id, keep_s, cursor, k.reply(""), refusal,
                               refused_as, json.dumps(fields), *flat], client=pipe)

    async def settle(self, run_id: str, gen: int, iid: str, how: str) -> bool:
        return bool(await self._settle(keys=[self.keys.run(run_id), self.keys.settled(run_id)], args=[gen, iid, how]))

    async def reply(self, run_id: str, gen: int, iid: str, body: str, ttl_s: int = 60) -> bool:
        return bool(await self._reply(keys=[self.keys.run(run_id), self.keys.reply(iid)], args=[gen, body, ttl_s]))
