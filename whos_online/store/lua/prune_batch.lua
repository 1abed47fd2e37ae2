-- Removes at most ARGV[2] of the oldest members scored below ARGV[1] from a
-- sorted set, and their cards, passing over those a socket sign at or after
-- ARGV[1] keeps (see lib/kept.lua). One call is atomic, so a member re-recorded
-- meanwhile (now the newest) is never among the removed, and it is short, so
-- Redis keeps serving the site between calls.
--
-- KEYS[1]  the sorted set
-- KEYS[2]  the cards hash (KEYS[1] itself for a set without cards)
-- KEYS[3]  live: pk -> newest heartbeat      KEYS[4]  left: pk -> last closed
--          (KEYS[1] itself, both, for a set of guests)
-- ARGV[1]  the score bound
-- ARGV[2]  the most to remove
-- Returns how many were removed.
--@include lib/kept.lua
--@include lib/stale.lua
local pks = stale(KEYS[1], KEYS[3], KEYS[4], ARGV[1], tonumber(ARGV[2]))
drop(KEYS[1], pks, KEYS[2])
return #pks
