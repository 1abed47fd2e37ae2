-- The counts, and the site's peak raised if they beat it (see lib/counts.lua):
-- what prune samples (the one call that raises the peak and drops the aged
-- socket signs, see lib/kept.lua), and what the Python API's counts read.
--
-- KEYS[1]    users      KEYS[2]  hidden     KEYS[3]  guests
-- KEYS[4]    peak       KEYS[5]  cards (not read: the namespace's keys come whole)
-- KEYS[6]    live: pk -> alive until      KEYS[7]  left: pk -> last closed
-- KEYS[8]    kept users      KEYS[9]  kept hidden: the indexes of lib/kept.lua
-- KEYS[10..] the window's guest HyperLogLogs, if guests are counted approximately
-- ARGV[1]    the window's start
-- ARGV[2]    now
-- ARGV[3]    the peak's TTL (0: keep no peak): it outlives any window, and still
--            expires a year after the last count
-- ARGV[4]    the guest cap (0: none)
-- Returns {users, hidden, guests, peak count, peak time}.
--
-- Raised in the count's atomic step, so two calls at once never lower it. Without
-- a TTL it writes nothing: the caller runs it read-only.
--@include lib/counts.lua
--@include lib/kept.lua
local still = aged(KEYS[6], KEYS[7], KEYS[8], KEYS[9], ARGV[1], ARGV[3] ~= '0')
local approximate = #KEYS > 9
local counted = inside(KEYS, ARGV[1], {unpack(KEYS, 10)})
local users = counted[1] + kept_below(KEYS[8], still, ARGV[1])
local hidden, guests = counted[2] + kept_below(KEYS[9], still, ARGV[1]), counted[3]
if ARGV[3] == '0' then return {users, hidden, guests, false, false} end
local total = users + hidden + guests
local count, at, beaten = peak_with(KEYS, counted, ARGV[2], total, guests, tonumber(ARGV[4]),
                                    approximate)
if beaten then
  -- The peak from before this window is kept aside, for a flood to fall back on.
  local last = redis.call('HMGET', KEYS[4], 'count', 'at')
  if last[2] and tonumber(last[2]) < tonumber(ARGV[1]) then
    redis.call('HSET', KEYS[4], 'before', last[1], 'before_at', last[2])
  end
  redis.call('HSET', KEYS[4], 'count', count, 'at', at)
end
if count then redis.call('EXPIRE', KEYS[4], ARGV[3]) end
return {users, hidden, guests, count, at}
