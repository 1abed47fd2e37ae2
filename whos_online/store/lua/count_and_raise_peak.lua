-- The counts and the peak, raised if they beat it: what prune samples, and
-- what the Python API's counts read.
--
-- KEYS[1]    users      KEYS[2]  hidden     KEYS[3]  guests
-- KEYS[4]    peak       KEYS[5]  cards (not read: the namespace's keys come whole)
-- KEYS[6]    live: pk -> newest heartbeat      KEYS[7]  left: pk -> last closed
-- KEYS[8]    kept users      KEYS[9]  kept hidden: the indexes of lib/kept.lua
-- KEYS[10..] the window's guest HyperLogLogs, if guests are counted approximately
-- ARGV[1]    the window's start
-- ARGV[2]    now
-- ARGV[3]    the peak's TTL (0: keep no peak)
-- ARGV[4]    the guest cap (0: none)
-- Returns {users, hidden, guests, peak count, peak time}.
--@include lib/count_and_raise_peak.lua
--@include lib/kept.lua
local still = aged(KEYS[6], KEYS[7], KEYS[8], KEYS[9], ARGV[1])
local function union() return redis.call('PFCOUNT', unpack(KEYS, 10)) end
return count_and_raise_peak(#KEYS > 9 and union or nil, tonumber(ARGV[4]),
                            kept_below(KEYS[8], still, ARGV[1]), kept_below(KEYS[9], still, ARGV[1]))
