-- What the block shows, in one call (so one round trip, also on Redis Cluster,
-- whose pipelines cannot carry a script).
--
-- KEYS[1]     users      KEYS[2]  hidden     KEYS[3]  guests
-- KEYS[4]     peak       KEYS[5]  cards
-- KEYS[6..]   with approximate guest counting (ARGV[6] = n > 0): the window's n - 1
--             guest HyperLogLogs, oldest first, then where their union is kept
--             (KEYS[5 + n], kept ARGV[8] ms; see union_count)
-- then        with the day's count (ARGV[7] not ''): the hour HyperLogLogs of the
--             past 24 hours, oldest first, then where their union is kept (ARGV[9] ms)
-- KEYS[#-2]   live: pk -> newest heartbeat      KEYS[#-1]  left: pk -> last closed
-- KEYS[#]     the generation: when Redis's data began (see recovery.py)
-- ARGV[1]     the window's start
-- ARGV[2]     now
-- ARGV[3]     the peak's TTL (0 for a room: no peak)
-- ARGV[4]     how many listed members to return (-1: all)
-- ARGV[5]     '1' to list the hidden members too (a staff view), else '0'
-- ARGV[6]     n: how many KEYS[6..] are the window's buckets (0: exact guests)
-- ARGV[7]     the start of the past 24 hours ('': no day count)
-- ARGV[8]     the window union's TTL (ms)
-- ARGV[9]     the hours union's TTL (ms)
-- ARGV[10]    now minus the heartbeat timeout
-- ARGV[11]    the guest cap (0: none)
-- ARGV[12]    the grace after a page view before a closed socket makes one idle
-- Returns {listed, hidden (each one JSON text; see listing), users, hidden count,
-- guests, peak count, peak time, day members, day guests (false, false without a
-- day count), listed's and hidden's socket states (see sockets), the oldest score
-- (see oldest), the generation (false if Redis holds none: its data was lost)}.
--@include lib/count_and_raise_peak.lua
local function newest(key)
  return redis.call('ZRANGE', key, '+inf', ARGV[1], 'BYSCORE', 'REV', 'LIMIT', 0, ARGV[4],
                    'WITHSCORES')
end
-- command (HMGET or ZMSCORE) on key for the members of pairs (member, score, ...):
-- one call per 1,000 members (unpack's limit is a few thousand), not one per member.
local function each(command, key, pairs)
  local found, names = {}, {}
  for i = 1, #pairs, 2 do
    names[#names + 1] = pairs[i]
    if #names == 1000 or i + 1 >= #pairs then
      for _, value in ipairs(redis.call(command, key, unpack(names))) do
        found[#found + 1] = value
      end
      names = {}
    end
  end
  return found
end
local function cards(pairs) return each('HMGET', KEYS[5], pairs) end
local live, left, generation = KEYS[#KEYS - 2], KEYS[#KEYS - 1], KEYS[#KEYS]
-- WebSocket presence merged in, per listed member: 'online' while one of their
-- connections is alive; 'idle' once the newest sign of them was a connection
-- that is gone (closed, or its process died) at least ARGV[12] seconds after
-- their last page view, so a closed tab is not "online" for the window while a
-- page that replaced it (its request comes before the old socket closes) is
-- not idle; false where the HTTP rule applies. Empty, not a false for
-- each, where nobody has a socket (a site without Channels): nothing to read,
-- and half as many values in the reply.
local function sockets(pairs)
  local found = {}
  if redis.call('EXISTS', live, left) == 0 then return found end
  local beats, lefts = each('ZMSCORE', live, pairs), each('ZMSCORE', left, pairs)
  for i = 1, #pairs, 2 do
    local beat = tonumber(beats[(i + 1) / 2] or '0')
    local left = tonumber(lefts[(i + 1) / 2] or '0')
    if beat >= tonumber(ARGV[10]) then
      found[#found + 1] = 'online'
    elseif math.max(beat, left) >= tonumber(pairs[i + 1]) + tonumber(ARGV[12]) then
      found[#found + 1] = 'idle'
    else
      found[#found + 1] = false
    end
  end
  return found
end
-- The members of pairs (member, score, ...) as one JSON text, [[score, pk,
-- card], ...] (the card as stored, or false): one value for the client to
-- parse (in C), not two per member (in redis-py's Python reply parser).
local function listing(pairs)
  local found, rows = cards(pairs), {}
  for i = 1, #pairs, 2 do rows[#rows + 1] = {pairs[i + 1], pairs[i], found[(i + 1) / 2]} end
  return cjson.encode(rows)
end
local listed = newest(KEYS[1])
local hidden = {}
if ARGV[5] == '1' then hidden = newest(KEYS[2]) end
local result = {listing(listed), listing(hidden)}
-- The union of the HyperLogLogs KEYS[first..last], oldest first. Only the
-- newest still changes (a lagging server's late write to an older one waits
-- for the next union), so the first count after it began merges the others
-- into KEYS[last + 1], kept ttl ms, and each count merges two, not eleven or
-- 24. A replica or a full Redis cannot write: it counts them all.
local function union_count(first, last, ttl)
  local past = KEYS[last + 1]
  if first == last then return redis.call('PFCOUNT', KEYS[last]) end
  if redis.call('EXISTS', past) == 0 then
    if redis.pcall('PFMERGE', past, unpack(KEYS, first, last - 1)).err then
      return redis.call('PFCOUNT', unpack(KEYS, first, last))
    end
    redis.call('PEXPIRE', past, ttl)
  end
  return redis.call('PFCOUNT', past, KEYS[last])
end
local buckets = tonumber(ARGV[6])
local function window_guests() return union_count(6, 4 + buckets, ARGV[8]) end
local counted = count_and_raise_peak(buckets > 0 and window_guests or nil, tonumber(ARGV[11]))
for _, value in ipairs(counted) do table.insert(result, value) end
if ARGV[7] == '' then
  table.insert(result, false)
  table.insert(result, false)
else
  table.insert(result, redis.call('ZCOUNT', KEYS[1], ARGV[7], '+inf')
                       + redis.call('ZCOUNT', KEYS[2], ARGV[7], '+inf'))
  table.insert(result, union_count(6 + buckets, #KEYS - 4, ARGV[9]))
end
table.insert(result, sockets(listed))
table.insert(result, sockets(hidden))
-- When the counts next change by time alone: the oldest score inside the window
-- over the three sets, passing over (20 at most) members a living connection keeps
-- inside it; false if nobody is there. A score, as text (Lua would truncate it).
local function oldest(key)
  local rows = redis.call('ZRANGE', key, ARGV[1], '+inf', 'BYSCORE', 'LIMIT', 0, 20, 'WITHSCORES')
  for i = 1, #rows, 2 do
    local beat = redis.call('ZSCORE', live, rows[i])
    if not (beat and tonumber(beat) >= tonumber(ARGV[10])) then return rows[i + 1] end
  end
  return rows[#rows] or false
end
local first = false
for i = 1, 3 do
  local score = oldest(KEYS[i])
  if score and (not first or tonumber(score) < tonumber(first)) then first = score end
end
table.insert(result, first)
table.insert(result, redis.call('GET', generation))
return result
