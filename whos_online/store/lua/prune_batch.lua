-- Removes the stale among at most ARGV[2] of the oldest members scored below
-- ARGV[1] of a sorted set, read from the rank ARGV[3] on, and their cards: those
-- no socket sign at or after ARGV[1] keeps (see lib/kept.lua; the caller reads on
-- past them). Atomic, so a member re-recorded meanwhile is never removed, and
-- short, so Redis keeps serving the site between calls.
--
-- KEYS[1]  the sorted set
-- KEYS[2]  the cards hash (KEYS[1] itself for a set without cards)
-- KEYS[3]  live: pk -> alive until      KEYS[4]  left: pk -> last closed
-- KEYS[5]  the set's index of members a socket keeps (see lib/kept.lua)
--          (KEYS[1] itself, all three, for a set of guests)
-- ARGV[1]  the score bound
-- ARGV[2]  the most to read
-- ARGV[3]  the rank to read from: how many the calls before passed over
-- Returns {how many were removed, how many were passed over, 1 if members below
-- the bound remain past those read else 0}.
--@include lib/kept.lua
--@include lib/stale.lua
local pks, read, more = stale(KEYS[1], KEYS[3], KEYS[4], ARGV[1], tonumber(ARGV[3]),
                              tonumber(ARGV[2]))
drop(KEYS[1], pks, KEYS[2], KEYS[5])
return {#pks, read - #pks, more and 1 or 0}
