"""The Lua scripts of RedisSessionStore (redis_store.py): every write is one script, applied whole.

Each script starts with a fence: KEYS[1] and ARGV[1] are a hash and a generation (ARGV[1] = '' when the
store is not fenced). When the hash's ``gen`` field is not that generation the script changes nothing and
answers ``STALE``: the writer was replaced by a newer holder of its run (the Redis transport's fence).
The fence is taken off KEYS/ARGV before the body runs, so the bodies index their own arguments from 1.
"""

from __future__ import annotations

STALE = "stale"

_FENCE_LUA = """
local fence, fence_gen = table.remove(KEYS, 1), table.remove(ARGV, 1)
if fence_gen ~= '' and redis.call('HGET', fence, 'gen') ~= fence_gen then return {'""" + STALE + """'} end
"""

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
APPEND_LUA = _FENCE_LUA + _CLOCK_LUA + """
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
DELETE_LUA = _FENCE_LUA + """
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
TRUNCATE_LUA = _FENCE_LUA + _CLOCK_LUA + """
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
