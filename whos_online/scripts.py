"""The Lua scripts whos_online runs in Redis, where a step must be atomic.

Each names every key it touches in KEYS, so it runs on Redis Cluster as long as
those keys share a hash slot (one namespace: see WHOS_ONLINE_KEY_PREFIX).
"""

# Removes at most ARGV[2] of the oldest members scored below ARGV[1] from
# KEYS[1], and their cards from the hash KEYS[2] (KEYS[1] itself for sets
# without cards). One call is atomic, so a member re-recorded meanwhile (now
# the newest) is never among the removed, and it is short, so Redis keeps
# serving the site between calls.
PRUNE_BATCH = """
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
"""


# Records ARGV[2] as seen at ARGV[1] in KEYS[1], all in one call: ZADD GT, so a
# server whose clock lags never moves a score backwards; ZREM from KEYS[2] (a
# member who moved between listed and hidden; KEYS[1] itself when there is no
# such set); the guest cap ARGV[4] (0: none; see the script's first lines); a room registers ARGV[6]
# ('' if none) in KEYS[3]; a member's card ARGV[8] ('' for guests) goes into the
# hash KEYS[4], and the guest ARGV[9] they were until logging in ('' if none)
# leaves the guests KEYS[5], so nobody counts twice; and each key written gets
# its TTL (ARGV[3], ARGV[7]), so an abandoned namespace disappears.
# Rooms are capped at ARGV[10]: registering one beyond it drops the least
# recently visited (at most ARGV[5] per write) with their sets, named from the
# prefix ARGV[11]. Those keys are not in KEYS (their names come from the
# registry), which Redis allows for keys of the same hash slot: on Cluster the
# prefix carries a hash tag (check W006), so every room key shares KEYS[3]'s slot.
RECORD = """
local keep = tonumber(ARGV[4])
if keep > 0 and not redis.call('ZSCORE', KEYS[1], ARGV[2]) then
  -- A newcomer to a capped set: room is made only from guests already out of
  -- the window (older than ARGV[12]), at most ARGV[5] of them; while the set is
  -- full of guests inside it, the newcomer is refused (returns 0), so a flood of
  -- new addresses never pushes out the guests already counted.
  local excess = redis.call('ZCARD', KEYS[1]) - keep + 1
  if excess > 0 then
    local stale = redis.call('ZCOUNT', KEYS[1], '-inf', '(' .. ARGV[12])
    local n = math.min(excess, stale, tonumber(ARGV[5]))
    if n > 0 then redis.call('ZREMRANGEBYRANK', KEYS[1], 0, n - 1) end
    if n < excess then
      -- A flood. On the site (no room), the peak it raised since the window's
      -- start goes back to the one before (see count_and_raise_peak), and no
      -- peak is taken for a window (flood_until in the peak hash KEYS[6]).
      if ARGV[6] == '' then
        local at = tonumber(redis.call('HGET', KEYS[6], 'at') or '0')
        if at >= tonumber(ARGV[12]) then
          local before = redis.call('HMGET', KEYS[6], 'before', 'before_at')
          if before[1] then
            redis.call('HSET', KEYS[6], 'count', before[1], 'at', before[2])
          else
            redis.call('HDEL', KEYS[6], 'count', 'at')
          end
        end
        redis.call('HSET', KEYS[6], 'flood_until', tonumber(ARGV[1]) + tonumber(ARGV[7]))
        if redis.call('TTL', KEYS[6]) < 0 then redis.call('EXPIRE', KEYS[6], ARGV[7]) end
      end
      return 0
    end
  end
end
redis.call('ZADD', KEYS[1], 'GT', ARGV[1], ARGV[2])
if KEYS[2] ~= KEYS[1] then redis.call('ZREM', KEYS[2], ARGV[2]) end
if ARGV[6] ~= '' then
  redis.call('ZADD', KEYS[3], ARGV[1], ARGV[6])
  redis.call('EXPIRE', KEYS[3], ARGV[7])
  local over = redis.call('ZCARD', KEYS[3]) - tonumber(ARGV[10])
  if over > 0 then
    local dropped = redis.call('ZPOPMIN', KEYS[3], math.min(over, tonumber(ARGV[5])))
    for i = 1, #dropped, 2 do
      local room = ARGV[11] .. ':room:' .. dropped[i]
      redis.call('DEL', room .. ':users', room .. ':hidden', room .. ':guests')
    end
  end
end
if ARGV[8] ~= '' then
  redis.call('HSET', KEYS[4], ARGV[2], ARGV[8])
  redis.call('EXPIRE', KEYS[4], ARGV[3])
end
if ARGV[9] ~= '' then redis.call('ZREM', KEYS[5], ARGV[9]) end
redis.call('EXPIRE', KEYS[1], ARGV[3])
return 1
"""

