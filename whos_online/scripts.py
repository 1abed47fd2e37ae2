"""The Lua scripts whos_online runs in Redis, where a step must be atomic.

Each names every key it touches in KEYS, so it runs on Redis Cluster as long as
those keys share a hash slot (one namespace: see WHOS_ONLINE_KEY_PREFIX). Each
is sent by its SHA1 (EVALSHA); see :class:`Script`.
"""

from __future__ import annotations

import hashlib
from typing import Any

from redis.exceptions import NoScriptError


class Script:
    """A script run by EVALSHA, its text sent only to a server that answers NOSCRIPT.

    Sending the text with every EVAL cost more than the rest of a recording
    request's Redis call. On NOSCRIPT (a new or restarted server, a failover,
    ``SCRIPT FLUSH``) it falls back to one EVAL, which Redis routes like any
    keyed command, runs, and caches for the next EVALSHA. Not redis-py's
    ``register_script``: its fallback is ``SCRIPT LOAD``, which RedisCluster
    sends to every master, so one master down would stop every namespace.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.sha = hashlib.sha1(text.encode()).hexdigest()

    def __call__(self, client: Any, numkeys: int, *keys_and_args: Any) -> Any:
        try:
            return client.evalsha(self.sha, numkeys, *keys_and_args)
        except NoScriptError:
            return client.eval(self.text, numkeys, *keys_and_args)


# Removes at most ARGV[2] of the oldest members scored below ARGV[1] from
# KEYS[1], and their cards from the hash KEYS[2] (KEYS[1] itself for sets
# without cards). One call is atomic, so a member re-recorded meanwhile (now
# the newest) is never among the removed, and it is short, so Redis keeps
# serving the site between calls.
PRUNE_BATCH = Script("""
local stale = redis.call('ZCOUNT', KEYS[1], '-inf', ARGV[1])
local n = math.min(stale, tonumber(ARGV[2]))
if n > 0 then
  if KEYS[2] ~= KEYS[1] then
    -- unpack() takes a few thousand values at most: HDEL in chunks.
    local pks = redis.call('ZRANGE', KEYS[1], 0, n - 1)
    for i = 1, #pks, 1000 do
      redis.call('HDEL', KEYS[2], unpack(pks, i, math.min(i + 999, #pks)))
    end
  end
  redis.call('ZREMRANGEBYRANK', KEYS[1], 0, n - 1)
end
return n
""")


# leave(): a member ``pk`` out of a namespace's member sets ``users`` and
# ``hidden``; if they were listed there, its change mark ``mark`` is set to
# ``now`` (kept ``ttl`` s) and its ``room`` ('' for the site) published on
# ``channel``. Returns whether they were listed. RECORD and FORGET share it.
_LEAVE = """
local function leave(users, hidden, mark, pk, room, now, ttl, channel)
  if redis.call('ZREM', users, pk) + redis.call('ZREM', hidden, pk) == 0 then return false end
  redis.call('SET', mark, now, 'EX', ttl)
  redis.call('PUBLISH', channel, room)
  return true
end
"""

# sweep(): the connections of dead processes in a namespace, members of its live
# set whose newest heartbeat is before ``cutoff``, move to its left set at that
# beat. Returns whether any did. HEARTBEAT and CHECK share it.
_SWEEP = """
local function sweep(live, left, cutoff)
  local stale = redis.call('ZRANGE', live, '-inf', '(' .. cutoff, 'BYSCORE', 'WITHSCORES')
  for j = 1, #stale, 2 do redis.call('ZADD', left, 'GT', stale[j + 1], stale[j]) end
  if #stale > 0 then redis.call('ZREMRANGEBYSCORE', live, '-inf', '(' .. cutoff) end
  return #stale > 0
end
"""


# Records ARGV[2] as seen at ARGV[1] in KEYS[1], all in one call: ZADD GT, so a
# server whose clock lags never moves a score backwards; ZREM from KEYS[2] (a
# member who moved between listed and hidden; KEYS[1] itself when there is no
# such set); the guest cap ARGV[4] (0: none; see the script's first lines); a
# room registers ARGV[5] ('' if none) in KEYS[3]; a member's card ARGV[6] (''
# for guests) goes into the hash KEYS[4], and the guest ARGV[7] they were until
# logging in ('' if none) leaves the guests KEYS[5], so nobody counts twice;
# and each key written gets its TTL (ARGV[3], or the window's), so an abandoned
# namespace disappears. KEYS[6] is the site's peak (see the flood below).
# ARGV[10] holds what is the same for every call of a process, space-separated:
# the window (seconds), how many stale guests one write may drop, the rooms'
# cap, and the key prefix (last: it may hold spaces). Rooms are capped: registering
# one beyond it drops the least recently visited (at most that many per write)
# with their sets, named from the prefix. Those keys are not in KEYS (their
# names come from the registry), which Redis allows for keys of the same hash
# slot: on Cluster the prefix carries a hash tag (check W006), so every room
# key shares KEYS[3]'s slot.
# A write that changes what the namespace shows (any member's; a guest's unless
# they were inside the window already) sets its change mark KEYS[7] and
# publishes the room ARGV[5] on the channel ARGV[11] (see realtime/hub.py).
# A member is in one room of a kind at a time (the kind: the room's name up to
# its first ':'): recorded in topic:2, they leave topic:1 (marked and published
# too). KEYS[8] is where they are, kind -> room (KEYS[1] when not a member's
# room record); the room they left is named from the prefix, as above.
# KEYS[9] is the generation (see recovery.py): when the data began, set from
# ARGV[1] by the first record into an empty Redis.
# Counting (see counting.py): ARGV[2] also goes into the HyperLogLogs KEYS[10..],
# each given its TTL ARGV[12..] (KEYS[i], ARGV[i + 2]), unless its score before
# is at or after ARGV[9]: since then every one of those counters holds it
# already (most records are of visitors seen a minute before). With ARGV[8] =
# '1' (approximate guest counting) they are all it goes into: no sorted set
# KEYS[1], so neither a cap nor a refusal.
# Returns {the member's score before this write (false if none or not kept),
# 1 if the newcomer was refused (nothing written) else 0, the generation}.
RECORD = Script(
    _LEAVE
    + """
local generation = redis.call('GET', KEYS[9])
if not generation then
  generation = string.format('%.6f', tonumber(ARGV[1]))
  redis.call('SET', KEYS[9], generation)
end
local window, trim, max_rooms, prefix = string.match(ARGV[10], '^(%S+) (%S+) (%S+) (.*)$')
window, trim = tonumber(window), tonumber(trim)
local window_ttl = math.ceil(window)
local window_start = tonumber(ARGV[1]) - window
local listed = ARGV[8] ~= '1'
local before = false
if listed then before = redis.call('ZSCORE', KEYS[1], ARGV[2]) end
local keep = tonumber(ARGV[4])
if listed and keep > 0 and not before then
  -- A newcomer to a capped set: room is made only from guests already out of
  -- the window (older than its start), at most trim of them; while the set is
  -- full of guests inside it, the newcomer is refused, so a flood of new
  -- addresses never pushes out the guests already counted.
  local excess = redis.call('ZCARD', KEYS[1]) - keep + 1
  if excess > 0 then
    local stale = redis.call('ZCOUNT', KEYS[1], '-inf', string.format('(%.17g', window_start))
    local n = math.min(excess, stale, trim)
    if n > 0 then redis.call('ZREMRANGEBYRANK', KEYS[1], 0, n - 1) end
    if n < excess then
      -- A flood. On the site (no room), the peak it raised since the window's
      -- start goes back to the one before (see count_and_raise_peak), and no
      -- peak is taken for a window (flood_until in the peak hash KEYS[6]).
      if ARGV[5] == '' then
        local at = tonumber(redis.call('HGET', KEYS[6], 'at') or '0')
        if at >= window_start then
          local kept = redis.call('HMGET', KEYS[6], 'before', 'before_at')
          if kept[1] then
            redis.call('HSET', KEYS[6], 'count', kept[1], 'at', kept[2])
          else
            redis.call('HDEL', KEYS[6], 'count', 'at')
          end
        end
        redis.call('HSET', KEYS[6], 'flood_until', tonumber(ARGV[1]) + window_ttl)
        -- The mark outlives flood_until, also when a count has not renewed it since
        -- an earlier flood's shorter TTL.
        if redis.call('TTL', KEYS[6]) < window_ttl then
          redis.call('EXPIRE', KEYS[6], window_ttl)
        end
      end
      return {false, 1, generation}
    end
  end
end
if listed then redis.call('ZADD', KEYS[1], 'GT', ARGV[1], ARGV[2]) end
if KEYS[2] ~= KEYS[1] then redis.call('ZREM', KEYS[2], ARGV[2]) end
-- Before the rooms' cap: a room recorded with a score older than the others' (a
-- lagging clock) is the one dropped, with its mark.
if ARGV[6] ~= '' or not (before and tonumber(before) >= window_start) then
  redis.call('SET', KEYS[7], ARGV[1], 'EX', window_ttl)
  redis.call('PUBLISH', ARGV[11], ARGV[5])
end
if ARGV[5] ~= '' and ARGV[6] ~= '' then
  local kind = string.match(ARGV[5], '^([^:]*):') or ARGV[5]
  local was_in = redis.call('HGET', KEYS[8], kind)
  if was_in and was_in ~= ARGV[5] then
    local room = prefix .. ':room:' .. was_in
    leave(room .. ':users', room .. ':hidden', room .. ':changed', ARGV[2], was_in, ARGV[1],
          window_ttl, ARGV[11])
  end
  redis.call('HSET', KEYS[8], kind, ARGV[5])
  redis.call('EXPIRE', KEYS[8], ARGV[3])
end
if ARGV[5] ~= '' then
  redis.call('ZADD', KEYS[3], ARGV[1], ARGV[5])
  redis.call('EXPIRE', KEYS[3], window_ttl)
  local over = redis.call('ZCARD', KEYS[3]) - tonumber(max_rooms)
  if over > 0 then
    local dropped = redis.call('ZPOPMIN', KEYS[3], math.min(over, trim))
    for i = 1, #dropped, 2 do
      local room = prefix .. ':room:' .. dropped[i]
      redis.call('DEL', room .. ':users', room .. ':hidden', room .. ':guests',
                 room .. ':live', room .. ':left', room .. ':changed')
    end
  end
end
if ARGV[6] ~= '' then
  redis.call('HSET', KEYS[4], ARGV[2], ARGV[6])
  redis.call('EXPIRE', KEYS[4], ARGV[3])
end
if ARGV[7] ~= '' then redis.call('ZREM', KEYS[5], ARGV[7]) end
if listed then redis.call('EXPIRE', KEYS[1], ARGV[3]) end
if not (before and tonumber(before) >= tonumber(ARGV[9])) then
  for i = 10, #KEYS do
    redis.call('PFADD', KEYS[i], ARGV[2])
    redis.call('EXPIRE', KEYS[i], ARGV[i + 2])
  end
end
return {before, 0, generation}
"""
)

# Prunes rooms' sets (KEYS, three per room) of members scored below ARGV[1],
# removing at most ARGV[2] in all, so one call stays short however many rooms
# and members it is given. Returns {removed, 1 if it stopped at the limit}.
PRUNE_ROOMS = Script("""
local removed, budget = 0, tonumber(ARGV[2])
for _, key in ipairs(KEYS) do
  if budget == 0 then return {removed, 1} end
  local n = math.min(redis.call('ZCOUNT', key, '-inf', ARGV[1]), budget)
  if n > 0 then
    redis.call('ZREMRANGEBYRANK', key, 0, n - 1)
    removed, budget = removed + n, budget - n
  end
end
return {removed, 0}
""")

# count_and_raise_peak(count_guests, cap) counts a namespace's three sets
# (KEYS[1..3]) inside the window (from ARGV[1]) and, when ARGV[3] (the peak's
# TTL) is not 0, raises the peak (KEYS[4]) in the same atomic step, so two
# servers that read at once can never lower it (no read-then-write race);
# unless the guests fill their cap ``cap`` (0: none, as in approximate mode) or
# RECORD saw a flood within the window: such counts say nothing about people.
# The peak outlives any window but still expires a year after the last count.
# pcall: a replica (READONLY) or a full Redis (OOM) still answers with its
# counts. With approximate guest counting, the function count_guests() passed
# in counts the guests instead.
_COUNT_AND_RAISE_PEAK = """
local function count_and_raise_peak(count_guests, cap)
  local users = redis.call('ZCOUNT', KEYS[1], ARGV[1], '+inf')
  local hidden = redis.call('ZCOUNT', KEYS[2], ARGV[1], '+inf')
  local guests
  if count_guests then
    guests = count_guests()
  else
    guests = redis.call('ZCOUNT', KEYS[3], ARGV[1], '+inf')
  end
  if ARGV[3] == '0' then return {users, hidden, guests, false, false} end
  local total = users + hidden + guests
  local best = tonumber(redis.call('HGET', KEYS[4], 'count') or '0')
  local flood_until = tonumber(redis.call('HGET', KEYS[4], 'flood_until') or '0')
  if total > best and (cap == 0 or guests < cap) and flood_until < tonumber(ARGV[2]) then
    -- The peak from before this window is kept aside, for a flood to fall back on.
    local last_at = redis.call('HGET', KEYS[4], 'at')
    if last_at and tonumber(last_at) < tonumber(ARGV[1]) then
      redis.pcall('HSET', KEYS[4], 'before', best, 'before_at', last_at)
    end
    redis.pcall('HSET', KEYS[4], 'count', total, 'at', ARGV[2])
  end
  if total > 0 or best > 0 then redis.pcall('EXPIRE', KEYS[4], ARGV[3]) end
  local peak = redis.call('HMGET', KEYS[4], 'count', 'at')
  return {users, hidden, guests, peak[1], peak[2]}
end
"""

# {users, hidden, guests, peak count, peak time}; what prune samples. KEYS[5]
# (the cards) is not read; KEYS[6..] are the window's guest buckets, if any.
# ARGV[4]: the guest cap (0: none).
COUNT_AND_RAISE_PEAK = Script(
    _COUNT_AND_RAISE_PEAK
    + """
local function union() return redis.call('PFCOUNT', unpack(KEYS, 6)) end
return count_and_raise_peak(#KEYS > 5 and union or nil, tonumber(ARGV[4]))
"""
)

# What the block shows, in one call (so one round trip, also on Redis Cluster,
# whose pipelines cannot carry a script): the ARGV[4] newest listed members
# (ARGV[4] = -1: all) with their cards from KEYS[5], and the hidden ones too
# when ARGV[5] is '1' (for staff, merged by the caller), each list as one JSON
# text (see listing below); then the counts and peak of count_and_raise_peak() with the
# guest cap ARGV[11] (0: none). With
# approximate guest counting ARGV[6] is n > 0: KEYS[6..4 + n] are the window's
# buckets, oldest first, KEYS[5 + n] where their union is kept ARGV[8] ms (see
# union_count). Then, when ARGV[7] (the start of the past 24 hours) is not '',
# the members seen since then and the guests of the hour HyperLogLogs that
# fill the rest of KEYS but the last three (the last hour one keeping their union
# ARGV[9] ms), else {false, false}. Then WebSocket presence of each list (see
# sockets below), from the two KEYS before the last; the oldest score time
# alone will end (see oldest below); last, the generation (see recovery.py) from
# the last KEYS, false if Redis holds none (its data was lost since).
SUMMARY = Script(
    _COUNT_AND_RAISE_PEAK
    + """
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
-- WebSocket presence merged in (live and left; ARGV[10] =
-- now minus the heartbeat timeout), per listed member: 'online' while one of their
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
"""
)

# Raises the site's peak KEYS[1] to ARGV[1] people at ARGV[2] (kept ARGV[3] s)
# unless it is as high already: a process writes back the peak it read before
# Redis lost its data (see recovery.py). Returns 1 if it did.
RAISE_PEAK = Script("""
if tonumber(redis.call('HGET', KEYS[1], 'count') or '0') >= tonumber(ARGV[1]) then return 0 end
redis.call('HSET', KEYS[1], 'count', ARGV[1], 'at', ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[3])
return 1
""")


# The count of each HyperLogLog in KEYS, in one call: redis-py's Cluster client
# refuses PFCOUNT in a pipeline, and an EVAL goes to the namespace's master.
COUNT_EACH = Script("""
local counts = {}
for i, key in ipairs(KEYS) do counts[i] = redis.call('PFCOUNT', key) end
return counts
""")

# A process's heartbeat for all its open WebSocket connections, in one call.
# KEYS[1] is the cards hash (kept alive as a record keeps it), KEYS[2] the
# rooms' registry; then five keys per connection and namespace: the
# namespace's live and left sets, the member's connections hash, the member
# set they are listed in (users or hidden) and the namespace's change mark.
# ARGV[1] is now, ARGV[2] the connections hash's TTL (the heartbeat timeout),
# ARGV[3] the TTL of the sets (the retention), ARGV[4] now minus the timeout,
# ARGV[5] the score below which a member would leave the window before the
# next beats, ARGV[6] how far such a score moves, ARGV[7] the notices channel;
# then a pk, a connection id and a room ('' for the site) per connection and
# namespace.
# A heartbeat keeps connected members inside the window by writing through to
# their member set (ZADD XX GT: only members the connect recorded, so one
# forgotten since, logged out, stays gone), but only once their score would
# leave the window before the next beats, and then every connected member of
# the set below that score at once, whichever process they are on, by the same
# ARGV[6] (never past now): connected members keep their order among
# themselves in the newest-first list, so a steady crowd does not churn. A room
# the cap evicted (gone from the registry) is left alone, so open sockets never
# bring its keys back; a registered room's place in the registry is kept current. Members of a dead process found stale
# in a live set move to its left set. A namespace whose picture changed (a
# member newly live, gone stale, or moved up) gets its mark set and is published.
HEARTBEAT = Script(
    _SWEEP
    + """
local now, seen, rooms, changed = ARGV[1], {}, false, {}
redis.call('EXPIRE', KEYS[1], ARGV[3])
for i = 0, (#KEYS - 2) / 5 - 1 do
  local live, left, conns = KEYS[3 + 5 * i], KEYS[4 + 5 * i], KEYS[5 + 5 * i]
  local set, mark = KEYS[6 + 5 * i], KEYS[7 + 5 * i]
  local pk, conn, room = ARGV[8 + 3 * i], ARGV[9 + 3 * i], ARGV[10 + 3 * i]
  local registered = room == '' or redis.call('ZSCORE', KEYS[2], room)
  if registered and room ~= '' then
    rooms = true
    redis.call('ZADD', KEYS[2], 'GT', now, room)
  end
  if registered then
    redis.call('HSET', conns, conn, now)
    redis.call('EXPIRE', conns, ARGV[2])
    if redis.call('ZADD', live, 'GT', now, pk) == 1 then changed[mark] = room end
    if not seen[set] then
      seen[set] = true
      local due = redis.call('ZRANGE', set, '-inf', '(' .. ARGV[5], 'BYSCORE', 'WITHSCORES')
      for j = 1, #due, 2 do
        local beat = redis.call('ZSCORE', live, due[j])
        if beat and tonumber(beat) >= tonumber(ARGV[4]) then
          local moved = math.min(tonumber(due[j + 1]) + tonumber(ARGV[6]), tonumber(now))
          redis.call('ZADD', set, 'XX', 'GT', string.format('%.17g', moved), due[j])
          changed[mark] = room
        end
      end
    end
    if not seen[live] then
      seen[live] = true
      if sweep(live, left, ARGV[4]) then changed[mark] = room end
      -- As long as the member set: a stale beat still says "their last sign was a socket".
      redis.call('EXPIRE', live, ARGV[3])
      redis.call('EXPIRE', left, ARGV[3])
      redis.call('EXPIRE', set, ARGV[3])
    end
  end
end
if rooms and redis.call('EXISTS', KEYS[2]) == 1 then redis.call('EXPIRE', KEYS[2], ARGV[3]) end
for mark, room in pairs(changed) do
  redis.call('SET', mark, now, 'EX', ARGV[3])
  redis.call('PUBLISH', ARGV[7], room)
end
return 1
"""
)

# One connection closed. KEYS[1] is the rooms' registry; then per namespace it
# was in, four keys (live, left, the member's connections, the change mark).
# ARGV[1] now, ARGV[2] now minus the heartbeat timeout, ARGV[3] the left set's
# TTL (the window), ARGV[4] the pk, ARGV[5] the connection id, ARGV[6] the
# notices channel, then each namespace's room ('' for the site). The member
# stays live at the newest heartbeat of their other living connections (stale
# ones, of dead processes, are dropped here); with none left they move to the
# left set at once, and the namespace is marked and published. A room the cap
# evicted meanwhile is left alone: closing a socket never brings its keys back.
DISCONNECT = Script("""
for i = 0, (#KEYS - 1) / 4 - 1 do
  local live, left, conns, mark = KEYS[2 + 4 * i], KEYS[3 + 4 * i], KEYS[4 + 4 * i], KEYS[5 + 4 * i]
  local room = ARGV[7 + i]
  redis.call('HDEL', conns, ARGV[5])
  if room == '' or redis.call('ZSCORE', KEYS[1], room) then
    local newest = nil
    local fields = redis.call('HGETALL', conns)
    for j = 1, #fields, 2 do
      local beat = tonumber(fields[j + 1])
      if beat < tonumber(ARGV[2]) then
        redis.call('HDEL', conns, fields[j])
      elseif newest == nil or beat > newest then
        newest = beat
      end
    end
    if newest then
      redis.call('ZADD', live, newest, ARGV[4])
    else
      redis.call('ZREM', live, ARGV[4])
      redis.call('ZADD', left, ARGV[1], ARGV[4])
      redis.call('ZREMRANGEBYSCORE', left, '-inf', '(' .. (tonumber(ARGV[1]) - tonumber(ARGV[3])))
      redis.call('EXPIRE', left, ARGV[3])
      redis.call('SET', mark, ARGV[1], 'EX', ARGV[3])
      redis.call('PUBLISH', ARGV[6], room)
    end
  end
end
return 1
""")

# A member leaves (a logout): ARGV[1] out of the site's member sets KEYS[1] and
# KEYS[2], their card out of KEYS[3], and out of every room they are in (the
# hash KEYS[5], kind -> room; rooms named from the prefix ARGV[5], as RECORD
# names them). Each list they left gets its change mark (the site's: KEYS[4];
# ARGV[2], kept ARGV[3] s) and is published on ARGV[4] ('' for the site).
# Returns 1 if they were listed on the site, else 0.
FORGET = Script(
    _LEAVE
    + """
for _, room in ipairs(redis.call('HVALS', KEYS[5])) do
  local base = ARGV[5] .. ':room:' .. room
  leave(base .. ':users', base .. ':hidden', base .. ':changed', ARGV[1], room, ARGV[2], ARGV[3],
        ARGV[4])
end
redis.call('DEL', KEYS[5])
redis.call('HDEL', KEYS[3], ARGV[1])
return leave(KEYS[1], KEYS[2], KEYS[4], ARGV[1], '', ARGV[2], ARGV[3], ARGV[4]) and 1 or 0
"""
)

# A hub's safety check of the namespaces its views show: three keys each
# (live, left, the change mark). Connections of dead processes (a heartbeat
# before ARGV[1], now minus the timeout) move from live to left, as a
# heartbeat would move them where no process beats any more; such a namespace
# is marked (ARGV[2], now, kept ARGV[3] s) and its room ARGV[5 + i] published
# on ARGV[4]. Returns each namespace's mark (false if none), so a hub sees a
# change whose notice it missed.
CHECK = Script(
    _SWEEP
    + """
local marks = {}
for i = 0, #KEYS / 3 - 1 do
  local live, left, mark = KEYS[1 + 3 * i], KEYS[2 + 3 * i], KEYS[3 + 3 * i]
  if sweep(live, left, ARGV[1]) then
    redis.call('EXPIRE', left, ARGV[3])
    redis.call('SET', mark, ARGV[2], 'EX', ARGV[3])
    redis.call('PUBLISH', ARGV[4], ARGV[5 + i])
  end
  marks[i + 1] = redis.call('GET', mark)
end
return marks
"""
)
