-- count_and_raise_peak(count_guests, cap, kept_users, kept_hidden) counts a
-- namespace's three sets (KEYS[1..3]: users, hidden, guests) inside the window
-- (from ARGV[1]; plus the members a socket keeps inside, see kept.lua) and, when
-- ARGV[3] (the peak's TTL) is not 0, raises the peak (KEYS[4]) in the same atomic
-- step, so two servers that read at once can never lower it (no read-then-write
-- race); unless the guests fill their cap ``cap`` (0: none, as in approximate
-- mode) or record.lua saw a flood within the window: such counts say nothing
-- about people. ARGV[2] is now. The peak outlives any window but still expires a
-- year after the last count. pcall: a replica (READONLY) or a full Redis (OOM)
-- still answers with its counts. With approximate guest counting, the function
-- count_guests() passed in counts the guests instead.
-- Returns {users, hidden, guests, peak count, peak time}.
local function count_and_raise_peak(count_guests, cap, kept_users, kept_hidden)
  local users = redis.call('ZCOUNT', KEYS[1], ARGV[1], '+inf') + kept_users
  local hidden = redis.call('ZCOUNT', KEYS[2], ARGV[1], '+inf') + kept_hidden
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