# Prunes rooms' sets (KEYS, three per room) of members scored below ARGV[1],
# removing at most ARGV[2] in all, so one call stays short however many rooms
# and members it is given. Returns {removed, 1 if it stopped at the limit}.
PRUNE_ROOMS = """
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
"""

# count_and_raise_peak(cap) counts a namespace's three sets (KEYS[1..3]) inside
# the window (from ARGV[1]) and, when ARGV[3] (the peak's TTL) is not 0, raises
# the peak (KEYS[4]) in the same atomic step, unless the guests fill their cap
# or RECORD saw a flood within the window (such counts say nothing about people), so two servers that read at once
# can never lower it (no read-then-write race). The peak outlives any window but
# still expires a year after the last count. pcall: a replica (READONLY) or a
# full Redis (OOM) still answers with its counts.
_COUNT_AND_RAISE_PEAK = """
local function count_and_raise_peak(cap)
  local users = redis.call('ZCOUNT', KEYS[1], ARGV[1], '+inf')
  local hidden = redis.call('ZCOUNT', KEYS[2], ARGV[1], '+inf')
  local guests = redis.call('ZCOUNT', KEYS[3], ARGV[1], '+inf')
  if ARGV[3] == '0' then return {users, hidden, guests, false, false} end
  local total = users + hidden + guests
  local best = tonumber(redis.call('HGET', KEYS[4], 'count') or '0')
  local flood_until = tonumber(redis.call('HGET', KEYS[4], 'flood_until') or '0')
  if total > best and guests < cap and flood_until < tonumber(ARGV[2]) then
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

# {users, hidden, guests, peak count, peak time}; what prune samples. ARGV[4]: the guest cap.
COUNT_AND_RAISE_PEAK = _COUNT_AND_RAISE_PEAK + "return count_and_raise_peak(tonumber(ARGV[4]))\n"

# What the block shows, in one call (so one round trip, also on Redis Cluster,
# whose pipelines cannot carry a script): the ARGV[4] newest listed members
# with their scores (ARGV[4] = -1: all), and the hidden ones too when ARGV[5]
# is '1' (for staff, merged by the caller), each list followed by its cards
# from KEYS[5]; then the counts and peak of count_and_raise_peak(ARGV[6]).
SUMMARY = (
    _COUNT_AND_RAISE_PEAK
    + """
local function newest(key)
  return redis.call('ZRANGE', key, '+inf', ARGV[1], 'BYSCORE', 'REV', 'LIMIT', 0, ARGV[4],
                    'WITHSCORES')
end
local function cards(pairs)
  local found = {}
  for i = 1, #pairs, 2 do
    found[#found + 1] = redis.call('HGET', KEYS[5], pairs[i])
  end
  return found
end
local listed = newest(KEYS[1])
local hidden = {}
if ARGV[5] == '1' then hidden = newest(KEYS[2]) end
local result = {listed, cards(listed), hidden, cards(hidden)}
for _, value in ipairs(count_and_raise_peak(tonumber(ARGV[6]))) do table.insert(result, value) end
return result
"""
)
