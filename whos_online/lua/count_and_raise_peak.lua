-- The counts and the peak, raised if they beat it: what prune samples.
--
-- KEYS[1]    users      KEYS[2]  hidden     KEYS[3]  guests
-- KEYS[4]    peak       KEYS[5]  cards (not read: the namespace's keys come whole)
-- KEYS[6..]  the window's guest HyperLogLogs, if guests are counted approximately
-- ARGV[1]    the window's start
-- ARGV[2]    now
-- ARGV[3]    the peak's TTL (0: keep no peak)
-- ARGV[4]    the guest cap (0: none)
-- Returns {users, hidden, guests, peak count, peak time}.
--@include lib/count_and_raise_peak.lua
local function union() return redis.call('PFCOUNT', unpack(KEYS, 6)) end
return count_and_raise_peak(#KEYS > 5 and union or nil, tonumber(ARGV[4]))
