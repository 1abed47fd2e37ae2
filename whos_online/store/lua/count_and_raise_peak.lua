-- The counts and the peak, raised if they beat it: what prune samples, and
-- what the Python API's counts read.
--
-- KEYS[1]    users      KEYS[2]  hidden     KEYS[3]  guests
-- KEYS[4]    peak       KEYS[5]  cards (not read: the namespace's keys come whole)
-- KEYS[6]    live: pk -> newest heartbeat      KEYS[7]  left: pk -> last closed
-- KEYS[8..]  the window's guest HyperLogLogs, if guests are counted approximately
-- ARGV[1]    the window's start
-- ARGV[2]    now
-- ARGV[3]    the peak's TTL (0: keep no peak)
-- ARGV[4]    the guest cap (0: none)
-- Returns {users, hidden, guests, peak count, peak time}.
--@include lib/count_and_raise_peak.lua
--@include lib/kept.lua
local function count_kept(set)
  return kept_below(kept(set, KEYS[6], KEYS[7], ARGV[1]), tonumber(ARGV[1]))
end
local function union() return redis.call('PFCOUNT', unpack(KEYS, 8)) end
return count_and_raise_peak(#KEYS > 7 and union or nil, tonumber(ARGV[4]),
                            count_kept(KEYS[1]), count_kept(KEYS[2]))
