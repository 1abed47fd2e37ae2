"""The Lua scripts whos_online runs in Redis, where a step must be atomic.

Each names every key it touches in KEYS, so it runs on Redis Cluster as long as
those keys share a hash slot (one namespace: see WHOS_ONLINE_KEY_PREFIX).
"""

# Removes at most ARGV[2] of the oldest members scored below ARGV[1]. One call
# is atomic, so a member re-recorded meanwhile (now the newest) is never among
# the removed, and it is short, so Redis keeps serving the site between calls.
PRUNE_BATCH = """
local stale = redis.call('ZCOUNT', KEYS[1], '-inf', ARGV[1])
local n = math.min(stale, tonumber(ARGV[2]))
if n > 0 then redis.call('ZREMRANGEBYRANK', KEYS[1], 0, n - 1) end
return n
"""


# Counts a namespace's three sets and, when ARGV[3] (the peak's TTL) is not 0,
# raises the peak in the same atomic step, so two servers that read at once can
# never lower it (no read-then-write race). The peak key outlives any window
# but still expires a year after the last count.
COUNT_AND_RAISE_PEAK = """
local users = redis.call('ZCOUNT', KEYS[1], ARGV[1], '+inf')
local hidden = redis.call('ZCOUNT', KEYS[2], ARGV[1], '+inf')
local guests = redis.call('ZCOUNT', KEYS[3], ARGV[1], '+inf')
if ARGV[3] == '0' then return {users, hidden, guests} end
local total = users + hidden + guests
local best = tonumber(redis.call('HGET', KEYS[4], 'count') or '0')
-- pcall: a replica (READONLY) or a full Redis (OOM) still gets its counts.
if total > best then
  redis.pcall('HSET', KEYS[4], 'count', total, 'at', ARGV[2])
end
if total > 0 or best > 0 then redis.pcall('EXPIRE', KEYS[4], ARGV[3]) end
local peak = redis.call('HMGET', KEYS[4], 'count', 'at')
return {users, hidden, guests, peak[1], peak[2]}
"""


# Drops the oldest members beyond ARGV[1], at most ARGV[2] of them: the guest
# cap's trim runs inside a request, so it must stay short even when the set is
# far over the cap (say after the cap was lowered); the next writes do the rest.
TRIM_OLDEST = """
local excess = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[1])
if excess <= 0 then return 0 end
local n = math.min(excess, tonumber(ARGV[2]))
redis.call('ZREMRANGEBYRANK', KEYS[1], 0, n - 1)
return n
"""
